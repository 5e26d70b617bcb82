"""The Check and play section through AppTest: the MLX cross-check page and the Playground page."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
import streamlit as st
from apptest import (
    app,
    button,
    code_blocks,
    node_states,
    open_link,
    playground_error,
    run_code,
    stage_data,
    stages,
    table,
)

from autodiff import Device, Distribution, Tensor
from autodiff.device import mlx_unavailable_reason
from course.labs import cross_checked_program
from course.programs import PROGRAMS
from playground import SECONDS_ENV
from playground.examples import EXAMPLES
from playground.reference import SHAPE_EXAMPLES
from ui.state import shared_result


def output(at) -> str:
    """The Playground's output block (the reference panel above it holds code blocks of its own)."""
    return next(block for block in code_blocks(at) if block not in SHAPE_EXAMPLES.values())


def test_check_against_mlx_page_for_every_program():
    at = app("pages/check_and_play/check_mlx.py")
    if mlx_unavailable_reason():
        assert "needs MLX" in at.error[0].value
        return
    for key in PROGRAMS:
        at.selectbox(key="check_program").set_value(key).run()
        assert "agree" in at.success[0].value
        frame = table(at, "Node")
        result = shared_result(cross_checked_program, key, "numpy").check  # what every session is shown
        assert len(frame) == len(result.nodes)
        assert set(frame["End to end"]) == {"✓ agrees"}
        states = set(node_states(stage_data(at, "static")).values())
        assert "agrees" in states and "differs" not in states


@pytest.fixture
def fresh_shared_results():
    """The server's shared lesson results computed afresh in the test, and dropped after it (a planted bug's)."""
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_check_page_flags_a_planted_bug(monkeypatch, fresh_shared_results):
    if mlx_unavailable_reason():
        pytest.skip("MLX is not available here")
    from autodiff.graph import Op, Rule
    from autodiff.ops import elementwise

    wrong_tanh = Op("tanh", lambda x: x.tanh(), (Rule("bug", lambda g, s: g * (1.0 - s["y"]), ("y",)),))
    monkeypatch.setattr(elementwise, "TANH", wrong_tanh)
    at = app("pages/check_and_play/check_mlx.py")
    at.selectbox(key="check_program").set_value("neuron").run()
    assert "out (NodeId(" in at.error[0].value
    frame = table(at, "Node")
    flagged = frame[frame["Local rule"] == "✗ differs"]["Node"].tolist()
    assert len(flagged) == 1 and flagged[0].startswith("out ")


SEED = Path(__file__).resolve().parents[3] / "shared" / "seed" / "burn-autodiff-notes.txt"  # beside the clone


@pytest.mark.skipif(not SEED.exists(), reason="the seed's notes are not on this machine")
def test_playground_prints_float32_as_the_seed_does():
    """The seed's shared-subgraph lines, printed by the Playground: the same digits (shortest float32 form)."""
    seed = dict(re.findall(r"^(l1(?:\+l2)? -> x\.grad =) Some\((\[.*\])\)$", SEED.read_text(), re.MULTILINE))
    assert seed == {"l1 -> x.grad =": "[5.4365635, 14.778112]", "l1+l2 -> x.grad =": "[13.591409, 36.945282]"}
    at = run_code(app("pages/check_and_play/playground.py"), EXAMPLES["Seed: shared subgraph"])
    printed = output(at).splitlines()
    for label, values in seed.items():
        assert f"{label} Tensor({values})" in printed, printed


def test_playground_runs_typed_code_and_shows_output_graph_and_replay():
    at = app("pages/check_and_play/playground.py")
    run_code(
        at,
        "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\ny = (x * x).sum()\ng = y.backward()\n"
        "print(x.grad(g))\n",
    )
    assert output(at) == "Tensor([2.0, 4.0])"
    assert [data["mode"] for data in stages(at)] == ["replay"]  # its graph once: the replay's
    events = at.session_state["playground_result"].backward.recorder.events
    assert len(stage_data(at)["events"]) == len(events)


def test_playground_error_points_at_the_line_and_keeps_the_text():
    at = app("pages/check_and_play/playground.py")
    code = "x = Tensor.ones([2], ad)\nimport os\n"
    run_code(at, code)
    assert "Line 2, column 1" in playground_error(at) and "os reaches the server's files" in playground_error(at)
    assert at.text_area(key="playground_editor").value == code
    from playground.share import decode

    assert (
        decode(at.query_params["code"][0] if isinstance(at.query_params["code"], list) else at.query_params["code"])
        == code
    )


def test_playground_examples_menu_and_loop_memory_chart():
    at = app("pages/check_and_play/playground.py")
    at.selectbox(key="playground_example").set_value("Seed: memory growth").run()
    assert "for i in range(10)" in at.text_area(key="playground_editor").value
    button(at, "Run").click().run()
    assert not at.error and len(at.get("vega_lite_chart")) == 2


def test_playground_link_restores_the_program():
    from playground.share import encode

    code = 'print("shared", 1 + 2)\n'
    at = open_link("pages/check_and_play/playground.py", code=encode(code))
    assert at.text_area(key="playground_editor").value == code
    button(at, "Run").click().run()
    assert output(at) == "shared 3"


def test_playground_broken_link_is_explained():
    at = open_link("pages/check_and_play/playground.py", code="not-a-program!!")
    assert "does not hold a Playground program" in at.error[0].value
    assert not at.exception


