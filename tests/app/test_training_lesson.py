"""The Training lesson through the app: the live stage's payload, the stage's commands (as the browser sends them),
a student's own points (pasted, linked), the mistake and the replay in place."""

from __future__ import annotations

import json

import numpy as np
from apptest import app, code_blocks, open_link, stages

from course.own_data import to_link
from course.training import Training, make_dataset
from ui.training_stage import AHEAD, LiveTraining, TrainingPayload, grid, preview_wire

PAGE = "pages/train/training_loop.py"


def payload(at) -> TrainingPayload:
    return next(
        json.loads(e.proto.json)
        for e in at.main
        if e.type == "bidi_component" and e.proto.component_name == "training_stage"
    )


def command(at, action: str, **extra) -> None:
    """What the stage sends (its state value `command`), applied as the page's callback applies it."""
    live: LiveTraining = at.session_state["live_training"]
    live.apply({"action": action, "at": payload(at)["iterations"], "id": 1, **extra})
    at.run()
    assert not at.exception, at.exception


def test_before_training_the_stage_has_the_points_and_no_iteration():
    at = app(PAGE)
    data = payload(at)
    assert data["iterations"] == 0 and data["frames"] == [] and data["canPlay"]
    assert len(data["points"]) == len(data["labels"]) == 200
    assert any("press **One iteration** or **Play**" in m.value for m in at.markdown)


def test_each_step_sends_the_iteration_the_course_computes_with_its_graph():
    at = app(PAGE)
    for _ in range(3):
        command(at, "step")
    reference = Training()
    for _ in range(3):
        reference.step()
    data = payload(at)
    assert data["iterations"] == 3 and data["losses"] == [i.loss for i in reference.history]
    frame = data["frames"][-1]  # the newest picture: sent once, with the iteration on screen
    assert frame["number"] == 3 and frame["tape"] == 10 and frame["samples"] == 200
    names = [n["name"] or n["op"] for n in frame["nodes"]]
    assert names == ["points", "targets", "w1", "b1", "w2", "b2", "matmul", "add", "hidden", "matmul", "logits", "loss"]
    w1 = reference.frames[-1].parameters["w1"]
    np.testing.assert_allclose(frame["parameters"]["w1"]["data"], w1.ravel(), rtol=1e-6)  # float32, to the digit
    sentence = next(m.value for m in at.markdown if m.value.startswith("Iteration 3:"))
    assert "the same after every iteration so far" in sentence


def test_play_computes_ahead_and_pause_goes_back_to_the_iteration_on_screen():
    at = app(PAGE)
    command(at, "play")  # the page reruns whole once: its ticker starts
    assert payload(at)["playing"] and payload(at)["iterations"] >= 20  # a second ahead of the stage, at least
    live: LiveTraining = at.session_state["live_training"]
    live.apply({"action": "pause", "at": 7, "id": 2})
    at.run()
    assert not payload(at)["playing"] and payload(at)["iterations"] == 7
    assert payload(at)["frames"][-1]["number"] == 7


def test_a_point_added_while_playing_is_trained_on_and_play_goes_on():
    """A click on the plane while it played stopped the server's play (any command but play did), while the stage
    played on waiting for chunks no one computed: the count froze until Pause and Play."""
    at = app(PAGE)
    command(at, "play")
    live: LiveTraining = at.session_state["live_training"]
    live.apply({"action": "add", "at": 10, "id": 2, "point": [0.25, 1.5, 1]})  # clicked while iteration 10 shows
    at.run()
    data = payload(at)
    assert data["playing"] and data["canPlay"] and data["iterations"] == 10 + AHEAD
    assert [f["number"] for f in data["frames"]] == list(range(11, 11 + AHEAD))  # from the one on the stage
    assert all(f["samples"] == 201 for f in data["frames"]) and data["labels"][-1] == 1
    live.apply({"action": "more", "at": 25, "id": 3})  # the stage's next ask for a chunk is answered
    at.run()
    assert payload(at)["playing"] and payload(at)["iterations"] == 25 + AHEAD


def test_at_open_the_stage_has_the_first_iterations_graph_before_it_runs():
    """The graph's half of the screen was empty at open ("Press Play…"): the first iteration's forward is drawn."""
    at = app(PAGE)
    preview = payload(at)["preview"]
    reference = Training()
    reference.step()
    ran = reference.frames[-1]
    assert [n["name"] or n["op"] for n in preview["nodes"]] == [n.name or n.op for n in ran.nodes]
    assert [n["inputs"] for n in preview["nodes"]] == [list(n.inputs) for n in ran.nodes]
    for drawn, node in zip(preview["nodes"], ran.nodes, strict=True):
        np.testing.assert_allclose(drawn["value"]["data"], grid(node.value)["data"], rtol=1e-3)
        assert drawn["grad"] is None  # backward has not run
    assert preview["tape"] == reference.history[0].tape
    np.testing.assert_allclose(preview["parameters"]["w1"]["data"], ran.parameters["w1"].ravel(), rtol=1e-6)
    assert at.session_state["live_training"].training.iterations == 0  # drawn, not trained
    command(at, "step")
    assert payload(at)["preview"] is None  # from the first iteration on, the iterations' own graphs
    emptied = app(PAGE)
    command(emptied, "clear")
    assert payload(emptied)["iterations"] == 0 and payload(emptied)["preview"] is None  # no points: nothing to draw


