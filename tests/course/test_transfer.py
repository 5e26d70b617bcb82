"""The transfer question (course/transfer.py): for each lesson program's questions, an equivalent question (same
kind, same ops, same mistake classes) about another node, graded right by its own right answer; None where no
program has one; its stored key read back, and anything else refused."""

from __future__ import annotations

import numpy as np
import pytest

from course.grading import grade, right_answer
from course.programs import PROGRAMS
from course.transfer import program_questions, question_for_transfer_key, transfer_for, transfer_key

pytestmark = pytest.mark.course


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_a_transfer_is_an_equivalent_question_about_another_node(key):
    found = 0
    for q in program_questions(key):
        t = transfer_for(q, key)
        if t is None:
            continue
        found += 1
        asked = t.question
        assert (asked.kind, asked.ops, asked.mistakes) == (q.kind, q.ops, q.mistakes), q.key
        assert (t.program, asked.key) != (key, q.key) and (t.program, asked.node) != (key, q.node), q.key
        assert grade(asked, right_answer(asked), limit=10_000).right is True, (q.key, t.program, asked.key)
        if q.values is not None and asked.values is not None and asked.values.shape == q.values.shape:
            assert not np.allclose(asked.values, q.values), q.key  # the revealed answer, repeated, is not right
        assert asked.worked, q.key
        assert asked.prompt.startswith("In this program, ") and t.source == PROGRAMS[t.program].source
        assert transfer_key(transfer_for(q, key)) == transfer_key(t)  # the same transfer each time
        assert question_for_transfer_key(transfer_key(t)) == (t.program, asked, t.source)
    assert found, key


def test_the_seeds_transfers():
    asked = {q.key: q for q in program_questions("seed")}
    times_three = transfer_for(asked["sends:11:0"], "seed")
    assert times_three is not None
    assert transfer_key(times_three) == "transfer:shared:sends:19:0"
    assert times_three.question.prompt == "In this program, what does the step of shared·2 send to shared?"
    # no other leaf is reached along x·x's two operands and x·3: no program has an equivalent question
    assert transfer_for(asked["grad:0"], "seed") is None


def test_a_program_outside_the_lessons_still_finds_its_transfer_among_them():
    q = next(q for q in program_questions("neuron") if q.kind == "remaining")
    t = transfer_for(q, "a playground program")
    # the first lesson program with an equivalent question whose answer differs (neuron's own names the same ones)
    assert t is not None and (t.program, t.question.key) == ("mlp", "remaining")


@pytest.mark.parametrize(
    "key",
    [
        "",
        "transfer",
        "transfer:seed",
        "transfer:seed:",
        "transfer:nope:grad:0",
        "transfer:seed:grad:99",
        "Transfer:seed:grad:0",
        "other:seed:grad:0",
        "transfer:seed:__import__('os').getcwd()",
        "transfer:seed:grad:0" + "0" * 500,
        "transfer::grad:0",
    ],
)
def test_a_malformed_or_unknown_key_is_refused(key):
    assert question_for_transfer_key(key) is None


def test_each_program_is_recorded_once():
    assert program_questions("seed") is program_questions("seed")
