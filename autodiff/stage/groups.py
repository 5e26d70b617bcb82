"""A big graph folded into the program's own parts: loops and their iterations, the functions that ran, explicit
scopes and statements, kept as a tree (torchvista's idea). The browser draws a group folded, as one box, or unfolded
in place, and lays out only what is drawn, so a 5,000-node graph opens as a dozen boxes.

The tree comes from each node's `group` path (what made it, recorded by `autodiff.structure`), then:
- the frames every node shares are left out (the function that built the whole graph is not a part of it);
- a group of one node is that node;
- a level with many nodes of its own groups each statement's nodes (the program's lines);
- an input (a leaf) only one part uses goes into it, but a parameter stays where it was made (a folded layer leaves
  its weights drawn beside it), and a leaf made in one iteration for the next (a training loop's fresh `w`) goes into
  the iteration that uses it;
- consecutive groups of the same shape (the same ops in the same order) fold into one box with a count;
- a level with more than `MAX_CHILDREN` boxes splits into ranges, so no unfolded group lists more.

For a replay, each group's *runs*: the steps the tape runs one after another inside it. A folded group runs as one
press per run; its card says what came into it and what it sent out, added up in Python from the engine's values.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np

from autodiff import BackwardRecorder, NodeSnapshot, Requirement
from autodiff.trace import BackwardFinished, GradientConsumed, GradientRegistered, StepStarted, SweepFreed

from .format import ArrayTexts, TensorNumbers, compact
from .naming import name_or_id, op_kind

SMALL_GRAPH = 8  # a graph this small is drawn whole: groups appear where they help (an explicit scope still shows)
MAX_CHILDREN = 16  # an unfolded group shows at most this many boxes; a longer list splits into ranges
LINE_GROUPS_ABOVE = 8  # a level with more nodes of its own than this groups each statement's nodes
MIN_LINE_GROUP = 3  # a statement's nodes make a group from this many
MIN_REPEAT = 3  # this many consecutive groups of one shape fold into one box with a count
NO_USERS: frozenset[int] = frozenset()  # the users of a node nothing uses (no new empty set per look-up)

GroupKind = Literal["function", "loop", "iteration", "scope", "line", "repeat", "range"]


class GroupFlow(TypedDict):
    node: int
    name: str
    value: str  # added up over the run, compact
    value_range: TensorNumbers | None  # its numbers for a folded view's summary (format.tensor_range)


class GroupRun(TypedDict):
    first: int  # the event index of its first step's StepStarted
    last: int  # the last event of its last step
    steps: int
    came_in: list[GroupFlow]  # the gradients its steps consumed that came from outside it
    sent: list[GroupFlow]  # what it sent to each node outside it and to each leaf (kept in its container), added up


class StageGroup(TypedDict):
    element: str  # `g3`: its box, or its frame when unfolded
    name: str  # `for i in range(30)`, `i = 3`, `layer1`, `line 4: loss = …`, `i = 1 … 29`
    kind: GroupKind
    parent: str  # the element of the group around it; "" at the top
    summary: str  # its second line: `8 ops`, `30 iterations, the same 8 ops each`
    output: int  # the NodeId whose value, gradient and state the folded box shows
    nodes: int  # how many nodes it holds, at any depth
    steps: int  # how many of them have a step in a backward
    lines: tuple[int, int] | None  # the program lines its nodes came from
    runs: list[GroupRun]


@dataclass(eq=False)
class _Group:
    kind: GroupKind
    name: str
    key: str = ""
    children: list[_Group | int] = field(default_factory=list)  # NodeIds and groups, in the order they were made
    summary: str = ""

    def node_ids(self) -> list[int]:
        out: list[int] = []
        for child in self.children:
            out.extend(child.node_ids() if isinstance(child, _Group) else [child])
        return out


def group_tree(
    nodes: Sequence[NodeSnapshot],
    spans: Mapping[int, tuple[int, int]] | None = None,
    source: str | None = None,
    called: Mapping[int, str] | None = None,
) -> tuple[list[StageGroup], dict[int, str]]:
    """The groups of `nodes` (outer before inner, each after its parent) and each node's innermost group ("" at the
    top). `spans` (NodeId -> the lines of its statement) with the program's `source` names statement groups;
    `called` (what sentences call each node) names a range of nodes by its first and last."""
    if len(nodes) <= SMALL_GRAPH and not any(f.kind == "scope" for n in nodes for f in n.group):
        return [], {}
    by_id = {int(n.id): n for n in nodes}
    root = _build(nodes)
    _dissolve_single_nodes(root)
    statements = source.splitlines() if source else []
    users: dict[int, set[int]] = {}
    for node in nodes:
        for input_id in node.inputs:
            users.setdefault(int(input_id), set()).add(int(node.id))
    _by_statements(root, spans or {}, statements)
    _adopt_inputs(root, by_id, users)
    _fold(root, by_id, called or {})
    groups: list[StageGroup] = []
    node_group: dict[int, str] = {}

    def emit(group: _Group, parent: str) -> None:
        for child in group.children:
            if isinstance(child, int):
                node_group[child] = parent
                continue
            element = f"g{len(groups)}"
            inside = child.node_ids()
            members = set(inside)
            leaving = [n for n in inside if not users.get(n, NO_USERS) <= members]
            output = max(leaving) if leaving else max(inside)
            # the lines of its ops (an input it holds may be written far away, as a layer's weights are)
            lines = [spans[n] for n in inside if spans and n in spans and by_id[n].inputs]
            ops = sum(1 for n in inside if by_id[n].inputs)
            steps = sum(1 for n in inside if by_id[n].requirement is Requirement.GradInBackward)
            groups.append(
                StageGroup(
                    element=element,
                    name=child.name,
                    kind=child.kind,
                    parent=parent,
                    summary=child.summary or _ops(ops, len(inside)),
                    output=output,
                    nodes=len(inside),
                    steps=steps,
                    lines=(min(s[0] for s in lines), max(s[1] for s in lines)) if lines else None,
                    runs=[],
                )
            )
            emit(child, element)

    emit(root, "")
    return groups, node_group


def _ops(count: int, nodes: int = 0) -> str:
    """`8 ops`; a part that holds leaves alone (a layer's weights, made in its `__init__`): `4 leaves`."""
    if not count and nodes:
        return f"{nodes} lea" + ("f" if nodes == 1 else "ves")
    return f"{count} op" + ("" if count == 1 else "s")


def _build(nodes: Sequence[NodeSnapshot]) -> _Group:
    """The tree as recorded: consecutive nodes with the same frame at a depth share that group."""
    ordered = sorted(nodes, key=lambda n: int(n.id))
    paths = [n.group for n in ordered]
    common = 0
    if paths and all(paths):
        shortest = min(len(p) for p in paths)
        while common < shortest and len({p[common].key for p in paths}) == 1:
            common += 1
    root = _Group("scope", "")
    chain: list[_Group] = []
    for node, path in zip(ordered, paths, strict=True):
        frames = path[common:]
        depth = 0
        while depth < min(len(chain), len(frames)) and chain[depth].key == frames[depth].key:
            depth += 1
        del chain[depth:]
        for frame in frames[depth:]:
            group = _Group(frame.kind, frame.name, frame.key)
            (chain[-1] if chain else root).children.append(group)
            chain.append(group)
        (chain[-1] if chain else root).children.append(int(node.id))
    return root


def _dissolve_single_nodes(group: _Group) -> None:
    """A group that holds one node is that node; a group that holds one group is that group, but for a call whose
    body is one loop: the call keeps its name and holds the loop's iterations (`MLP 1` holds `Layer 1`, `Layer 2`,
    not `for layer in self.layers`)."""
    for k, child in enumerate(group.children):
        if isinstance(child, _Group):
            _dissolve_single_nodes(child)
            if len(child.children) == 1:
                only = child.children[0]
                if isinstance(only, _Group) and child.kind == "function" and only.kind == "loop":
                    child.children = only.children
                else:
                    group.children[k] = only


def _by_statements(group: _Group, spans: Mapping[int, tuple[int, int]], statements: list[str]) -> None:
    """At every level with many nodes of its own, each statement's nodes become a group."""
    for child in group.children:
        if isinstance(child, _Group):
            _by_statements(child, spans, statements)
    if sum(1 for c in group.children if isinstance(c, int)) > LINE_GROUPS_ABOVE and spans:
        group.children = _by_statement(group.children, spans, statements)


def _adopt_inputs(root: _Group, by_id: Mapping[int, NodeSnapshot], users: Mapping[int, set[int]]) -> None:
    """An input (a leaf) that only one part uses goes into that part: the deepest group around every node that uses
    it, below the one it was made in; but a parameter (a leaf that asked for its gradient: a layer's weights, a
    neuron's) stays where it was made, so the part folded still shows what the student asks about and what the
    part sends it. A leaf made in one iteration of a loop for a later one (a training loop's `w =
    Tensor.from_inner(...)` at its end) goes into the iteration that uses it: the iterations are not chained."""
    chains: dict[int, list[_Group]] = {}

    def walk(group: _Group, chain: list[_Group]) -> None:
        for child in group.children:
            if isinstance(child, _Group):
                walk(child, [*chain, child])
            else:
                chains[child] = chain

    walk(root, [root])
    for node_id, chain in list(chains.items()):
        using = users.get(node_id)
        if by_id[node_id].inputs or not using or any(u not in chains for u in using):
            continue
        common = chains[next(iter(using))]
        for user in using:
            other = chains[user]
            k = 0
            while k < min(len(common), len(other)) and common[k] is other[k]:
                k += 1
            common = common[:k]
        if _next_iterations_input(by_id[node_id], common):
            chain[-1].children.remove(node_id)
            common[-1].children.insert(0, node_id)
            chains[node_id] = common
            continue
        if by_id[node_id].requirement is Requirement.Grad:
            continue
        inside = common[len(chain) :]
        if not inside or common[: len(chain)] != chain:  # it goes only deeper, inside where it was made
            continue
        if any(group.kind in ("loop", "iteration") for group in inside):  # a loop's first input stays outside it
            continue
        chain[-1].children.remove(node_id)
        common[-1].children.insert(0, node_id)
        chains[node_id] = common


def _next_iterations_input(leaf: NodeSnapshot, users_groups: list[_Group]) -> bool:
    """Whether `leaf` was made in one iteration of a loop and is used only inside another iteration of that loop."""
    made_in = {frame.key for frame in leaf.group}
    return any(
        group.kind == "iteration" and group.key not in made_in and group.key.rpartition("/")[0] in made_in
        for group in users_groups
    )


def _fold(group: _Group, by_id: Mapping[int, NodeSnapshot], called: Mapping[int, str]) -> None:
    """Repeats into one box with a count, then long levels into ranges, from the inside out."""
    for child in group.children:
        if isinstance(child, _Group):
            _fold(child, by_id, called)
    group.children = _repeats(group, by_id)
    for child in group.children:
        if isinstance(child, _Group) and child.kind == "repeat":
            _split(child, called)
    _split(group, called)


def _by_statement(
    children: list[_Group | int], spans: Mapping[int, tuple[int, int]], statements: list[str]
) -> list[_Group | int]:
    """Consecutive nodes of one statement, `MIN_LINE_GROUP` or more, as a group named by its line."""
    out: list[_Group | int] = []
    run: list[int] = []

    def close() -> None:
        if len(run) >= MIN_LINE_GROUP:
            first = spans[run[0]][0]
            text = statements[first - 1].strip() if 0 < first <= len(statements) else ""
            text = text if len(text) <= 40 else text[:39] + "…"
            out.append(_Group("line", f"line {first}: {text}" if text else f"line {first}", children=list(run)))
        else:
            out.extend(run)
        run.clear()

    for child in children:
        span = spans.get(child) if isinstance(child, int) else None
        if span is None or (run and spans[run[0]] != span):
            close()
        if span is None:
            out.append(child)
        else:
            run.append(child)  # type: ignore[arg-type]  # a node: its span is known
    close()
    return out


def _shape(child: _Group | int, by_id: Mapping[int, NodeSnapshot]) -> tuple[object, ...] | str:
    if isinstance(child, int):
        return op_kind(by_id[child].op)
    return (child.kind, tuple(_shape(c, by_id) for c in child.children))


def _repeats(group: _Group, by_id: Mapping[int, NodeSnapshot]) -> list[_Group | int]:
    """Consecutive groups of one shape: one box with a count (or, when they are all the group holds, its
    summary says so)."""
    children = group.children
    shapes = [_shape(c, by_id) if isinstance(c, _Group) else None for c in children]
    out: list[_Group | int] = []
    k = 0
    while k < len(children):
        end = k + 1
        while shapes[k] is not None and end < len(children) and shapes[end] == shapes[k]:
            end += 1
        run = children[k:end]
        if end - k >= MIN_REPEAT:
            first, last = run[0], run[-1]
            assert isinstance(first, _Group) and isinstance(last, _Group)
            each = _ops(sum(1 for n in first.node_ids() if by_id[n].inputs), len(first.node_ids()))
            summary = f"{len(run)} × the same {each}"
            if len(run) == len(children):
                group.summary = f"{_count(first, last, len(run))}, the same {each} each"
                return children
            out.append(
                _Group("repeat", _span_name(first.name, last.name, len(run)), children=list(run), summary=summary)
            )
        else:
            out.extend(run)
        k = end
    return out


def _count(first: _Group, last: _Group, count: int) -> str:
    if first.kind == "function":  # one function's calls, or methods of several objects (`Neuron 1 … 4`)
        return f"{count} calls of {first.name}" if first.name == last.name else _span_name(first.name, last.name, count)
    return f"{count} iterations" if first.kind == "iteration" else f"{count} parts"


NUMBERED = re.compile(r"^(.*?)(-?\d+)$")


def _span_name(first: str, last: str, count: int) -> str:
    """`i = 1 … 29` from `i = 1` and `i = 29`; else `layer × 3`."""
    a, b = NUMBERED.match(first), NUMBERED.match(last)
    if a and b and a.group(1) == b.group(1):
        return f"{a.group(1)}{a.group(2)} … {b.group(2)}"
    return f"{first} … {last}" if first != last else f"{first} × {count}"


def _split(group: _Group, called: Mapping[int, str]) -> None:
    """More than `MAX_CHILDREN` boxes: at most that many consecutive ranges, each a group, split again if long."""
    children = group.children
    if len(children) <= MAX_CHILDREN:
        return
    size = -(-len(children) // MAX_CHILDREN)
    chunks = [children[k : k + size] for k in range(0, len(children), size)]
    group.children = []
    for chunk in chunks:
        if len(chunk) == 1:
            group.children.append(chunk[0])
            continue
        part = _Group("range", _range_name(chunk, called), children=chunk)
        _split(part, called)
        group.children.append(part)


def _range_name(chunk: list[_Group | int], called: Mapping[int, str]) -> str:
    """`i = 0 … 9` for iterations; else by the first and last of what it holds: `w1 … tanh(x @ w1)`."""
    first, last = chunk[0], chunk[-1]
    if isinstance(first, _Group) and isinstance(last, _Group):
        return _span_name(first.name, last.name, len(chunk))

    def name(child: _Group | int) -> str:
        text = child.name if isinstance(child, _Group) else name_or_id(called, child)
        return text if len(text) <= 24 else text[:23] + "…"

    return f"{name(first)} … {name(last)}"


def group_runs(
    groups: list[StageGroup],
    node_group: Mapping[int, str],
    recorder: BackwardRecorder,
    called: Mapping[int, str],
    texts: ArrayTexts | None = None,
) -> None:
    """Fill each group's `runs`: the steps the tape runs one after another inside it, with what came in and went
    out, added up from the engine's own values (`texts` writes a sum's numbers and sends them, each different one
    once)."""
    texts = texts if texts is not None else ArrayTexts()
    parent = {g["element"]: g["parent"] for g in groups}
    index = {g["element"]: g for g in groups}

    def ancestors(node_id: int) -> list[str]:
        out, element = [], node_group.get(node_id, "")
        while element:
            out.append(element)
            element = parent[element]
        return out

    around = {node_id: ancestors(node_id) for node_id in node_group}  # each node's groups, innermost first
    members: dict[str, set[int]] = {}
    for node_id, elements in around.items():
        for element in elements:
            members.setdefault(element, set()).add(node_id)
    events = recorder.events
    received: dict[int, list[tuple[int | None, object]]] = {}  # node -> (source, value) of every gradient it got
    sends: list[tuple[int, int, int, object]] = []  # (event index, source, node, value) of every gradient sent
    step_at: list[tuple[int, int]] = []  # (event index, node) of each step
    ends: list[int] = []
    for k, event in enumerate(events):
        if isinstance(event, StepStarted):
            if step_at and len(ends) < len(step_at):
                ends.append(k - 1)
            step_at.append((k, int(event.node_id)))
        elif isinstance(event, SweepFreed | BackwardFinished) and len(ends) < len(step_at):
            ends.append(k - 1)
        elif isinstance(event, GradientRegistered):
            source = None if event.source is None else int(event.source)
            received.setdefault(int(event.node_id), []).append((source, event.value))
            if source is not None:
                sends.append((k, source, int(event.node_id), event.value))
    if len(ends) < len(step_at):
        ends.append(len(events) - 1)
    # a leaf that asked for its gradient keeps what it gets: sent to it is sent out of the part, even from inside
    kept = {int(e.node_id) for e in events if isinstance(e, GradientConsumed) and e.kept}
    sent_at = [k for k, *_ in sends]
    open_runs: dict[str, tuple[int, list[int]]] = {}  # group -> (the step index its run ended at, its steps)
    runs: dict[str, list[list[int]]] = {}
    for s, (_, node_id) in enumerate(step_at):
        for element in around.get(node_id, []):
            current = open_runs.get(element)
            if current is not None and current[0] == s - 1:
                current[1].append(s)
                open_runs[element] = (s, current[1])
            else:
                steps = [s]
                runs.setdefault(element, []).append(steps)
                open_runs[element] = (s, steps)
    for element, group_runs_ in runs.items():
        inside = members[element]
        for steps in group_runs_:
            first, last = step_at[steps[0]][0], ends[steps[-1]]
            came: dict[int, list[object]] = {}
            for s in steps:
                node_id = step_at[s][1]
                for source, value in received.get(node_id, []):
                    if source is None or source not in inside:
                        came.setdefault(node_id, []).append(value)
            sent: dict[int, list[object]] = {}
            # the gradients sent between the run's first event and its last, found by bisection: a walk over all
            # of them for each run of each group is the events times the groups' depth
            for _, source, node_id, value in sends[bisect_left(sent_at, first) : bisect_right(sent_at, last)]:
                if source in inside and (node_id not in inside or node_id in kept):
                    sent.setdefault(node_id, []).append(value)
            index[element]["runs"].append(
                GroupRun(
                    first=first,
                    last=last,
                    steps=len(steps),
                    came_in=[_flow(n, called, values, texts) for n, values in came.items()],
                    sent=[_flow(n, called, values, texts) for n, values in sent.items()],
                )
            )


def _flow(node_id: int, called: Mapping[int, str], values: list[object], texts: ArrayTexts) -> GroupFlow:
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    if len(arrays) == len(values):
        total = arrays[0]  # each sum is a new array: the recorded one is read, never changed
        for array in arrays[1:]:
            total = total + array
        text, numbers = compact(total, texts), texts.numbers(total)
    else:  # a large value that came back from a worker as a preview: only its parts can be shown
        text, numbers = " + ".join(compact(v, texts) for v in values), None  # type: ignore[arg-type]
    return GroupFlow(node=node_id, name=name_or_id(called, node_id), value=text, value_range=numbers)