def test_the_untrained_preview_is_computed_once_per_server_and_follows_the_points():
    """Every visitor opening with the default points gets the same preview without a forward each (the page's cost at
    open); a point added before the first iteration is in the graph drawn."""
    first, second = Training(), Training()
    assert preview_wire(first) is preview_wire(second)
    second.use_points(np.vstack([second.points, [[0.5, 0.5]]]), np.append(second.labels, 1))
    grown = preview_wire(second)
    assert grown is not preview_wire(first)
    assert {tuple(n["shape"]) for n in grown["nodes"] if n["name"] == "points"} == {(len(second.labels), 2)}
    other = preview_wire(Training(seed=1))  # other parameters: another graph's values
    assert other["parameters"]["w1"] != preview_wire(first)["parameters"]["w1"]


def test_a_command_a_visitor_forges_changes_nothing():
    at = app(PAGE)
    live: LiveTraining = at.session_state["live_training"]
    for forged in ("step", {"action": "rm -rf"}, {"action": "add", "point": ["x", 1, 0]}, {"action": "add"}):
        live.apply(forged)
    live.apply({"action": "add", "point": [1e30, -1e30, 1], "at": -5})  # kept on the plane, at its edge
    at.run()
    data = payload(at)
    assert data["iterations"] == 0 and len(data["points"]) == 201
    assert max(abs(v) for v in data["points"][-1]) <= data["extent"] + 0.5


def test_a_point_added_on_the_plane_is_trained_on_and_kept_in_the_link():
    at = app(PAGE)
    command(at, "step")
    command(at, "add", point=[0.25, 1.5, 1])
    command(at, "step")
    assert payload(at)["frames"][-1]["samples"] == 201 and payload(at)["labels"][-1] == 1
    assert any(c.value.startswith("201 points are too many for a link (at most 200)") for c in at.caption)
    command(at, "clear")
    for point in ([0.25, 1.5, 1], [-1, -0.5, 0]):
        command(at, "add", point=point)
    command(at, "step")
    assert payload(at)["frames"][-1]["samples"] == 2
    link = at.query_params["data"]
    linked = open_link(PAGE, data=link if isinstance(link, str) else link[0])
    assert payload(linked)["points"] == [[0.25, 1.5], [-1, -0.5]] and payload(linked)["labels"] == [1, 0]


def test_pasted_rows_train_and_a_bad_row_is_named_and_nothing_is_lost():
    at = app(PAGE)
    rows = "x, y, class\n0.1, 0.2, 0\n0.3, oops, 1\n"
    at.text_area(key="training_csv").input(rows).run()
    at.button(key="training_use_csv").click().run()
    assert at.error[0].value.startswith("Row 3 ('0.3, oops, 1'): x and y must be numbers")
    assert at.text_area(key="training_csv").value == rows and len(payload(at)["points"]) == 200
    at.text_area(key="training_csv").input("0.1, 0.2, 0\n0.3, 0.4, 1\n").run()
    at.button(key="training_use_csv").click().run()
    assert not at.error and payload(at)["points"] == [[0.1, 0.2], [0.3, 0.4]]
    assert payload(at)["labels"] == [0, 1]


def test_a_link_with_too_many_or_damaged_points_says_so():
    points, labels = make_dataset("two moons", 30)
    at = open_link(PAGE, data=to_link(points, labels))
    assert len(payload(at)["points"]) == 30 and not at.error
    damaged = open_link(PAGE, data="abc")
    assert damaged.error[0].value.startswith("The link's data is cut short")
    assert len(payload(damaged)["points"]) == 200  # the lesson's points instead
    command(at, "clear")
    assert payload(at)["canPlay"] is False and "No points" in payload(at)["message"]


def test_the_mistake_stops_training_with_a_sentence_and_its_graph_grows():
    at = app(PAGE)
    at.selectbox(key="training_update").set_value("autodiff").run()
    for _ in range(3):
        command(at, "step")
    data = payload(at)
    assert data["iterations"] == 2 and not data["canPlay"]
    assert data["message"].startswith("Iteration 3 cannot run: w1 has no gradient")
    assert at.warning[0].value == data["message"]
    frame = data["frames"][-1]
    assert frame["tape"] == 14 and len(frame["nodes"]) == 24  # each parameter is its update's output now
    assert "w1 before update 1" in {n["name"] for n in frame["nodes"]}
    assert any("def sgd_update_on_autodiff" in block for block in code_blocks(at))


def test_an_iteration_s_backward_replays_in_place_and_training_comes_back():
    at = app(PAGE)
    for _ in range(2):
        command(at, "step")
    command(at, "replay")
    data = next(s for s in stages(at) if s["mode"] == "replay")
    names = {node["name"] for node in data["nodes"]}
    assert {"w1", "b1", "w2", "b2", "hidden", "logits", "loss"} <= names
    assert any(
        "logits = hidden @ model.w2 + model.b2" in "".join(seg[1] for seg in line) for line in data["program"]["lines"]
    )
    assert any(c.value.startswith("Iteration 2: loss ") for c in at.caption)
    at.button(key="training_back").click().run()
    assert payload(at)["iterations"] == 2


def test_changing_a_setting_starts_a_new_training_and_loading_points_keeps_it():
    at = app(PAGE)
    command(at, "step")
    at.selectbox(key="training_dataset").set_value("spirals").run()
    assert payload(at)["iterations"] == 1  # training goes on, on the spirals
    at.select_slider(key="training_lr").set_value(0.1).run()
    assert payload(at)["iterations"] == 0 and payload(at)["learningRate"] == 0.1
