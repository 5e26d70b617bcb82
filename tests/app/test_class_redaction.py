"""A class's student holds only what the room reached (issue 43): the stage's payload past the room's event keeps the
steps' kinds (the player counts them) but no words or numbers, and what the class route fills in as the room moves
on makes it whole again, event for event. Each room has numbers of its own, which no lesson page answers, and a
number still to come is masked by its shape alone (issue 54)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import test_class_page
import test_graph_dot
from apptest import open_link, stage_data
from test_class_page import follow, join, send, start_class, typed

from autodiff.stage import redacted, replay_payload, revealed_events
from autodiff.stage.payload import MASKED_NUMBER
from classroom.live import classroom
from course.grading import right_answer
from course.programs import PROGRAMS
from playground.sandbox import run_program
from ui.class_replays import class_replay, lesson_replay, room_replay, room_seed

LEAF_GRAD = "grad:0"  # the seed's x: [5, 7] = [1, 2] + [1, 2] + [3, 3]
NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
route = test_class_page.route  # the class route as app.py mounts it (a fixture)
LESSON_PAGE = "pages/backward/backward_traversal.py"  # /traversal?program=seed&event=999: every number of the lesson


def numbers_in(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("program", ["seed", "mlp"])
def test_a_redacted_payload_holds_no_gradient_the_room_has_not_reached(program):
    full = lesson_replay(program).payload(False)
    for at in range(len(full["events"]) - 1):
        held = redacted(full, at)
        for e in held["events"][at + 1 :]:
            words = {
                key: e.get(key) for key in ("text", "value", "value_range", "total", "total_range", "total_full", "op")
            }
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
    assert len({number for w in widths for number in NUMBER.findall(w)}) == 1  # room for numbers, one width each
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


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_a_masked_number_says_nothing_but_how_many_numbers_there_are(program):
    """Two rooms' numbers (and the lesson's) differ in sign, zeros and digits: what a student holds of the numbers the
    room has not reached is laid out alike, number for number (issue 54: by width alone, the right answer was told
    apart from every anticipated wrong one in 46 of 56 questions)."""
    replays = [lesson_replay(program), room_replay(program, 1), room_replay(program, 2)]
    assert replays[1].source != replays[2].source != replays[0].source  # each its own numbers
    for at in sorted({q.event for q in replays[0].questions.values()} | {0}):
        held = [redacted(r.payload(False), at) for r in replays]
        layouts = [([n["wide"] for n in h["nodes"]], [e["label"] for e in h["edges"]]) for h in held]
        assert layouts[0] == layouts[1] == layouts[2]
        # numbers to come: a tensor's shape and how many numbers it has (the room they take), none of its numbers
        ranges = [[n["wide_range"] for n in h["nodes"]] + [e["label_range"] for e in h["edges"]] for h in held]
        assert ranges[0] == ranges[1] == ranges[2]
        # a summary's shape, none of its numbers; four numbers or fewer not at all (whether they are sent would say
        # whether they are short), which the whole payload sends
        assert all(isinstance(r, dict) and r["low"] == r["high"] == 0 for r in ranges[0] if r is not None)
        sent = [n["wide_range"] for r in replays for n in r.payload(False)["nodes"]]
        assert program == "seed" or any(isinstance(numbers, (list, float)) for numbers in sent)  # the seed's are short
        numbers = [n for wides, labels in layouts for n in NUMBER.findall(" ".join(wides + labels))]
        assert set(numbers) <= {MASKED_NUMBER}


def test_a_summary_of_more_than_16_numbers_to_come_is_masked_to_its_shape():
    # a Playground program a teacher runs: Python summarises its [5, 4] and [6, 4] gradients (`[5, 4] from ... to ...`)
    # and sends their least and greatest numbers beside them; before the room reaches them, a student holds their shape
    source = test_graph_dot.WIDE
    result = run_program(source)
    assert result.backward is not None, result.error
    run = result.backward
    full = replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)
    large = [e["label_range"] for e in full["edges"] if e["label_range"] and math.prod(e["label_range"]["shape"]) > 16]
    assert len(large) >= 2 and any(r["low"] != 0 for r in large)
    held = redacted(full, 0)
    masked = [e["label_range"] for e in held["edges"] if e["label_range"] and math.prod(e["label_range"]["shape"]) > 16]
    assert [r["shape"] for r in masked] == [r["shape"] for r in large]
    assert all(r == {"shape": r["shape"], "low": 0.0, "high": 0.0} for r in masked)
    texts = [n["wide"] for n in held["nodes"]] + [e["label"] for e in held["edges"]]
    assert set(NUMBER.findall(" ".join(texts))) - {"5", "6", "4"} <= {MASKED_NUMBER}, texts


def gradients_in(payload: dict) -> str:
    """Everything of a stage's payload that says a gradient (a forward value may equal one: x = [3, 3] makes x·x the
    same [9, 9] as 2x + 3)."""
    said = {key: payload[key] for key in ("events", "cards", "sums", "groups", "edges")}
    return json.dumps([said, [(node["grad"], node["wide"]) for node in payload["nodes"]]])


def student_numbers(student) -> list[str]:
    """The values each node of a student's stage shows (the forward values: the room's inputs among them)."""
    return [node["value"] for node in stage_data(student)["nodes"]]


def test_two_classes_on_one_program_have_their_own_numbers_and_the_lesson_page_answers_neither(route):
    lesson = json.dumps(stage_data(open_link(LESSON_PAGE, program="neuron", event="999")))
    revealed, shown = [], []
    for _ in range(2):
        teacher, code, _ = start_class("neuron")
        student = join(code)
        shown.append(student_numbers(student))
        replay = class_replay("neuron", code)
        asked = "grad:0"  # w's gradient after the backward
        assert replay.names[0] == "w"
        teacher.selectbox(key="class_question").set_value(asked)
        teacher.button(key="class_ask_send").click().run()
        assert send(route, student, typed(np.ravel(replay.questions[asked].values))).json()["vote"] == 1
        teacher.button(key="class_reveal").click().run()
        result = follow(route, student)["result"]
        assert result["right"] is True  # graded on the room's numbers
        revealed.append(result["answer"])
    assert shown[0] != shown[1]  # w, x and b: each class its own
    assert revealed[0] != revealed[1]
    for answer in revealed:
        assert answer not in lesson, answer  # the lesson page holds neither room's answer


def test_no_payload_follow_or_download_of_a_room_holds_its_answer_before_the_reveal(route):
    lesson = json.dumps(stage_data(open_link(LESSON_PAGE, program="seed", event="999")))
    teacher, code, _ = start_class("seed")
    student = join(code)
    question = class_replay("seed", code).questions[LEAF_GRAD]
    answer, typed_answer = right_answer(question), typed(np.ravel(question.values))  # 2x + 3 on the room's x
    assert answer != "[5.0, 7.0]" and answer not in lesson  # not the lesson's, and not on its page
    teacher.selectbox(key="class_question").set_value(LEAF_GRAD)
    teacher.button(key="class_ask_send").click().run()
    student.run()  # the student's page as it is drawn now (a reload)
    assert send(route, student, typed_answer).json()["vote"] == 1
    told = follow(route, student)
    assert told["question"]["key"] == classroom().question_token(code, LEAF_GRAD) != LEAF_GRAD
    payload = stage_data(student)
    assert answer not in gradients_in(payload)
    assert answer not in json.dumps(told) and typed_answer not in json.dumps(told["question"])  # their own aside
    assert "grad:" not in json.dumps(payload) + json.dumps(told)  # the question travels as an opaque id
    assert not student.get("download_button")  # a student's page has nothing to download
    layout = stage_data(student)
    masked = NUMBER.findall(" ".join([n["wide"] for n in layout["nodes"]] + [e["label"] for e in layout["edges"]]))
    assert masked and set(masked) == {MASKED_NUMBER}  # every masked number the same width
    teacher.button(key="class_reveal").click().run()
    assert follow(route, student)["result"]["answer"] == answer  # the reveal brings it


def test_a_transfer_travels_as_an_opaque_id_with_the_rooms_numbers(route):
    teacher, code, key = start_class("seed")
    student = join(code)
    teacher.selectbox(key="class_question").set_value("sends:2:0")  # what the loss's step sends: the first step
    teacher.button(key="class_ask_send").click().run()
    teacher.button(key="class_reveal").click().run()
    teacher.button(key="class_transfer").click().run()
    told = follow(route, student)
    stored = classroom().teacher_view(code, key).questions[-1].question.key
    assert stored.startswith("transfer:") and told["question"]["key"] == classroom().question_token(code, stored)
    assert "transfer:" not in json.dumps(told)  # neither its program nor its question named
    program = stored.split(":")[1]
    shown = told["question"]["code"]
    assert shown == room_replay(program, room_seed(code)).source != PROGRAMS[program].source  # the room's numbers
