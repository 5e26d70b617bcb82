"""A class's own numbers (issue 54): a room draws its program's inputs from a seed of its own, so that no public lesson
page, export or earlier class answers its questions.

The draw keeps the lesson readable and its questions what they were: a draw (no literal of it the lesson's own) is kept
when every question the program asks keeps its prompt and the mistakes its wrong answers can show (a value that
makes a mistake give the right answer, a 0 say, would drop one). An answer the inputs do not change (what a sum sends,
or `x * 3.0`) stays what the code says. Each program draws from its own stream of the room's seed, so a transfer
question's program has the room's numbers too.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from autodiff.stage import replay_payload
from course.grading import Question, questions, right_answer
from course.programs import PROGRAMS, DrawnNumbers, ProgramRun, draw_numbers, record_program

DRAWS = 40  # draws tried before the last one is kept as it is (it is still the room's own)
VANISHING = 0.01  # an answer whose largest number is smaller than this is no question to work out by hand
ROOMS_KEPT = 64  # rooms whose questions are kept per program (a server runs at most 50 classes at once)


@functools.lru_cache(maxsize=ROOMS_KEPT * 8)
def program_questions(program_key: str, seed: int | None = None) -> tuple[Question, ...]:
    """A lesson program's questions on the lesson's numbers (`seed` None), or on the numbers of a class seeded
    `seed`; recorded once per process and kept for the last rooms (the programs run seeded: the same each time)."""
    run = record_program(program_key) if seed is None else class_run(program_key, seed)
    source = PROGRAMS[program_key].source if seed is None else class_numbers(program_key, seed).source
    return tuple(questions(run.before, run.recorder, run.names, source, run.lines))


def class_run(program_key: str, seed: int) -> ProgramRun:
    """Lesson program `program_key` recorded on the numbers of a class seeded `seed`."""
    return record_program(program_key, numbers=class_numbers(program_key, seed))


@functools.lru_cache(maxsize=ROOMS_KEPT * 8)
def class_numbers(program_key: str, seed: int) -> DrawnNumbers:
    """Lesson program `program_key`'s numbers in a class seeded `seed` (see the module's docstring)."""
    lesson = {q.key: q for q in program_questions(program_key)}
    rng = np.random.default_rng([seed, list(PROGRAMS).index(program_key)])
    for _ in range(DRAWS):
        numbers = draw_numbers(PROGRAMS[program_key], rng)
        run = record_program(program_key, numbers=numbers)
        drawn = questions(run.before, run.recorder, run.names, numbers.source, run.lines)
        if _keeps(drawn, lesson) and not _on_the_lesson_page(drawn, lesson, program_key):
            return numbers
    return numbers


def _on_the_lesson_page(drawn: list[Question], lesson: dict[str, Question], program_key: str) -> bool:
    """Whether an answer of the room's own (one its numbers changed) is written on the lesson's public page: the
    seed's 2x + 3 on a room's x was the lesson's x itself, [1.0, 2.0], or a partial sum of a card, in a dozen draws."""
    page = _lesson_page(program_key)
    for q in drawn:
        own = lesson[q.key].values
        if q.values is not None and own is not None and not np.array_equal(q.values, own) and right_answer(q) in page:
            return True
    return False


@functools.lru_cache(maxsize=len(PROGRAMS))
def _lesson_page(program_key: str) -> str:
    """Every number the lesson's page writes: its replay's payload (values, gradients, cards, sentences)."""
    run = record_program(program_key)
    return json.dumps(replay_payload(run.before, run.recorder, run.names, source=PROGRAMS[program_key].source))


def _keeps(drawn: list[Question], lesson: dict[str, Question]) -> bool:
    """The lesson's questions, each with its prompt, its mistakes and an answer of the same form, none of them
    vanishing where the lesson's does not (a saturated tanh sends 0.00000004: no question to work out by hand), nor
    with more zeros than the lesson's (x = -1.5 makes 2x + 3 a 0: a number that says nothing of the paths)."""
    if [q.key for q in drawn] != list(lesson):
        return False
    if any(_vanishes(q) and not _vanishes(lesson[q.key]) or _zeros(q) > _zeros(lesson[q.key]) for q in drawn):
        return False
    return all(
        (q.prompt, q.mistakes, q.values is None)
        == (lesson[q.key].prompt, lesson[q.key].mistakes, lesson[q.key].values is None)
        for q in drawn
    )


def _vanishes(question: Question) -> bool:
    return question.values is not None and float(np.abs(question.values).max(initial=0.0)) < VANISHING


def _zeros(question: Question) -> int:
    return 0 if question.values is None else int(np.count_nonzero(np.abs(question.values) < 1e-6))
