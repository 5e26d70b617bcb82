"""A recorded backward's questions, and each answer graded with the mistake it shows (class mode, issue 27).

The questions are the exercise's kinds: what a step sends to one of its inputs, what a leaf's gradient is after the
backward, which named tensors still hold a gradient. A wrong answer is matched against wrong answers worked out from
the graph itself, never written per program: a step's upstream gradient passed on without its local derivative, the
input's forward value instead of a gradient, the right value with the wrong sign, one path's contribution where a
leaf sums several, an intermediate or the loss expected to keep its gradient.

Each question says what it asks without ambiguity (a step that sends to one node through two operands, `x·x`, names
the operand), and carries its answer worked out in numbers for the reveal: a step's send as upstream × local
derivative (the stage's chain-rule card, `autodiff/stage/chain_rule.py`), a leaf's gradient as the sum of what each
path sent, in the order it arrived. Its `ops` and `mistakes` say what makes two questions equivalent (the transfer
question, `course/transfer.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Literal

import numpy as np

from autodiff import BackwardRecorder, GraphSnapshot, NodeSnapshot, Requirement
from autodiff.stage import ATOL, RTOL
from autodiff.stage.chain_rule import ELEMENTWISE, ORDINALS, StepCard, step_cards
from autodiff.stage.naming import constants_first, expressions, graph_names, op_kind
from autodiff.trace import GradientRegistered, StepStarted

ANSWER_CHARS = 2_000  # an answer box takes this much (the browser stops typing there; the server checks again)

MISTAKES = {  # group key -> what the teacher reads beside the group
    "no_local_derivative": "passed the upstream gradient on unchanged (forgot the local derivative)",
    "forward_value": "used the forward value instead of the gradient",
    "sign": "got the sign wrong",
    "one_path": "left out a path (forgot to add up the gradients of every path into it)",
    "kept_intermediate": "expected an intermediate or the loss to keep its gradient",
}

Kind = Literal["sends", "leaf_grad", "remaining"]

# the roles a named tensor plays in `remaining` (its `ops`): what decides whether it holds a gradient afterwards
ROLES = {
    "kept": "a leaf that asked for its gradient and got one (Grad)",
    "consumed": "an op's output, its gradient consumed during the backward (GradInBackward)",
    "unreached": "a leaf that asked for its gradient and that no path from the loss reaches",
    "untracked": "a tensor that never asked for a gradient (an input)",
}
SYMMETRIC = {"add", "mul"}  # ops whose operands have the same local derivative, up to naming: either operand is one


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
    worked: str = ""  # the answer worked out in numbers, read at the reveal
    # what the answer goes through: the sending step's op (`sub/1` where the operand matters), the op of each step
    # that sends to the leaf (sorted), or for `remaining` the roles the named tensors play (ROLES, sorted)
    ops: tuple[str, ...] = ()
    choices: frozenset[str] = frozenset()  # the named tensors a `remaining` answer picks among (no other is read)

    @property
    def mistakes(self) -> frozenset[str]:
        """The mistake classes a wrong answer can show here (keys of MISTAKES)."""
        shown = frozenset(m for m, _ in self.wrong)
        return (shown | {"kept_intermediate"}) if self.kind == "remaining" and self.intermediates else shown


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


def questions(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: Mapping[int, str],
    source: str | None = None,
    lines: Mapping[int, tuple[int, int]] | None = None,
) -> list[Question]:
    """Every question a recorded backward allows: each step's send to each input whose numbers a student can work
    out (whole arrays), each leaf's gradient, and which gradients remain. With the program's `source` and `lines`
    (NodeId -> the lines of the statement that made it), a node is named as the stage names it: `2·c` where the
    program wrote `2 * c`."""
    first = constants_first(before.nodes, source, lines)
    by_id = {int(n.id): n for n in before.nodes}
    named = graph_names(before.nodes, names, first)
    called = named.called  # what the stage calls each node
    exprs = expressions(before.nodes, names, first)  # `x·x`: a step's expression, where a prompt names its operand
    cards = step_cards(before, recorder, dict(names), named)
    events = recorder.events
    found: list[Question] = []
    totals: dict[int, np.ndarray] = {}  # each node's gradient entry so far
    arrived: dict[int, list[Arrival]] = {}  # what each node received, in order
    steps: dict[str, tuple[int, int]] = {}  # a `sends` question's key -> the step's node and the node sent to
    step: tuple[int, StepStarted] | None = None
    slot = 0
    for index, event in enumerate(events):
        if isinstance(event, StepStarted):
            step, slot = (index, event), 0
        elif isinstance(event, GradientRegistered) and isinstance(event.value, np.ndarray):
            node = int(event.node_id)
            sent_by_step = step is not None and event.source is not None and int(event.source) == int(step[1].node_id)
            sender = step if sent_by_step else None
            arrived.setdefault(node, []).append(_arrival(event, sender[1] if sender else None, slot, by_id, called))
            if sender is not None:
                at, started = sender
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
                        prompt=_sends_prompt(started, slot, by_id, called, exprs),
                        values=event.value,
                        names=frozenset(),
                        wrong=_usable(misreads, event.value),
                        intermediates=frozenset(),
                        worked=_worked_send(cards.get(at), slot, called[int(started.node_id)], event.value),
                        ops=(_op_of(started, slot, by_id),),
                    )
                )
                steps[f"sends:{at}:{slot}"] = (int(started.node_id), node)
                slot += 1
            if isinstance(event.total, np.ndarray):
                totals[node] = event.total
    end = len(events) - 1
    leaves = [n for n in before.nodes if n.requirement is Requirement.Grad and int(n.id) in totals]
    for leaf in leaves:
        node, total = int(leaf.id), totals[int(leaf.id)]
        paths = [a.value for a in arrived[node]]
        wrong: list[tuple[str, object]] = [("sign", -total), ("forward_value", leaf.value)]
        wrong += [("one_path", partial) for partial in _partial_sums(paths)]
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
                worked=_worked_sum(called[node], arrived[node], total),
                ops=tuple(sorted(a.op for a in arrived[node])),
            )
        )
    for leaf in before.nodes:  # a leaf that asked for its gradient and that no path from the loss reaches: None
        if leaf.requirement is Requirement.Grad and int(leaf.id) not in totals:
            name = called[int(leaf.id)]
            found.append(
                Question(
                    key=f"grad:{int(leaf.id)}",
                    kind="leaf_grad",
                    node=int(leaf.id),
                    event=end,
                    prompt=f"What is {name}'s gradient after the backward?",  # every leaf's words: no hint
                    values=None,
                    names=frozenset(),
                    wrong=(),
                    intermediates=frozenset(),
                    worked=(
                        f"{name}'s gradient is None: no path from the loss reaches {name} (the loss is not computed "
                        "from it), so no step sends it anything. None, not zeros: as in Burn and PyTorch."
                    ),
                )
            )
    roles = {name: _role(by_id[node_id], node_id in totals) for node_id, name in names.items() if node_id in by_id}
    kept = frozenset(name for name, role in roles.items() if role == "kept")
    held_none = frozenset(name for name, role in roles.items() if role == "consumed")
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
            worked=_worked_remaining(roles),
            ops=tuple(sorted(set(roles.values()))),
            choices=frozenset(roles),
        )
    )
    return _distinct(found, steps)


def _operand(started: StepStarted, slot: int, by_id: Mapping[int, NodeSnapshot]) -> int:
    """Which operand of the step's node its `slot`-th tracked input is (0 for the first): `x·x` sends x through
    operand 0, then through operand 1. A node the snapshot lacks: the slot itself."""
    node = by_id.get(int(started.node_id))
    parent = started.parents[slot] if slot < len(started.parents) else None
    if node is None or parent is None:
        return slot
    nth = started.parents[:slot].count(parent)  # the same node sent to earlier, through other operands
    positions = [k for k, input_id in enumerate(node.inputs) if input_id == parent]
    return positions[nth] if nth < len(positions) else slot


def _ordinal(k: int) -> str:
    return ORDINALS[k] if k < len(ORDINALS) else f"{k + 1}th"


def _sends_prompt(
    started: StepStarted,
    slot: int,
    by_id: Mapping[int, NodeSnapshot],
    called: Mapping[int, str],
    exprs: Mapping[int, str],
) -> str:
    """`What does the step of h send to x?`; where the step sends to that node through more than one operand,
    which one: `…, through the first operand of x·x?` (`…of h`, when its expression is too long to read)."""
    source, target = int(started.node_id), int(started.parents[slot])
    prompt = f"What does the step of {called[source]} send to {called[target]}"
    if started.parents.count(started.parents[slot]) < 2:
        return prompt + "?"
    expression = exprs.get(source, "")
    if not expression or expression.endswith("(…)"):  # too long to read: the step's own name
        expression = called[source]
    return f"{prompt}, through the {_ordinal(_operand(started, slot, by_id))} operand of {expression}?"


def _op_of(started: StepStarted, slot: int, by_id: Mapping[int, NodeSnapshot]) -> str:
    """The sending step's op as the send depends on it: with the operand where the operands' local derivatives
    differ (`sub/1`, `matmul/0`), and `broadcast` where an elementwise op's input was broadcast, so its send is
    summed back to its shape (`add broadcast`: a bias)."""
    op = op_kind(started.op)
    node, target = by_id.get(int(started.node_id)), by_id.get(int(started.parents[slot]))
    if node is None:
        return op
    label = op if op in SYMMETRIC or len(node.inputs) < 2 else f"{op}/{_operand(started, slot, by_id)}"
    broadcast = op in ELEMENTWISE and target is not None and target.shape != node.shape
    return f"{label} broadcast" if broadcast else label


@dataclass(frozen=True)
class Arrival:
    """One gradient a node received: its value, the path it came along (`from x·3`, `from h's first operand`), and
    the op of the step that sent it (as a `sends` question's `ops` names it)."""

    value: np.ndarray
    path: str
    op: str


def _arrival(
    event: GradientRegistered,
    started: StepStarted | None,
    slot: int,
    by_id: Mapping[int, NodeSnapshot],
    called: Mapping[int, str],
) -> Arrival:
    assert isinstance(event.value, np.ndarray)
    if event.source is None:
        return Arrival(event.value, "backward()'s seed", "seed")
    source = int(event.source)
    path = f"from {called.get(source, f'NodeId({source})')}"
    if started is not None and started.parents.count(event.node_id) > 1:
        path += f"'s {_ordinal(started.parents[:slot].count(event.node_id))} operand"
    if started is None:  # not sent by the running step: its op alone
        return Arrival(event.value, path, op_kind(by_id[source].op) if source in by_id else "?")
    return Arrival(event.value, path, _op_of(started, slot, by_id))


def _worked_send(card: StepCard | None, slot: int, step: str, sent: np.ndarray) -> str:
    """The step's chain rule in numbers, from the stage's card: upstream × local derivative = the send."""
    if card is None or slot >= len(card["inputs"]):
        return f"The step of {step} sends {_text(sent)}."
    given = card["inputs"][slot]
    start = f"The step of {card['title']} sends {given['input']}"
    if given["derivative"]:
        return f"{start} its upstream gradient times the local derivative {given['derivative']}: {given['product']}."
    return f"{start} by its rule, {given['rule']}, where grad is the gradient it received: {given['product']}."


def _worked_sum(name: str, arrived: list[Arrival], total: np.ndarray) -> str:
    """`x's gradient is the sum of what each of its 3 paths sends, …: [3.0, 3.0] + [1.0, 2.0] + [1.0, 2.0] =
    [5.0, 7.0].`, the terms in the order they arrived; a single path: what it sent."""
    if len(arrived) == 1:
        return f"{name}'s gradient comes along one path only, {arrived[0].path}: {_text(total)}."
    paths = ", ".join(a.path for a in arrived)
    terms = " + ".join(_text(a.value) for a in arrived)
    return (
        f"{name}'s gradient is the sum of what each of its {len(arrived)} paths sends, in the order they arrived "
        f"({paths}): {terms} = {_text(total)}."
    )


def _role(node: NodeSnapshot, reached: bool) -> str:
    """The role a named tensor plays in `remaining` (a key of ROLES)."""
    if node.requirement is Requirement.Grad:
        return "kept" if reached else "unreached"
    return "consumed" if node.requirement is Requirement.GradInBackward else "untracked"


def _worked_remaining(roles: Mapping[str, str]) -> str:
    """Why each named tensor holds a gradient after the backward, or none."""
    by_role = {role: sorted(name for name, r in roles.items() if r == role) for role in ROLES}
    kept, consumed = by_role["kept"], by_role["consumed"]
    unreached, untracked = by_role["unreached"], by_role["untracked"]
    said = []
    if kept:
        said.append(
            f"{_and(kept)} keeps its gradient: a leaf that asked for one (Grad), so the container keeps its entry."
            if len(kept) == 1
            else f"{_and(kept)} keep their gradients: leaves that asked for one (Grad), so the container keeps their "
            "entries."
        )
    if consumed:
        said.append(
            f"{_and(consumed)} {'holds' if len(consumed) == 1 else 'hold'} none: each is an op's output "
            "(GradInBackward), and its step consumed its gradient during the backward, once it had sent its inputs "
            "their share."
        )
    if unreached:
        them = "it" if len(unreached) == 1 else "them"
        said.append(f"{_and(unreached)} asked for one, but no path from the loss reaches {them}: none was sent.")
    if untracked:
        said.append(f"{_and(untracked)} never asked for a gradient (an input): none was sent.")
    return " ".join(said) or "No named tensor holds a gradient."


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _distinct(found: list[Question], steps: Mapping[str, tuple[int, int]]) -> list[Question]:
    """Prompts that still read the same (two nodes of one name) say which nodes they mean; the others stay."""
    count: dict[str, int] = {}
    for q in found:
        count[q.prompt] = count.get(q.prompt, 0) + 1

    def which(q: Question) -> str:
        if q.key in steps:
            source, target = steps[q.key]
            return f"{q.prompt} (from NodeId({source}) to NodeId({target}))"
        return f"{q.prompt} (NodeId({q.node}))"

    return [replace(q, prompt=which(q)) if count[q.prompt] > 1 else q for q in found]


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
    if given - question.choices:  # not an answer: never stored, so never counted or shown to the room
        among = ", ".join(sorted(question.choices))  # what was typed is not said back: it may be anything
        return Graded(None, None, f"Only this question's tensors are read: {among}, or none.")
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
    """The numbers in their shape (`[[1.0]]` for a 1x1 matrix), as the worked answer's chain rule prints them."""
    rounded = np.round(np.atleast_1d(np.asarray(value, dtype=np.float64)), 6) + 0.0  # + 0.0: -0.0 reads 0.0
    return str(rounded.tolist())
