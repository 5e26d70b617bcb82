"""The Training stage's contract: the TypedDicts ui/training_stage.py sends and the JSDoc typedefs of
training_stage.js name the same keys, and a real payload has exactly those keys, nested."""

from __future__ import annotations

import typing

from test_stage_contract import js_fields, js_typedefs

from course.training import Training
from ui import training_stage
from ui.training_stage import TRAINING_JS, frame_wire

WIRE = {name: cls for name, cls in vars(training_stage).items() if typing.is_typeddict(cls)}  # both ways: Command


def test_python_and_the_browser_name_the_same_types_and_keys():
    js = js_typedefs(TRAINING_JS)
    assert set(WIRE) == set(js)
    for name, cls in WIRE.items():
        assert set(cls.__annotations__) == set(js_fields(js[name])), name


def test_a_frame_sent_has_exactly_the_keys_its_type_names():
    training = Training()
    training.step()
    frame = frame_wire(training, training.frames[-1])
    assert set(frame) == set(training_stage.FrameWire.__annotations__)
    for node in frame["nodes"]:
        assert set(node) == set(training_stage.LiveNodeWire.__annotations__)
        assert set(node["value"]) == set(training_stage.Grid.__annotations__)
        assert len(node["value"]["data"]) == node["value"]["rows"] * node["value"]["cols"]
