"""The report on a hand-built class: counts, the normalized gain worked out by hand, and a CSV without names."""

from __future__ import annotations

import csv
import io
import re

import pytest

from classroom.errors import InvalidInput
from classroom.report import answers_csv, normalized_gain, question_reports
from classroom.rooms import Classroom

# Four students, two questions. Question 1: vote 1 right for Ada only (1/4), vote 2 right for Ada, Bob, Cy (3/4):
# gain = (3/4 - 1/4) / (1 - 1/4) = 2/3. Question 2: everyone right on vote 1 (pre = 1, no gain), no vote 2.
VOTES_Q1 = {"Ada": [("2", True), ("2", True)], "Bob": [("1", False), ("2", True)]}
VOTES_Q1 |= {"Cy": [("-2", False), ("2", True)], "Dee": [("4", False), ("=SUM(A1)", False)]}


def _hand_built_class(classroom: Classroom) -> tuple[str, str]:
    room = classroom.create_room("lesson:fan-out", 6)
    code, key = room.code, room.teacher_key
    tokens = {name: classroom.join(code, f"10.0.0.{i}", name).token for i, name in enumerate(VOTES_Q1)}
    first = classroom.open_question(code, key, 3, "grad", "x")
    for name, ((answer, right), _) in VOTES_Q1.items():
        classroom.answer(code, tokens[name], first.id, answer, right=right, mistake=None if right else "no fan-out")
    classroom.close_vote(code, key, first.id)
    classroom.open_second_vote(code, key, first.id)
    for name, (_, (answer, right)) in VOTES_Q1.items():
        classroom.answer(code, tokens[name], first.id, answer, right=right)
    classroom.reveal(code, key, first.id)
    second = classroom.open_question(code, key, 5, "remains", "y")
    for token in tokens.values():
        classroom.answer(code, token, second.id, "none", right=True)
    classroom.reveal(code, key, second.id)
    return code, key


def test_per_question_counts_and_gain(classroom: Classroom) -> None:
    code, key = _hand_built_class(classroom)
    first, second = question_reports(classroom, code, key)
    assert (first.answered_1, first.right_1, first.answered_2, first.right_2) == (4, 1, 4, 3)
    assert (first.pre, first.post) == (0.25, 0.75)
    assert first.gain == pytest.approx(2 / 3)
    assert (second.answered_1, second.right_1, second.answered_2, second.pre, second.post) == (4, 4, 0, 1.0, None)
    assert second.gain is None


def test_a_transfer_is_a_column_of_its_question_in_the_report_and_the_csv(classroom: Classroom) -> None:
    code, key = _hand_built_class(classroom)
    first = classroom.teacher_view(code, key).questions[1].question  # the last question revealed
    transfer = classroom.open_question(code, key, 5, "remains", "z", transfer_of=first.id)
    late_comers = [classroom.join(code, f"10.0.1.{k}").token for k in range(4)]
    for k, token in enumerate(late_comers):
        classroom.answer(code, token, transfer.id, "none", right=k != 0)  # 3 of 4 right, alone
    reports = question_reports(classroom, code, key)
    assert len(reports) == 2 and reports[1].transfer == classroom.teacher_view(code, key).questions[2].question
    assert (reports[1].answered_t, reports[1].right_t, reports[1].after) == (4, 3, 0.75)
    assert reports[1].transfer_gain is None  # vote 1 was all right: no room to gain
    assert reports[0].transfer is None and reports[0].transfer_gain is None
    rows = list(csv.DictReader(io.StringIO(answers_csv(classroom, code, key))))
    assert {row["transfer_of"] for row in rows if row["key"] == "z"} == {str(first.id)}
    assert {row["transfer_of"] for row in rows if row["key"] != "z"} == {""}


def test_normalized_gain_by_hand() -> None:
    assert normalized_gain(0.5, 0.75) == 0.5
    assert normalized_gain(0.5, 0.25) == -0.5  # a room can lose ground
    assert normalized_gain(1.0, 1.0) is None
    assert normalized_gain(None, 0.5) is None


def test_the_csv_has_no_names_unless_asked(classroom: Classroom) -> None:
    code, key = _hand_built_class(classroom)
    plain = answers_csv(classroom, code, key)
    assert not any(name in plain for name in VOTES_Q1)
    rows = list(csv.DictReader(io.StringIO(plain)))
    assert len(rows) == 12 and "nickname" not in rows[0]
    assert {row["student"] for row in rows} == {"1", "2", "3", "4"}
    assert rows[0] == {
        "question": rows[0]["question"],
        "event": "4",
        "kind": "grad",
        "key": "x",
        "vote": "1",
        "transfer_of": "",
        "student": "1",
        "answer": "2",
        "right": "true",
        "mistake": "",
    }
    assert [row["answer"] for row in rows if row["vote"] == "1" and row["event"] == "4"] == ["2", "1", "-2", "4"]
    assert "'=SUM(A1)" in plain  # a spreadsheet shows it, never runs it
    named = list(csv.DictReader(io.StringIO(answers_csv(classroom, code, key, nicknames=True))))
    assert [row["nickname"] for row in named[:4]] == list(VOTES_Q1)


FORMULAS = ["x;=1+1;", "x,=1+1", " =1+1", "@SUM(A1)", "y;+1;-A1", "y|=2"]


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def test_a_formula_after_a_separator_stays_text_however_the_spreadsheet_splits(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:fan-out", 6)
    asked = classroom.open_question(room.code, room.teacher_key, 3, "grad", "x")
    for k, typed in enumerate([*FORMULAS, "5, -7"]):
        seat = classroom.join(room.code, f"10.0.0.{k}", typed).token
        classroom.answer(room.code, seat, asked.id, typed, right=False)
    exported = answers_csv(classroom, room.code, room.teacher_key, nicknames=True)
    lines = exported.splitlines()[1:]
    for cells in (  # as a comma's locale reads it, and as one that splits on ";" or "|" whatever the quotes say
        [cell for row in csv.reader(lines) for cell in row],
        [cell.strip('"') for line in lines for cell in re.split(r"[;|]", line)],
    ):
        formulas = [cell for cell in cells if cell.lstrip(" ")[:1] in ("=", "+", "-", "@") and not _number(cell)]
        assert formulas == []
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [row["answer"] for row in rows] == [row["nickname"] for row in rows]
    assert [row["answer"].replace("'", "") for row in rows] == [f.strip() for f in [*FORMULAS, "5, -7"]]  # as typed
    assert rows[-1]["answer"] == "5, -7"  # numbers stay numbers


@pytest.mark.parametrize("mark", list("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"))
def test_a_nickname_that_turns_the_text_around_is_refused_in_a_sentence(classroom: Classroom, mark: str) -> None:
    room = classroom.create_room("lesson:fan-out", 6)
    with pytest.raises(InvalidInput, match="^A nickname cannot hold characters that change the direction of the text"):
        classroom.join(room.code, "10.0.0.1", f"evil{mark}txt.exe")
    assert classroom.teacher_view(room.code, room.teacher_key).students == 0
