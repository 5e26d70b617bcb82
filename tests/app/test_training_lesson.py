"""The Training lesson through the app: its buttons, its pictures, the mistake and the replay."""

from __future__ import annotations

import json

from apptest import app, code_blocks, stages
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from course.training import Training

PAGE = "pages/train/training_loop.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def charts(at) -> list[dict]:
    """Each chart's spec, its named datasets as data frames under "datasets"."""
    specs = []
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        spec["datasets"] = {d.name: convert_arrow_bytes_to_pandas_df(d.data.data) for d in element.proto.datasets}
        specs.append(spec)
    return specs


def test_before_training_the_page_says_what_to_press_and_draws_the_untrained_boundary():
    at = app(PAGE)
    assert metrics(at)["Iteration"] == "0" and metrics(at)["Loss"] == "not yet"
    assert any("press **One iteration** or **Play**" in m.value for m in at.markdown)
    titles = [chart["title"]["text"] for chart in charts(at)]
    assert titles == ["Decision boundary before training"]  # the curves start with the first iteration
    assert any("drawn from the first iteration on" in c.value for c in at.caption)
    assert any("Run an iteration first" in c.value for c in at.caption)


def test_each_press_runs_one_iteration_with_the_loss_the_course_computes():
    at = app(PAGE)
    for _ in range(3):
        at.button(key="training_step").click().run()
    assert not at.exception
    reference = Training()  # the same settings, run outside the app
    for _ in range(3):
        reference.step()
    shown = metrics(at)
    assert shown["Iteration"] == "3"
    assert shown["Loss"] == f"{reference.history[-1].loss:.3f}"
    assert shown["Accuracy"] == f"{reference.history[-1].accuracy:.0%}"
    assert shown["Operations on the tape"] == "10"
    sentence = next(m.value for m in at.markdown if m.value.startswith("Iteration 3:"))
    assert "the same after every iteration so far" in sentence
    boundary, loss, memory = charts(at)
    assert boundary["title"]["text"] == "Decision boundary after iteration 3"
    assert len(boundary["datasets"]["points"]) == 200
    assert loss["datasets"]["points"]["Loss"].tolist() == [i.loss for i in reference.history]  # the course's numbers
    moments = set(memory["datasets"]["points"]["Moment"])
    assert moments == {"before backward", "after the update"}


def test_play_turns_into_pause_and_back():
    at = app(PAGE)
    at.button(key="training_play").click().run()
    assert at.button(key="training_play").label == "Pause"
    at.button(key="training_play").click().run()
    assert at.button(key="training_play").label == "Play"


def test_the_mistake_stops_training_with_a_sentence_and_shows_its_code():
    at = app(PAGE)
    at.radio(key="training_update").set_value("autodiff").run()
    for _ in range(3):
        at.button(key="training_step").click().run()
    assert not at.exception and not at.error
    assert metrics(at)["Iteration"] == "2"
    assert at.warning[0].value.startswith("Iteration 3 cannot run: w1 has no gradient")
    sentence = next(m.value for m in at.markdown if m.value.startswith("Iteration 2:"))
    assert "4 more than iteration 1: the graph reaches back through the previous update" in sentence
    assert any("def sgd_update_on_autodiff" in block for block in code_blocks(at))


def test_an_iteration_s_backward_replays_in_the_stage_with_the_forward_s_lines():
    at = app(PAGE)
    for _ in range(2):
        at.button(key="training_step").click().run()
    at.button(key="training_replay").click().run()
    assert not at.exception
    data = next(s for s in stages(at) if s["mode"] == "replay")
    names = {node["name"] for node in data["nodes"]}
    assert {"w1", "b1", "w2", "b2", "hidden", "logits", "loss"} <= names
    assert any(
        "logits = hidden @ model.w2 + model.b2" in "".join(seg[1] for seg in line) for line in data["program"]["lines"]
    )
    assert any(c.value.startswith("Iteration 2: loss ") for c in at.caption)


def test_changing_a_setting_starts_a_new_training():
    at = app(PAGE)
    at.button(key="training_step").click().run()
    at.selectbox(key="training_dataset").set_value("spirals").run()
    assert metrics(at)["Iteration"] == "0"
