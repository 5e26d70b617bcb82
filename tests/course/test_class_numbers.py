"""A class's own numbers (issue 54): drawn from the room's seed, readable, never the lesson's, and the questions the
lesson asks kept with their mistakes."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from autodiff.stage import replay_payload
from course.class_numbers import class_numbers, class_run, program_questions
from course.grading import right_answer
from course.programs import PROGRAMS, record_program
from course.transfer import question_for_transfer_key, transfer_for, transfer_key

SEEDS = range(12)


def literals(source: str) -> list[np.ndarray]:
    """The values of each `Tensor.from_floats([...])` in a program's source, in order."""
    return [
        np.array(ast.literal_eval(node.args[0]), dtype=np.float64)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "from_floats"
    ]


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_a_class_draws_small_readable_numbers_none_of_them_the_lessons(key):
    lesson = literals(PROGRAMS[key].source)
    drawn_sources = set()
    for seed in SEEDS:
        numbers = class_numbers(key, seed)
        assert numbers is class_numbers(key, seed)  # drawn once per room
        drawn = literals(numbers.source)
        assert [d.shape for d in drawn] == [v.shape for v in lesson]
        for values, own in zip(drawn, lesson, strict=True):
            assert not np.array_equal(values, own)  # never the lesson's own numbers
            assert np.all(values != 0) and np.all(np.abs(values) <= max(4.0, np.abs(own).max()))
            assert np.allclose(values * 10, np.round(values * 10))  # one decimal at most
        assert numbers.source.count("\n") == PROGRAMS[key].source.count("\n")  # the same lines
        drawn_sources.add(numbers.source)
    assert len(drawn_sources) == len(SEEDS)  # each class its own


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_a_classs_questions_are_the_lessons_with_its_own_answers(key):
    lesson = program_questions(key)
    for seed in SEEDS:
        run = class_run(key, seed)
        assert run.lines == class_run(key, seed).lines and run.names == class_run(key, seed).names
        drawn = program_questions(key, seed)
        assert [(q.key, q.prompt, q.mistakes) for q in drawn] == [(q.key, q.prompt, q.mistakes) for q in lesson]
        grads = [
            (q, own) for q, own in zip(drawn, lesson, strict=True) if q.kind == "leaf_grad" and q.values is not None
        ]
        assert any(not np.allclose(q.values, own.values) for q, own in grads)  # a leaf's gradient: the room's own
        for q, own in zip(drawn, lesson, strict=True):  # no answer a 0 (or nearly) where the lesson's is not
            if q.values is not None and own.values is not None:
                assert np.count_nonzero(np.abs(q.values) < 1e-6) <= np.count_nonzero(np.abs(own.values) < 1e-6)
                assert np.abs(q.values).max() >= 0.01 or np.abs(own.values).max() < 0.01


def test_a_transfer_is_found_and_stored_on_the_rooms_numbers():
    seed = 7
    asked = {q.key: q for q in program_questions("seed", seed)}
    transfer = transfer_for(asked["sends:11:0"], "seed", seed)
    assert transfer is not None and transfer.source == class_numbers(transfer.program, seed).source
    found = question_for_transfer_key(transfer_key(transfer), seed)
    assert found == (transfer.program, transfer.question, transfer.source)
    lesson = question_for_transfer_key(transfer_key(transfer))
    assert lesson is not None and lesson[2] == PROGRAMS[transfer.program].source != transfer.source


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_no_answer_of_a_class_s_own_can_be_read_off_the_lesson_s_page(key):
    """The seed's 2x + 3 on a room's x came out [1.0, 2.0], the lesson's own x, in about one room in a dozen: a student
    could read the room's answer off the public lesson (a class test failed 1 run in 12 on it)."""
    run = record_program(key)
    page = json.dumps(replay_payload(run.before, run.recorder, run.names, source=PROGRAMS[key].source))
    lesson = {q.key: q for q in program_questions(key)}
    for seed in range(60):
        for q in program_questions(key, seed):
            own = q.values is not None and not np.array_equal(q.values, lesson[q.key].values)
            assert not (own and right_answer(q) in page), (seed, q.key, right_answer(q))
