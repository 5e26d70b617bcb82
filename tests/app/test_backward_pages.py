"""The Backward section through AppTest: traversal replay, gradient and tape consumption, exercises."""

from __future__ import annotations

import re

import numpy as np
import pytest
from apptest import app, button, dot, open_link, table

from autodiff.trace import StepStarted
from course.programs import PROGRAMS, record_program
from ui.graph_dot import CURRENT, REFUSED


def test_player_buttons_and_current_step_highlight():
    at = app("pages/backward/backward_traversal.py")
    events = at.session_state["traversal_run"].recorder.events
    button(at, "Last »").click().run()
    assert at.session_state["replay_index"] == len(events) - 1
    button(at, "◀ Prev").click().run()
    assert at.session_state["replay_index"] == len(events) - 2
    button(at, "« First").click().run()
    assert at.session_state["replay_index"] == 0
    first_step = next(i for i, e in enumerate(events) if isinstance(e, StepStarted))
    at.slider[0].set_value(first_step + 1).run()
    node_id = int(events[first_step].node_id)
    spec = dot(at)
    current_line = next(line for line in spec.splitlines() if line.strip().startswith(f"n{node_id} "))
    assert f'color="{CURRENT}"' in current_line and 'penwidth="4"' in current_line
    assert spec.count('penwidth="4"') == 1  # only the current step is highlighted
    button(at, "Next ▶").click().run()
    assert at.session_state["replay_index"] == first_step + 1


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_container_table_after_every_event_matches_the_engine(key):
    at = app("pages/backward/backward_traversal.py")
    at.selectbox(key="traversal_program_widget").set_value(key).run()
    run = at.session_state["traversal_run"]
    assert run.program.key == key
    total = len(run.recorder.events)
    for index in range(total):
        at.slider[0].set_value(index + 1).run()
        expected = run.recorder.container_after(index)
        if not expected:
            assert any("container is empty" in i.value for i in at.info)
            continue
        frame = table(at, "Node")
        assert len(frame) == len(expected)
        for (node_id, value), (_, row) in zip(sorted(expected.items()), frame.iterrows(), strict=True):
            assert f"NodeId({int(node_id)})" in row["Node"]
            shown = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", row["Gradient"].split("(")[0])]
            np.testing.assert_allclose(shown, np.ravel(value)[: len(shown)], rtol=1e-3, atol=1e-4)
    # at the end the table holds exactly what an independent run of the engine returns
    fresh = record_program(key)
    leaves = [t for t in fresh.tensors.values() if t.grad(fresh.grads) is not None]
    final = table(at, "Node")
    assert len(final) == len(leaves)
    spec = dot(at)
    assert "dashed" in spec and CURRENT not in spec.split("edge [")[1].split("];", 1)[1]


def test_play_advances_one_event_per_tick_and_stops_at_the_end():
    at = app("pages/backward/backward_traversal.py")
    total = len(at.session_state["traversal_run"].recorder.events)
    button(at, "Play ▶").click().run()  # AppTest runs the fragment once per run; a browser on a timer
    assert at.session_state["replay_playing"] is True
    start = at.session_state["replay_index"]
    at.run()
    assert at.session_state["replay_index"] == start + 1
    for _ in range(total + 2):
        at.run()
    assert at.session_state["replay_index"] == total - 1
    assert at.session_state["replay_playing"] is False
    assert button(at, "Play ▶")


def test_query_params_round_trip():
    at = open_link("pages/backward/backward_traversal.py", program="neuron", event="8")
    assert at.selectbox(key="traversal_program_widget").value == "neuron"
    assert at.slider[0].value == 8  # events are counted from 1 in the link, as on the page
    assert at.session_state["replay_index"] == 7
    button(at, "Next ▶").click().run()
    assert at.query_params["event"] in (["9"], "9")
    assert at.query_params["program"] in ("neuron", ["neuron"])


def test_downloads_offer_dot_and_json():
    at = app("pages/backward/backward_traversal.py")
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels == ["Download the graph (DOT)", "Download the event trace (JSON)"]


def test_gradient_consumption_controls():
    at = app("pages/backward/gradient_consumption.py")
    lab = at.session_state["consumption_lab"]
    at.radio(key="consumption_tensor").set_value("x").run()
    button(at, "grad()").click().run()
    assert "→ `None`" in at.success[0].value  # the seed's table removed it
    at.text_input[0].set_value("2.5, -1").run()
    button(at, "grad_replace()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    assert table(at, "Node")["Gradient"].tolist() == ["[2.5, -1]"]
    button(at, "grad_remove()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    at.radio(key="consumption_tensor").set_value("h").run()
    button(at, "grad()").click().run()
    assert "GradInBackward" in at.success[0].value
    at.text_input[0].set_value("one, two").run()
    button(at, "grad_replace()").click().run()
    assert "numbers separated by commas" in at.error[0].value
    at.text_input[0].set_value("1, 2, 3").run()
    button(at, "grad_replace()").click().run()
    assert "shape" in at.error[0].value
    assert len(lab.log) == 5 and not at.exception


def test_tape_consumption_refusals_match_the_seed():
    at = app("pages/backward/tape_consumption.py")
    button(at, "loss.backward()").click().run()
    assert "x.grad = Some([5.0, 7.0])" in at.success[0].value
    button(at, "loss.backward()").click().run()
    assert "NodeId(5)" in at.error[0].value and "retain_graph" in at.error[0].value
    assert f'color="{REFUSED}"' in next(line for line in dot(at).splitlines() if line.strip().startswith("n5 "))
    button(at, "l1 .backward()").click().run()
    assert "Some([5.4365635, 14.778112])" in at.success[0].value
    button(at, "l2 .backward()").click().run()
    assert "NodeId(6)" in at.error[0].value
    button(at, "l3 .backward()").click().run()
    assert "Some([4.0, 4.0])" in at.success[0].value
    button(at, "l1 + l2 .backward()").click().run()
    assert "NodeId(" in at.error[0].value  # l1's own steps are consumed too
    button(at, "(shared.detach() * x).sum().backward()").click().run()
    assert "Some([2.7182817, 7.389056])" in at.success[0].value
    assert len(at.session_state["tape_lab"].log) == 7
    button(at, "Start over").click().run()
    assert "tape_lab" in at.session_state and not at.session_state["tape_lab"].log


def test_traversal_exercise_checks_predictions_and_keeps_a_score():
    from ui.exercise import sent_values

    at = app("pages/backward/backward_traversal.py")
    at.toggle(key="traversal_exercise").set_value(True).run()
    run = at.session_state["traversal_run"]
    events = run.recorder.events
    index = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.op == "mul")  # h = x * x
    at.slider[0].set_value(index + 1).run()
    expected = sent_values(run.recorder, index)
    assert [v.tolist() for v in expected] == [[1.0, 2.0], [1.0, 2.0]]  # grad * b, grad * a with b = a = x
    question = f"replay_{index}"
    at.text_input(key=f"{question}_0").set_value("2, 4")
    at.text_input(key=f"{question}_1").set_value("1, 2")
    at.button(key=f"FormSubmitter:{question}_form-Check my prediction").click().run()
    assert "Not quite" in at.error[0].value and "grad * b" in at.error[0].value
    assert at.session_state["exercise_score"] == (0, 1)
    index2 = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.op.startswith("mul_scalar"))
    at.slider[0].set_value(index2 + 1).run()
    q2 = f"replay_{index2}"
    at.text_input(key=f"{q2}_0").set_value("[3.0, 3.0]")
    at.button(key=f"FormSubmitter:{q2}_form-Check my prediction").click().run()
    assert "Right" in at.success[0].value
    assert at.session_state["exercise_score"] == (1, 2)
    assert "1 of 2" in " ".join(c.value for c in at.caption)


def test_consumption_exercise_hides_the_table_until_checked():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    assert not at.table and "Check your predictions" in at.info[0].value
    answers = ["5, 7", "None", "None", "none", "[5.0, 7.0]", "3, 3"]  # the last one is wrong
    for k, answer in enumerate(answers):
        at.text_input(key=f"consumption_predict_{k}").set_value(answer)
    at.button(key="FormSubmitter:consumption_predict_form-Check and reveal").click().run()
    assert len(at.success) == 5 and len(at.error) == 1 and "removed" in at.error[0].value
    assert at.session_state["exercise_score"] == (5, 6)
    assert table(at, "Expression")["Value"].tolist()[0] == "Some([5.0, 7.0])"
