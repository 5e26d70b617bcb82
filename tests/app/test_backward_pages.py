"""The Backward section through AppTest: traversal replay, gradient and tape consumption, exercises."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from apptest import app, button, node_states, open_link, stage_data, table
from streamlit.testing.v1 import AppTest

from autodiff.printing import format_float
from autodiff.trace import GradientRegistered
from course.programs import PROGRAMS, record_program


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_the_stage_gets_the_laid_out_graph_and_every_event(key):
    at = app("pages/backward/backward_traversal.py")
    at.selectbox(key="traversal_program_widget").set_value(key).run()
    run = at.session_state["traversal_run"]
    data = stage_data(at)
    events = run.recorder.events
    assert [e["kind"] for e in data["events"]] == [type(e).__name__ for e in events]
    drawn = {node["element"] for node in data["nodes"]}
    for node in run.before.nodes:  # every node is in the picture, under the id the player looks for
        assert f"n{int(node.id)}" in drawn
    # each registration carries the entry's total as the container table shows it, from an independent run
    fresh = record_program(key)
    for record, event in zip(data["events"], fresh.recorder.events, strict=True):
        if record["kind"] == "GradientRegistered":
            shown = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", record["total_full"].split("(")[0])]
            np.testing.assert_allclose(shown, np.ravel(event.total)[: len(shown)], rtol=1e-3, atol=1e-4)
    leaves = {int(t.node_id) for t in fresh.tensors.values() if t.is_require_grad}
    assert {node["id"] for node in data["nodes"] if node["grad_kind"] == "leaf"} == leaves
    assert data["index"] == 0 and data["graphviz_url"].startswith("app/static/")


def test_query_params_round_trip():
    at = open_link("pages/backward/backward_traversal.py", program="neuron", event="8")
    assert at.selectbox(key="traversal_program_widget").value == "neuron"
    assert at.session_state["replay_index"] == 7  # events are counted from 1 in the link, as on the page
    assert stage_data(at)["index"] == 7  # the stage opens there
    assert at.query_params["event"] in (["8"], "8") and at.query_params["program"] in ("neuron", ["neuron"])


def test_downloads_offer_the_replay_and_the_trace_and_the_stage_its_dot_named_after_the_program():
    at = open_link("pages/backward/backward_traversal.py", program="neuron")
    labels = [d.proto.label for d in at.get("download_button")]
    # the graph's DOT is the stage's own button: the DOT of the picture it draws (tests/browser/test_stage_view.py)
    assert labels == ["Download this replay (HTML)", "Download the event trace (JSON)"]
    assert stage_data(at)["file_stem"] == "neuron"


def test_gradient_consumption_controls():
    at = app("pages/backward/gradient_consumption.py")
    lab = at.session_state["consumption_lab"]
    assert table(at, "Node")["Gradient"].tolist() == ["[5.0, 7.0]"]  # a fresh backward: x's entry is there
    at.radio(key="consumption_tensor").set_value("x").run()
    button(at, "grad()").click().run()
    assert "→ `[5.0, 7.0]`" in at.success[0].value  # the sandbox does not inherit the table's grad_remove
    at.text_input[0].set_value("2.5, -1").run()
    button(at, "grad_replace()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    frame = table(at, "Node")
    assert frame["Gradient"].tolist() == ["[2.5, -1.0]"] and frame["Shape"].tolist() == ["[2]"]
    assert frame["Why it is there"].tolist() == ["put in with grad_replace"]
    button(at, "grad_remove()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    at.radio(key="consumption_tensor").set_value("h").run()
    button(at, "grad()").click().run()
    assert "GradInBackward" in at.success[0].value
    at.text_input[0].set_value("9, 9").run()
    button(at, "grad_replace()").click().run()
    why = table(at, "Node").set_index("Node")["Why it is there"]
    assert why["h (NodeId(2))"] == "put in with grad_replace; no step is left to consume it"  # backward has finished
    assert not any("awaiting" in cell for cell in why)
    at.text_input[0].set_value("one, two").run()
    button(at, "grad_replace()").click().run()
    assert "numbers separated by commas" in at.error[0].value
    at.text_input[0].set_value("1, 2, 3").run()
    button(at, "grad_replace()").click().run()
    assert "shape" in at.error[0].value
    assert len(lab.log) == 6 and not at.exception


def test_tape_consumption_refusals_match_the_seed():
    at = app("pages/backward/tape_consumption.py")
    button(at, "loss.backward()").click().run()
    assert "`x.grad(grads)` → `[5.0, 7.0]`" in at.success[0].value
    button(at, "loss.backward()").click().run()
    assert "retain_graph" in at.error[0].value
    assert "loss's own step was already run" in at.error[0].value  # not "the path from loss passes through loss"
    assert node_states(stage_data(at, "static"))[5] == "refused"  # the consumed loss, marked where it was refused
    button(at, "l1.backward()").click().run()
    assert "[5.4365635, 14.778112]" in at.success[0].value
    button(at, "l2.backward()").click().run()
    assert "passes through shared" in at.error[0].value
    button(at, "l3.backward()").click().run()
    assert "[4.0, 4.0]" in at.success[0].value
    button(at, "(l1 + l2).backward()").click().run()
    assert "The path from l1 + l2 to x passes through" in at.error[0].value  # l1 and l2 share consumed steps
    assert "`l3.backward()`" in replay_heading(at)  # the last backward that ran, said so after a refusal
    assert "refused backward after it changed nothing" in replay_heading(at)
    button(at, "(shared.detach() * x).sum().backward()").click().run()
    assert "[2.7182817, 7.389056]" in at.success[0].value
    assert replay_heading(at) == "`(shared.detach() * x).sum().backward()`"  # the heading follows the state
    assert not any("l3" in h.value for h in at.subheader)
    assert len(at.session_state["tape_lab"].log) == 7
    button(at, "Start over").click().run()
    assert "tape_lab" in at.session_state and not at.session_state["tape_lab"].log


def replay_heading(at) -> str:
    """What the tape page says the replay shows: the line under its "Replay of the last backward" heading."""
    elements = list(at.main)
    at_heading = next(i for i, e in enumerate(elements) if e.type == "subheader" and "Replay" in e.value)
    return next(e.value for e in elements[at_heading + 1 :] if e.type == "markdown")


def test_tape_results_appear_right_after_their_button():
    at = app("pages/backward/tape_consumption.py")
    for label, section in (
        ("loss.backward()", "1. "),
        ("l3.backward()", "2. "),
        ("(shared.detach() * x).sum().backward()", "3. "),
    ):
        button(at, label).click().run()
        elements = [e for e in at.main if e.type in ("subheader", "button", "alert", "success", "error")]
        kinds = [(e.type, e.label if e.type == "button" else e.value) for e in elements]
        result = next(i for i, (kind, _) in enumerate(kinds) if kind in ("success", "error", "alert"))
        heading = max(i for i, (kind, text) in enumerate(kinds[:result]) if kind == "subheader")
        assert kinds[heading][1].startswith(section), kinds  # in the section whose button made it
        between = kinds[heading + 1 : result]  # right below that button (or the row of buttons it is in)
        assert ("button", label) in between and {kind for kind, _ in between} == {"button"}, kinds


def test_traversal_exercise_asks_in_the_stage_with_every_number_to_check():
    # the stage asks each step's sends and checks the answers in the browser (tests/browser/test_stage.py plays
    # it); here: the page mounts it as an exercise, and every value a step sends is there to check an answer with
    at = app("pages/backward/backward_traversal.py")
    assert stage_data(at)["exercise"] is False
    at.toggle(key="traversal_exercise").set_value(True).run()
    data = stage_data(at)
    assert data["exercise"] is True and data["tolerance"] == [1e-3, 1e-4]
    run = at.session_state["traversal_run"]
    sent = [e for e in run.recorder.events if isinstance(e, GradientRegistered)]
    shown = [e for e in data["events"] if e["kind"] == "GradientRegistered"]
    # each number the float32 the engine sent, written as the engine prints it (its shortest form, not 17 digits)
    assert [np.float32(e["numbers"]).tolist() for e in shown] == [np.ravel(e.value).tolist() for e in sent]
    assert [[json.dumps(n) for n in e["numbers"]] for e in shown] == [
        [format_float(v) for v in np.ravel(e.value)] for e in sent
    ]
    to_x = [e["numbers"] for e in shown if e["node"] == int(run.tensors["x"].node_id)]
    assert np.allclose(np.sum(to_x, axis=0), [2 * 1.0 + 3, 2 * 2.0 + 3])  # d(x·x + 3x)/dx, by hand


def test_stage_answers_are_scored_once_and_forged_ones_ignored():
    def page() -> None:
        import streamlit as st

        from ui.exercise import score_answers, score_sentence

        for answers in st.session_state.get("reports", []):
            score_answers(answers)
        st.write(score_sentence())

    at = AppTest.from_function(page)
    reports = [
        {"a_6": False},
        {"a_6": True, "a_11": True},  # a_6 again: counted once
        {"a_6": True, "a_11": True, "a_15": None},  # revealed without an answer
        {"x" * 500: True, "a_20": "yes", "a_21": [1]},  # forged: too long a key, not verdicts
        "garbage",
    ]
    at.session_state["reports"] = reports
    at.run()
    assert at.session_state["exercise_score"] == (1, 2) and at.session_state["exercise_revealed"] == 1
    assert "1 of 2 answered predictions right; 1 revealed" in at.markdown[0].value


def test_consumption_exercise_hides_the_table_until_checked():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    assert not at.table and "Check your predictions" in at.info[0].value
    answers = ["5, 7", "None", "None", "none", "[5.0, 7.0]", "3, 3"]  # the last one is wrong
    for k, answer in enumerate(answers):
        at.text_input(key=f"consumption_predict_{k}").set_value(answer)
    at.button(key="consumption_predict_check").click().run()
    assert len(at.success) == 5 and len(at.error) == 1 and "removed" in at.error[0].value
    assert at.session_state["exercise_score"] == (5, 6)
    assert table(at, "Python")["Returns"].tolist()[0] == "[5.0, 7.0]"


def test_blank_predictions_are_revealed_not_right():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    at.button(key="consumption_predict_check").click().run()  # all six blank
    assert "exercise_score" not in at.session_state  # nothing answered, nothing right
    assert at.session_state["exercise_revealed"] == 6
    assert not at.success and not at.error and len([i for i in at.info if "(not answered)" in i.value]) == 6
    score = " ".join(c.value for c in at.caption)
    assert "6 revealed without an answer" in score and "right" not in score
    assert table(at, "Python")["Returns"].tolist()[0] == "[5.0, 7.0]"  # revealing shows the table


def test_partly_answered_predictions_score_only_the_answers():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    at.text_input(key="consumption_predict_0").set_value("5, 7")
    at.text_input(key="consumption_predict_1").set_value("4, 4")  # wrong: h's entry was consumed
    at.button(key="consumption_predict_check").click().run()
    assert at.session_state["exercise_score"] == (1, 2) and at.session_state["exercise_revealed"] == 4
    assert "1 of 2 answered predictions right; 4 revealed without an answer" in " ".join(c.value for c in at.caption)