def test_playground_sessions_are_isolated():
    a, b = app("pages/check_and_play/playground.py"), app("pages/check_and_play/playground.py")
    run_code(a, "secret = Tensor.from_floats([42.0], ad)\nprint(secret)\n")
    run_code(b, "print(secret)\n")
    assert "name 'secret' is not defined" in playground_error(b)
    assert output(a) == "Tensor([42.0])"


def test_playground_exercise_link_opens_in_exercise_mode():
    from playground.share import encode

    code = encode("x = Tensor.from_floats([2.0], ad).require_grad()\ng = (x * x).sum().backward()\n")
    at = open_link("pages/check_and_play/playground.py", code=code, exercise="1")
    assert at.toggle(key="playground_exercise").value is True
    button(at, "Run").click().run()
    data = stage_data(at)
    assert data["exercise"] is True  # the stage asks each step (tests/browser plays it)
    mul = next(e for e in data["events"] if e["kind"] == "StepStarted" and e["op"] == "mul")
    sends = [e["numbers"] for e in data["events"] if e["kind"] == "GradientRegistered" and e["source"] == mul["node"]]
    assert sends == [[2.0], [2.0]]  # d(x·x)/dx = x for each operand, x = 2, upstream 1
    assert [line for line in data["program"]["lines"] if line]  # the program beside the graph, its lines lit


def test_playground_shows_typed_text_as_text():
    at = app("pages/check_and_play/playground.py")
    hostile = "[Session expired: log in again](https://evil.example/login) ![](https://evil.example/p.png)"
    run_code(at, f'print("<b>bold</b> \\ud800")\nn = int("{hostile}")\n')
    assert not at.exception
    assert output(at) == "<b>bold</b> \ufffd"  # output: a code block, a lone surrogate replaced
    alert = next(e.proto.body for e in at.get("html") if "playground-error" in e.proto.body)
    assert "<a" not in alert and "<img" not in alert and "&lt;b&gt;" not in alert  # escaped text, nothing more
    assert hostile in playground_error(at)


def test_playground_link_longer_than_the_program_limit_is_refused_not_cut():
    from playground.share import encode

    at = open_link("pages/check_and_play/playground.py", code=encode("x = 1\n" * 700))  # 4,200 characters
    assert "4,200 characters long" in at.error[0].value and "not loaded" in at.error[0].value
    assert at.text_area(key="playground_editor").value != "x = 1\n" * 700


@pytest.mark.parametrize(
    ("chosen", "seconds", "told"),
    [("", "5 s", False), ("30", "30 s", False), ("0.5", "5 s", True), ("many", "5 s", True), ("61", "5 s", True)],
)
def test_a_server_s_run_time_is_its_operator_s_from_1_to_60_seconds(monkeypatch, chosen, seconds, told):
    monkeypatch.setenv(SECONDS_ENV, chosen)
    at = open_link("pages/check_and_play/playground.py")
    limits = at.table[0].value
    assert limits.loc[limits["Limit"] == "Time", "Value"].tolist() == [seconds]  # the limit the runs get, shown
    warned = [w.value for w in at.warning if SECONDS_ENV in w.value]
    assert bool(warned) == told and all("not 1 to 60 seconds: a run may take 5 s" in w for w in warned)
    at = run_code(at, "print(1 + 1)")  # and a run gets it
    assert not at.exception and output(at).splitlines() == ["2"]


def test_a_rerun_never_pushes_the_program_over_what_the_student_is_typing():
    """A value the script sets for a widget replaces, in the browser, what is typed there and not yet sent (the
    proto's `set_value`). A rerun that changes no program (here Run, as a stage's report or any other rerun would)
    must leave the editor alone; an example chosen must fill it."""
    at = app("pages/check_and_play/playground.py")
    editor = lambda: at.text_area(key="playground_editor")  # noqa: E731
    run_code(at, 'print("typed")\n')
    assert not editor().proto.set_value and editor().value == 'print("typed")\n'
    at.selectbox(key="playground_example").set_value("Seed: memory growth").run()
    assert editor().proto.set_value and "for i in range(10)" in editor().value
    button(at, "Run").click().run()
    assert not editor().proto.set_value


@pytest.mark.parametrize(
    ("example", "printed"),
    [
        ("micrograd's README example", ["24.7041", "138.8338", "645.5773"]),  # micrograd's README, its comments
        ("CS231n's neuron, with w[0]", ["w.grad = [-0.1966, -0.3932, 0.1966]", "x.grad = [0.3932, -0.5898]"]),
        ("micrograd's MLP, with classes", None),  # what CPython prints running the same source on the engine
        ("Gradient descent until the loss is small (while)", None),
    ],
)
def test_programs_from_elsewhere_run_in_the_page_with_their_published_numbers(example, printed):
    at = app("pages/check_and_play/playground.py")
    at.selectbox(key="playground_example").set_value(example).run()
    button(at, "Run").click().run()
    assert not at.exception and not playground_error(at)
    if printed is None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(EXAMPLES[example], {"Tensor": Tensor, "Distribution": Distribution, "ad": Device.numpy().autodiff()})
        printed = out.getvalue().splitlines()
    assert output(at).splitlines() == printed
    assert stages(at)  # its graph and the replay of its backward are on the page
