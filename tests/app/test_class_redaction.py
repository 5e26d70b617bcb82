"""A class's student holds only what the room reached (issue 43): the stage's payload past the room's event keeps the
steps' kinds (the player counts them) but no words or numbers, and what the class route fills in as the room moves
on makes it whole again, event for event."""

from __future__ import annotations

import json

import pytest

from autodiff.stage import redacted, revealed_events
from ui.class_replays import lesson_replay

LEAF_GRAD = "grad:0"  # the seed's x: [5, 7] = [1, 2] + [1, 2] + [3, 3]


def numbers_in(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("program", ["seed", "mlp"])
def test_a_redacted_payload_holds_no_gradient_the_room_has_not_reached(program):
    full = lesson_replay(program).payload(False)
    for at in range(len(full["events"]) - 1):
        held = redacted(full, at)
        for e in held["events"][at + 1 :]:
            words = {key: e.get(key) for key in ("text", "value", "total", "total_full", "op")}
            assert set(words.values()) <= {"", None} and not e.get("numbers") and not e.get("rules"), e
        assert all(int(k) <= at for k in held["cards"])
        assert all(not any(c in "123456789" for c in edge["label"]) for edge in held["edges"])


def test_x_gradient_is_nowhere_in_a_students_browser_before_the_room_gets_there():
    replay = lesson_replay("seed")
    full = replay.payload(False)
    answer = str(replay.questions[LEAF_GRAD].values.tolist())
    assert answer == "[5.0, 7.0]" and answer in numbers_in(full)  # the teacher's stage has it
    whole = next(k for k, e in enumerate(full["events"]) if e["kind"] == "GradientRegistered" and e["total"] == answer)
    for at in range(whole):  # the room waits wherever the question was asked: nothing of the answer is there
        assert answer not in numbers_in(redacted(full, at))
    assert answer in numbers_in(redacted(full, whole))


def test_what_the_room_reaches_fills_the_payload_in_event_for_event():
    full = lesson_replay("seed").payload(False)
    events = len(full["events"])
    for at in range(events):
        held = redacted(full, at)
        assert [e["kind"] for e in held["events"]] == [e["kind"] for e in full["events"]]  # the steps still count
        assert held["events"][: at + 1] == full["events"][: at + 1]
        for then in range(at + 1, events):
            filled = revealed_events(full, at + 1, then)
            merged = held["events"][: at + 1] + filled["events"]
            assert merged == full["events"][: then + 1]
            assert {**held["cards"], **filled["cards"]} == {k: c for k, c in full["cards"].items() if int(k) <= then}
            assert set(filled["sums"]) <= set(full["sums"])
    assert redacted(full, events - 1)["sums"] == full["sums"]
    widths = [n["wide"] for n in redacted(full, 0)["nodes"]]
    assert [len(w) for w in widths] == [len(n["wide"]) for n in full["nodes"]]  # the room for numbers, kept
    assert not any(c in "123456789" for w in widths for c in w)


def test_a_folded_parts_gradients_come_with_the_room_too():
    full = lesson_replay("mlp3").payload(False)  # a function per layer: each its runs, what came in and went out
    runs = [run for group in full["groups"] for run in group["runs"]]
    assert runs and any(flow["value"] for run in runs for flow in run["sent"])
    for at in range(len(full["events"])):
        held = redacted(full, at)
        for group, whole in zip(held["groups"], full["groups"], strict=True):
            for run, known in zip(group["runs"], whole["runs"], strict=True):
                flows = run["came_in"] + run["sent"]
                assert run == known if known["last"] <= at else not any(flow["value"] for flow in flows)
        if at + 1 < len(full["events"]):
            filled = revealed_events(full, at + 1, len(full["events"]) - 1)
            assert filled["runs"] == [group["runs"] for group in full["groups"]]
