"""A recorded backward's questions, and each answer graded with the mistake it shows (class mode, issue 27).

The questions are the exercise's kinds: what a step sends to one of its inputs, what a leaf's gradient is after the
backward, which named tensors still hold a gradient. A wrong answer is matched against wrong answers worked out from
the graph itself, never written per program: a step's upstream gradient passed on without its local derivative, the
input's forward value instead of a gradient, the right value with the wrong sign, one path's contribution where a
leaf sums several, an intermediate or the loss expected to keep its gradient.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from autodiff import BackwardRecorder, GraphSnapshot, Requirement
from autodiff.stage import ATOL, RTOL
from autodiff.stage.narration import short_names
from autodiff.trace import GradientRegistered, StepStarted

ANSWER_CHARS = 2_000  # an answer box takes this much (the browser stops typing there; the server checks again)

MISTAKES = {  # group key -> what the teacher reads beside the group
    "no_local_derivative": "passed the upstream gradient on unchanged (forgot the local derivative)",
    "forward_value": "used the forward value instead of the gradient",
    "sign": "got the sign wrong",
    "one_path": "counted one path only (forgot to add the gradients of the other paths)",
    "kept_intermediate": "expected an intermediate or the loss to keep its gradient",
}

Kind = Literal["sends", "leaf_grad", "remaining"]


@dataclass(frozen=True)
class Question:
    key: str  # stable across runs of one program: `sends:<event>:<input slot>`, `grad:<node id>`, `remaining`
    kind: Kind
    node: int | None  # the node the answer is about (the input sent to, the leaf), None for `remaining`
    event: int  # where it is asked: the step's StepStarted, or the backward's last event
    prompt: str
    values: np.ndarray | None  # the right numbers (None for `remaining`, and for a leaf no path reaches: its grad)
    names: frozenset[str]  # the right names (for `remaining`)
    # (mistake, the value it gives), fewest slips first (sign, forward value, paths, local derivative): the first wins
    wrong: tuple[tuple[str, np.ndarray], ...]
    intermediates: frozenset[str]  # named op outputs, the loss among them: none keeps a gradient (`remaining`)


@dataclass(frozen=True)
class Graded:
    right: bool | None  # None: not an answer (not numbers, too long)
    mistake: str | None  # a key of MISTAKES, when the answer shows one
    words: str


def parse_numbers(text: str, limit: int = ANSWER_CHARS) -> list[float] | None:
    """'1, 2.5' or '[1, 2.5]' as numbers; None when it is not a list of numbers, or longer than `limit`."""
    if len(text) > limit:  # refused before anything is split or converted
        return None
    if "_" in text:  # Python reads 1_0 as 10; the browser's Number() does not read it at all
        return None
    text = text.replace("−", "-")  # the minus sign the chain-rule cards print
    cleaned = text.replace("[", " ").replace("]", " ").replace(",", " ").split()
    try:
        values = [float(v) for v in cleaned]
    except ValueError:
        return None
    return values if values and all(np.isfinite(values)) else None  # nan and inf are not answers


def matches(expected: np.ndarray, answer: str, limit: int = ANSWER_CHARS) -> bool | None:
    """True or False against `expected` (within the stage's tolerance); None when the answer is not numbers."""
    values = parse_numbers(answer, limit)
    if values is None:
        return None
    return _close(np.array(values), expected)


def questions(before: GraphSnapshot, recorder: BackwardRecorder, names: Mapping[int, str]) -> list[Question]:
    """Every question a recorded backward allows: each step's send to each input whose numbers a student can work
    out (whole arrays), each leaf's gradient, and which gradients remain."""
    by_id = {int(n.id): n for n in before.nodes}
    called = short_names(before.nodes, names)  # what the stage calls each node
    events = recorder.events
    found: list[Question] = []
    totals: dict[int, np.ndarray] = {}  # each node's gradient entry so far
    contributions: dict[int, list[np.ndarray]] = {}
    step: tuple[int, StepStarted] | None = None
    slot = 0
    for index, event in enumerate(events):
        if isinstance(event, StepStarted):
            step, slot = (index, event), 0
        elif isinstance(event, GradientRegistered) and isinstance(event.value, np.ndarray):
            node = int(event.node_id)
            contributions.setdefault(node, []).append(event.value)
            if step is not None and event.source is not None and int(event.source) == int(step[1].node_id):
                at, started = step
                upstream = totals.get(int(started.node_id))
                if upstream is not None and upstream.size == 1:  # a sum's or mean's scalar, spread over the input
                    upstream = np.broadcast_to(upstream.reshape(()), event.value.shape)
                forward = by_id[node].value if node in by_id else None
                misreads: list[tuple[str, object]] = [
                    ("sign", -event.value),
                    ("forward_value", forward),
                    ("no_local_derivative", upstream),
                ]
                found.append(
                    Question(
                        key=f"sends:{at}:{slot}",
                        kind="sends",
                        node=node,
                        event=at,
                        prompt=f"What does the step of {called[int(started.node_id)]} send to {called[node]}?",
                        values=event.value,
                        names=frozenset(),
                        wrong=_usable(misreads, event.value),
                        intermediates=frozenset(),
                    )
                )
                slot += 1
            if isinstance(event.total, np.ndarray):
                totals[node] = event.total
    end = len(events) - 1
    leaves = [n for n in before.nodes if n.requirement is Requirement.Grad and int(n.id) in totals]
    for leaf in leaves:
        node, total = int(leaf.id), totals[int(leaf.id)]
        wrong: list[tuple[str, object]] = [("sign", -total), ("forward_value", leaf.value)]
        wrong += [("one_path", partial) for partial in _partial_sums(contributions[node])]
        found.append(
            Question(
                key=f"grad:{node}",
                kind="leaf_grad",
                node=node,
                event=end,
                prompt=f"What is {called[node]}'s gradient after the backward?",
                values=total,
                names=frozenset(),
                wrong=_usable(wrong, total),
                intermediates=frozenset(),
            )
        )
    for leaf in before.nodes:  # a leaf that asked for its gradient and that no path from the loss reaches: None
        if leaf.requirement is Requirement.Grad and int(leaf.id) not in totals:
            found.append(
                Question(
                    key=f"grad:{int(leaf.id)}",
                    kind="leaf_grad",
                    node=int(leaf.id),
                    event=end,
                    prompt=f"What is {called[int(leaf.id)]}'s gradient after the backward? (numbers, or None)",
                    values=None,
                    names=frozenset(),
                    wrong=(),
                    intermediates=frozenset(),
                )
            )
    kept = frozenset(names[int(n.id)] for n in leaves if int(n.id) in names)
    held_none = frozenset(
        name
        for node_id, name in names.items()
        if node_id in by_id and by_id[node_id].requirement is Requirement.GradInBackward
    )
    found.append(
        Question(
            key="remaining",
            kind="remaining",
            node=None,
            event=end,
            values=None,
            names=kept,
            wrong=(),
            prompt="Which of the named tensors still hold a gradient after the backward? (names, or none)",
            intermediates=held_none,
        )
    )
    return found


def _partial_sums(paths: list[np.ndarray], most: int = 8) -> list[np.ndarray]:
    """The sums a student gets who forgets some of the paths into a leaf: one path dropped first, then two, ...
    (a leaf with more than `most` paths: one dropped only)."""
    k = len(paths)
    if k < 2:
        return []
    kept_sizes = range(k - 1, 0, -1) if k <= most else [k - 1]
    zero = np.zeros_like(paths[0])
    return [sum((paths[i] for i in kept), zero) for size in kept_sizes for kept in combinations(range(k), size)]


def grade(question: Question, answer: str, limit: int = 200) -> Graded:
    """Whether `answer` is right, and when it is wrong, the mistake it shows (the first listed when two mistakes
    give the same value)."""
    if len(answer) > limit:
        return Graded(None, None, f"That answer is longer than {limit} characters: it was not read.")
    if question.kind == "remaining":
        return _grade_names(question, answer)
    if question.values is None:  # a leaf the backward never reaches
        if answer.strip().lower() == "none":
            return Graded(True, None, "Right.")
        if parse_numbers(answer, limit) is None:
            return Graded(None, None, "That is neither None nor a list of numbers, such as 1.0, 2.0.")
        return Graded(False, None, "Not a gradient: no path from the loss reaches this leaf, so it has none (None).")
    if answer.strip().lower() == "none":  # read, and wrong: a gradient does arrive here
        arrives = "This step does send a gradient there." if question.kind == "sends" else "This leaf does get one."
        return Graded(False, None, f"Not None: {arrives}")
    values = parse_numbers(answer, limit)
    if values is None:
        return Graded(None, None, "That is not a list of numbers, such as 1.0, 2.0.")
    given = np.array(values)
    if _close(given, question.values):
        return Graded(True, None, "Right.")
    for mistake, value in question.wrong:
        if _close(given, value):
            return Graded(False, mistake, f"{MISTAKES[mistake].capitalize()}: {_text(value)}.")
    return Graded(False, None, f"Not {_text(question.values)}, and no mistake the graph explains.")


def right_answer(question: Question) -> str:
    """The right answer as a student would type it."""
    if question.kind == "remaining":
        return ", ".join(sorted(question.names)) or "none"
    return "None" if question.values is None else _text(question.values)


def _grade_names(question: Question, answer: str) -> Graded:
    given = frozenset(_names(answer))
    if given == question.names:
        return Graded(True, None, "Right.")
    if given & question.intermediates:
        return Graded(False, "kept_intermediate", f"{MISTAKES['kept_intermediate'].capitalize()}.")
    return Graded(False, None, "Not the leaves that asked for their gradient.")


def _names(answer: str) -> Iterable[str]:
    words = answer.replace(",", " ").split()
    return [] if [w.lower() for w in words] == ["none"] else words


def _usable(wrong: list[tuple[str, object]], right: np.ndarray) -> tuple[tuple[str, np.ndarray], ...]:
    """The mistakes that give a value a student could type and that differ from the right one."""
    return tuple(
        (m, v) for m, v in wrong if isinstance(v, np.ndarray) and v.size == right.size and not _close(v, right)
    )


def _close(given: np.ndarray, expected: np.ndarray) -> bool:
    flat = np.ravel(expected)
    return given.size == flat.size and bool(np.allclose(np.ravel(given), flat, rtol=RTOL, atol=ATOL))


def _text(value: np.ndarray) -> str:
    return str([round(float(v), 6) for v in np.ravel(value)])
