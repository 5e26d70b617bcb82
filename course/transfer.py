"""The transfer question (peer instruction's measure of learning, Smith et al. 2009): after a question is revealed,
a new one, equivalent, that each student answers alone, on another node of the same program or in another lesson
program, with that program's code beside it.

Two questions are equivalent when they are of the same kind, go through the same ops and can show the same mistakes:

- `sends`: the sending step's op (and its operand, where the operands' local derivatives differ: `sub/1`, `matmul/0`);
- `leaf_grad`: the ops of the steps that send to the leaf, one per path (so as many paths, along the same ops);
- `remaining`: the roles the named tensors play (a leaf that keeps its gradient, an intermediate whose gradient is
  consumed, a leaf no path reaches, an input): an input or an unreached leaf is a trap of its own;

and each the same set of mistake classes (`Question.mistakes`). A transfer is about another node (another program,
or another node of the same one) and its right answer differs from the original's: repeating the answer just
revealed is never right. All worked out from the recorded graphs, never written per program; the first equivalent
question wins, the same program's first, then the lesson programs in their order (deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from course.class_numbers import class_numbers, program_questions
from course.grading import Question
from course.programs import PROGRAMS

PREFIX = "transfer"
MAX_KEY_CHARS = 200  # a stored key longer than this is not one of ours


@dataclass(frozen=True)
class Transfer:
    program: str  # the program's key in PROGRAMS
    question: Question  # that program's question, its prompt saying "In this program, …"
    source: str  # the program's code, shown beside the question (a student's stage may show another graph)


def program_source(program_key: str, seed: int | None) -> str:
    """The code a transfer's program is shown with: the lesson's, or with a class's own numbers."""
    return PROGRAMS[program_key].source if seed is None else class_numbers(program_key, seed).source


def equivalent(a: Question, b: Question) -> bool:
    """Same kind, same ops (see the module's docstring), same mistake classes."""
    return (a.kind, a.ops, a.mistakes) == (b.kind, b.ops, b.mistakes)


def transfer_for(question: Question, program_key: str, seed: int | None = None) -> Transfer | None:
    """The transfer of `question`, asked on `program_key`'s backward: the first equivalent question about another
    node, whose right answer differs; None when no lesson program has one. `seed`: a class's, whose numbers every
    program then has (None: the lessons' own)."""
    others = [key for key in PROGRAMS if key != program_key]
    order = [program_key, *others] if program_key in PROGRAMS else others
    for key in order:
        for candidate in program_questions(key, seed):
            elsewhere = key != program_key or (candidate.node is not None and candidate.node != question.node)
            if elsewhere and equivalent(candidate, question) and not _same_answer(candidate, question):
                return Transfer(key, _in_this_program(candidate), program_source(key, seed))
    return None


def transfer_key(transfer: Transfer) -> str:
    """`transfer:<program>:<question key>`, what the server stores for a transfer question."""
    return f"{PREFIX}:{transfer.program}:{transfer.question.key}"


def question_for_transfer_key(key: str, seed: int | None = None) -> tuple[str, Question, str] | None:
    """The program, the question (its transfer prompt) and the program's code a stored `transfer_key` names, on the
    numbers of a class seeded `seed` (None: the lessons'); None for a key that is malformed, too long, or names no
    lesson program or no question of it."""
    if len(key) > MAX_KEY_CHARS:
        return None
    prefix, _, rest = key.partition(":")
    program, _, question_key = rest.partition(":")
    if prefix != PREFIX or program not in PROGRAMS or not question_key:
        return None
    found = next((q for q in program_questions(program, seed) if q.key == question_key), None)
    return None if found is None else (program, _in_this_program(found), program_source(program, seed))


def _in_this_program(question: Question) -> Question:
    """`What is z's gradient…?` -> `In this program, what is z's gradient…?` (the code is shown beside it)."""
    return replace(question, prompt=f"In this program, {question.prompt[:1].lower()}{question.prompt[1:]}")


def _same_answer(a: Question, b: Question) -> bool:
    if a.kind == "remaining":
        return a.names == b.names
    if a.values is None or b.values is None:
        return a.values is None and b.values is None  # None both: the revealed answer, repeated
    return a.values.shape == b.values.shape and bool(np.allclose(a.values, b.values))
