"""Words a student reads, through the app: nodes by the names the stage gives them (never `NodeId(5)` alone), a
refusal said once, the server and retain_graph explained where they first appear, the Playground's code spans, and
the grad_replace box's label."""

from __future__ import annotations

import html
import re

from apptest import app, button, playground_error, run_code, table
from test_memory_timeline import bands, timelines

from ui.run_view import with_code_spans


def test_memory_policies_table_names_the_node_where_the_second_backward_is_refused():
    at = app("pages/memory/memory_policies.py")
    at.select_slider(key="policies_size").set_value(64).run()
    comparison = table(at, "Program")
    for policy in ("Burn (lazy sweep)", "PyTorch"):
        assert comparison[policy].tolist() == [
            "second backward refused at loss: its step already ran",
            "second backward refused at shared: its step already ran",
        ]
    lazy, eager = timelines(at)  # the timelines' bands name nodes as the stage does: `exp(x)·x`, never `NodeId(2)`
    for body in (lazy, eager):
        words = bands(body, "activation")
        assert "exp(x)·x (mul) output" not in words[0]  # an expression says its op itself
        assert any("exp(x) output, saved by exp(x)·x for backward" in w for w in words), words[:2]
        assert any("exp(x)·x output, saved by (exp(x)·x) @ x for backward" in w for w in words), words[:2]
        assert "NodeId(" not in html.unescape(body)
    assert ": x: a parameter (a leaf marked with require_grad), saved by exp(x)" in bands(lazy, "parameter")[0]


def test_checkpointing_timeline_names_the_programs_variables():
    at = app("pages/memory/checkpointing.py")  # the elementwise chain: y = w @ x, then tanh(y·0.5)·y, ...
    words = [w for body in timelines(at) for w in bands(body, "activation")]
    assert any(": y (matmul) output, saved by tanh(y·0.5)·y" in w for w in words), words  # a variable says its op
    assert any(": tanh(y·0.5) output, saved by tanh(y·0.5)·y for backward" in w for w in words), words
    assert not any("NodeId(" in w for w in words)


def test_tape_consumption_says_a_refusal_once_and_explains_server_and_retain_graph():
    at = app("pages/backward/tape_consumption.py")
    intro = at.markdown[0].value
    assert "The server is the part of the engine that keeps the tape" in intro
    assert "`loss.backward(retain_graph=True)` keeps every step and its saved tensors" in intro
    assert intro.index("The server is") < intro.index("Burn has no `retain_graph`")  # said where the words first appear
    button(at, "loss.backward()").click().run()
    button(at, "loss.backward()").click().run()
    refusal = at.error[0].value
    assert refusal.startswith("`loss.backward()` was refused.")
    assert "loss's own step was already run by an earlier backward" in refusal
    assert "Burn has no such option" in refusal and "`retain_graph=True`" in refusal
    assert "Cannot run backward" not in refusal and "Why:" not in refusal and ">" not in refusal  # the engine's words
    assert refusal.count("retain_graph") == 1  # said once


def test_grad_replace_box_has_a_visible_label():
    at = app("pages/backward/gradient_consumption.py")
    box = at.text_input[0]
    assert box.label == "New gradient for `grad_replace()`: numbers separated by commas"
    assert box.proto.label_visibility.value == box.proto.label_visibility.VISIBLE
    assert "as many as x has values" in box.help


def test_playground_error_shows_code_spans_as_code():
    at = app("pages/check_and_play/playground.py")
    run_code(at, "import os\n")
    alert = next(e.proto.body for e in at.get("html") if "playground-error" in e.proto.body)
    assert re.search(r"<code [^>]*>os</code> reaches the server", alert)
    assert "`" not in playground_error(at) and "os reaches the server's files" in playground_error(at)


def test_playground_error_quoting_hostile_text_interprets_nothing_but_code_spans():
    at = app("pages/check_and_play/playground.py")
    hostile = "**x** <script>alert(1)</script> [a](http://b) `<img src=x>`"
    run_code(at, f"n = int({hostile!r})\n")
    alert = next(e.proto.body for e in at.get("html") if "playground-error" in e.proto.body)
    assert "<script" not in alert and "<img" not in alert and "<a" not in alert and "<strong" not in alert
    assert "**x** &lt;script&gt;alert(1)&lt;/script&gt; [a](http://b)" in alert
    assert re.search(r"<code [^>]*>&lt;img src=x&gt;</code>", alert)


def test_code_spans_helper_escapes_everything_outside_and_inside_the_spans():
    assert with_code_spans("**x** __y__ # z") == "**x** __y__ # z"  # markdown means nothing here
    assert with_code_spans("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert with_code_spans("[a](http://b) ![](http://c)") == "[a](http://b) ![](http://c)"
    spans = with_code_spans("like `x = <b>` and `del loss`, not a`b")
    assert re.fullmatch(r"like <code [^>]*>x = &lt;b&gt;</code> and <code [^>]*>del loss</code>, not a`b", spans)
    assert with_code_spans("``") == "``" and with_code_spans("`a\nb`") == "`a\nb`"  # no empty or multi-line span
    assert with_code_spans('`" onmouseover="x`').count("&quot;") == 2  # quotes escaped inside a span too
