"""One story on every page (issue 26): a leaf backward never reached reads "no gradient" on the graph wherever the
table beside it says `None`; the app speaks Python (`x.grad(grads)` -> `[5.0, 7.0]`); names, not ids."""

from __future__ import annotations

import re

import pytest
from apptest import app, button, stages, table

from course.programs import PROGRAMS
from ui.navigation import LESSONS


def node_by_title(data: dict, title: str) -> dict:
    return next(node for node in data["nodes"] if node["title"] == title)


@pytest.mark.parametrize("page", ["pages/backward/gradient_consumption.py", "pages/check_and_play/check_mlx.py"])
def test_a_leaf_backward_never_reached_has_no_gradient_on_the_graph(page):
    at = app(page)
    data = next(d for d in stages(at) if d["mode"] == "static")
    unused = node_by_title(data, "unused")
    assert unused["state"] == "unreached" and "no gradient" in unused["grad"]
    assert "keeps" not in unused["grad"] and "kept" not in unused["grad"]
    x = node_by_title(data, "x")
    assert x["grad"] in ("grad [5.0, 7.0] · kept", "agrees with MLX")  # the container's entry, or the verdict on it


def test_tape_consumption_agrees_after_a_backward():
    at = app("pages/backward/tape_consumption.py")
    button(at, "loss.backward()").click().run()
    data = next(d for d in stages(at) if d["mode"] == "static")
    assert node_by_title(data, "unused")["state"] == "unreached"
    assert node_by_title(data, "x")["grad"] == "grad [5.0, 7.0] · kept"


def test_a_removed_entry_is_not_called_kept():
    at = app("pages/backward/gradient_consumption.py")
    at.radio(key="consumption_tensor").set_value("x").run()
    button(at, "grad_remove()").click().run()
    data = next(d for d in stages(at) if d["mode"] == "static")
    assert "removed" in node_by_title(data, "x")["grad"]


RUST = re.compile(r"Some\(|&grads|&mut ")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path or "home")
def test_pages_speak_python_not_rust(lesson):
    at = app(lesson.path)
    texts = [m.value for m in at.markdown] + [e.value for e in at.success] + [e.value for e in at.info]
    texts += [str(v) for frame in at.table for v in frame.value.to_numpy().ravel()]
    for text in texts:
        assert not RUST.search(text), (lesson.url_path, text)
    notes = [c.value for c in at.caption if "Some(" in c.value]
    assert all("Rust" in note for note in notes)  # the seed's own output, quoted once with what it means


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_the_traversal_stage_names_every_node(key):
    at = app("pages/backward/backward_traversal.py")
    at.selectbox(key="traversal_program_widget").set_value(key).run()
    data = next(d for d in stages(at) if d["mode"] == "replay")
    for node in data["nodes"]:
        assert not re.search(r"#\d|from_inner", node["title"]), node
    for event in data["events"]:
        assert "NodeId(" not in event["text"], event["text"]


def test_tape_consumption_keeps_names_after_any_number_of_backwards():
    at = app("pages/backward/tape_consumption.py")
    for name in ("loss.backward()", "l1.backward()", "l2.backward()", "l3.backward()", "loss.backward()"):
        button(at, name).click().run()
    titles = [node["title"] for data in stages(at) for node in data["nodes"]]
    assert "loss = sum(h + x·3)" in titles and "l1 = sum(shared·2)" in titles
    assert not [t for t in titles if re.search(r"#\d|from_inner", t)], titles


def test_the_tape_table_names_each_step_as_the_graph_does():
    at = app("pages/backward/backward_traversal.py")
    tape = table(at, "Order")
    cells = " ".join(tape["Steps (in tape order)"])
    assert "h + x·3" in cells and "x·3" in cells and "loss" in cells
    assert not re.search(r"(^|, )NodeId\(\d+\)", cells)  # never an id alone where a name can be derived


def test_a_playground_loop_names_every_binding_of_a_variable():
    from playground.examples import EXAMPLES

    at = app("pages/check_and_play/playground.py")
    at.selectbox(key="playground_example").set_value("Gradient descent").run()
    button(at, "Run").click().run()
    titles = [node["title"] for data in stages(at) for node in data["nodes"]]
    assert titles and not [t for t in titles if "from_inner" in t or re.search(r"#\d", t)], titles
    assert "loss = sum((w − 3)²)" in titles
    assert "Gradient descent" in EXAMPLES


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path or "home")
def test_no_lesson_graph_has_an_id_for_a_name(lesson):
    at = app(lesson.path)
    for data in stages(at):
        for node in data["nodes"]:
            assert not re.search(r"#\d|from_inner", node["title"]), (lesson.url_path, node["title"])
