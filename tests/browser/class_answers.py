"""A class's answers, as a test works them out from what the room's pages show: each room has numbers of its own
(issue 54), so no test can type the lesson's `5, 7`. The numbers are read from the code beside a stage (the room's
program, its literals drawn from the room's seed) and the answers worked out by the course, never asked of the
server."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from course.grading import parse_numbers, questions, right_answer
from course.programs import PROGRAMS, DrawnNumbers, record_program


def typed(values: object) -> str:
    """Numbers as a student types them: `5, 7`."""
    return ", ".join(f"{v:g}" for v in np.ravel(np.asarray(values, dtype=np.float64)))


@dataclass(frozen=True)
class SeedAnswers:
    """The seed program's question "What is x's gradient after the backward?" in one room: 2x + 3."""

    right: str  # as typed: `5, 7` in the lesson
    forward: str  # x's value, the forward-value mistake: `1, 2`
    one_path: str  # x·x's two paths without 3x's, a path left out: `2, 4`
    answer: str  # as the reveal writes it: `[5.0, 7.0]`


def seed_answers(page) -> SeedAnswers:
    """The x-gradient answers of the room whose stage `page` shows, from x's literal in the code beside it."""
    code = page.locator(".stage-code").first.text_content()
    found = re.search(r"x = Tensor\.from_floats\(\[([^\]]*)\]", code or "")
    assert found is not None, code
    x = np.array([float(v) for v in found.group(1).split(",")])
    right = 2 * x + 3  # d/dx sum(x·x + 3x), by hand
    return SeedAnswers(typed(right), typed(x), typed(2 * x), str([float(v) for v in right]))


def answer_from_code(code: str, prompt: str) -> str:
    """The right answer, as typed, to `prompt` ("In this program, …") about the lesson program whose code (with the
    room's numbers) is shown beside it: the program recorded again from that code. Its random tensors are not in the
    code: a program without any."""
    key = next(k for k, p in PROGRAMS.items() if f"def {p.build.__name__}(" in code)
    assert "Tensor.random" not in code, "a program with random tensors: its numbers are not all in its code"
    parts = code.strip("\n").split("\n\ndef ")
    functions = tuple(("def " if k else "") + part + "\n" for k, part in enumerate(parts))
    run = record_program(key, numbers=DrawnNumbers(functions, 0))
    asked = prompt.removeprefix("In this program, ")
    found = [q for q in questions(run.before, run.recorder, run.names) if q.prompt[:1].lower() + q.prompt[1:] == asked]
    assert len(found) == 1, (prompt, [q.prompt for q in questions(run.before, run.recorder, run.names)])
    values = parse_numbers(right_answer(found[0]))  # written in its shape ("[[1.0]]"), typed flat
    assert values is not None
    return typed(values)
