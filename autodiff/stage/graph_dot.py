"""A snapshot as a picture: what each node says (its name or expression, its value, its gradient) and its state,
and the words a node's gradient line says. The DOT is the stage's alone (js/model/dot.mjs): it writes the DOT of
what it draws, folded parts and all, and offers that text as the download. Colours live in the stage's stylesheet
(`palette.py`), so the picture follows the viewer's theme; node and edge element ids (`n3`, `e0_2_1`) are made here
and nowhere else (groups' in `groups.py`): the payload and the stage read them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from autodiff import GraphSnapshot, NodeSnapshot, NodeStatus, Requirement
from autodiff.stage.naming import labels

from .format import ArrayTexts, TensorNumbers, brief, compact, format_bytes, tensor_range

SIZES = {False: (17, 15, 12), True: (24, 21, 17)}  # (title, value and gradient, detail) in points, by presenter


class HeldGradient(NamedTuple):
    """A gradient the container beside a picture holds, as its leaf says it."""

    text: str  # `[5.0, 7.0]`
    range: TensorNumbers | None  # its numbers for a folded view's summary (format.tensor_range)


@dataclass(frozen=True)
class Overlay:
    """What to draw on top of a snapshot: where a backward was refused, the cross-check's verdicts."""

    refused: int | None = None
    verdicts: dict[int, bool] = field(default_factory=dict)  # cross-check: True agrees, False differs
    # the Gradients container beside the picture, NodeId -> its entry as a node shows it: a leaf that asked for its
    # gradient then says what the table says (`grad [5.0, 7.0] · kept`, or no gradient); None: no container shown
    gradients: dict[int, HeldGradient] | None = None


@dataclass(frozen=True)
class PictureNode:
    id: int
    element: str  # its element id in the SVG
    title: str  # `h = x·x`, `x·3`, `x`
    value: str  # `value [1.0, 4.0]`
    value_range: TensorNumbers | None  # the value's numbers for a folded view's summary (format.tensor_range)
    grad: str  # the gradient line as first drawn (the stage rewrites it as the replay goes)
    grad_range: TensorNumbers | None  # the numbers of the gradient it says, if any
    detail: str  # `NodeId(2) · mul`, smaller
    state: str  # a key of `palette.STATES`


@dataclass(frozen=True)
class PictureEdge:
    element: str
    tracked: bool  # a gradient can flow along it
    source: int  # node ids: the input, and the node that uses it
    target: int


@dataclass(frozen=True)
class Picture:
    nodes: tuple[PictureNode, ...]
    edges: tuple[PictureEdge, ...]


def held_gradients(entries: Mapping[int, Any] | None) -> dict[int, HeldGradient] | None:
    """`Overlay.gradients` from a container's entries (NodeId -> values); None when there is no container."""
    if entries is None:
        return None
    return {int(node_id): HeldGradient(compact(values), tensor_range(values)) for node_id, values in entries.items()}


def node_state(node: NodeSnapshot, overlay: Overlay) -> str:
    """The state a static picture shows for a node (a replay starts from these and moves on)."""
    if node.id == overlay.refused:
        return "refused"
    verdict = overlay.verdicts.get(int(node.id))
    if verdict is not None:
        return "agrees" if verdict else "differs"
    if node.requirement is Requirement.Untracked:
        return "untracked"
    if node.status is NodeStatus.ABANDONED:
        return "abandoned"
    if node.status is NodeStatus.FREED:
        return "swept"
    if node.requirement is Requirement.Grad:
        unreached = overlay.gradients is not None and int(node.id) not in overlay.gradients
        return "unreached" if unreached and node.status is not NodeStatus.CONSUMED else "leaf"
    return "consumed" if node.status is NodeStatus.CONSUMED else "pending"


STATE_WORDS = {  # the words on a node in each state (its gradient line); `none_yet` before a replay reaches it
    "leaf": "asked for its gradient",
    "pending": "waiting for its step",
    "none_yet": "no gradient yet",
    "consumed": "step ran: gradient consumed",
    "untracked": "untracked: no gradient",
    "abandoned": "abandoned: holds memory",
    "swept": "freed without running",
    "refused": "refused: tape consumed",
    "agrees": "agrees with MLX",
    "differs": "differs from MLX",
    "unreached": "not reached: no gradient",
    "current": "running now",
    "recomputed": "recomputed now",
}
GRAD_LINES = {  # a gradient line once a node holds one (`{}` its value): before its step ends, and after, by its kind
    "grad_held": "grad {}",
    "grad_kept": "grad {} · kept",  # a leaf that asked for its gradient
    "grad_consumed": "grad {} · consumed",  # an op's output: its step took the entry
}
ENTRY_WORDS = {  # the Gradients container's Entry column: what becomes of an entry
    "entry_kept": "kept: a leaf that asked for its gradient",
    "entry_waiting": STATE_WORDS["pending"],
    "entry_running": "its step is running",
}


def node_element(node_id: int) -> str:
    """A node's element id in the SVG: made here alone, read from the payload everywhere else."""
    return f"n{node_id}"


def _grad_line(node: NodeSnapshot, state: str, overlay: Overlay) -> HeldGradient:
    """A static node's gradient line, and the numbers of the gradient it says: what the container beside it holds for
    a leaf, else its state's words."""
    if state == "leaf" and overlay.gradients is not None:
        entry = overlay.gradients.get(int(node.id))
        if entry is None:
            return HeldGradient("no gradient now: its entry was removed", None)
        return HeldGradient(GRAD_LINES["grad_kept"].format(entry.text), entry.range)
    return HeldGradient(STATE_WORDS[state], None)


def picture(
    snapshot: GraphSnapshot,
    names: dict[int, str],
    overlay: Overlay | None = None,
    titles: Mapping[int, str] | None = None,
    texts: ArrayTexts | None = None,
) -> Picture:
    """What each node and edge of `snapshot` shows; `titles` are its nodes' `labels` when the caller has them, and
    `texts` the payload's writer of numbers (each different array written and sent once)."""
    overlay = overlay or Overlay()
    texts = texts if texts is not None else ArrayTexts()
    titles = titles if titles is not None else labels(snapshot.nodes, names)
    nodes = []
    for node in snapshot.nodes:
        state = node_state(node, overlay)
        detail = f"NodeId({int(node.id)}) · {node.op}"
        if node.held_bytes:
            detail += f" · holds {format_bytes(node.held_bytes)}"
        grad = _grad_line(node, state, overlay)
        nodes.append(
            PictureNode(
                int(node.id),
                node_element(int(node.id)),
                titles[int(node.id)],
                f"value {brief(node.value)}",
                texts.numbers(node.value),
                grad.text,
                grad.range,
                detail,
                state,
            )
        )
    known = {int(node.id) for node in snapshot.nodes}
    edges = []
    counts: dict[tuple[int, int], int] = {}  # not a Counter: its missing key costs a Python call
    for node in snapshot.nodes:
        tracked = list(node.parents)
        for input_id in node.inputs:
            if int(input_id) not in known:
                continue
            is_tracked = input_id in tracked
            if is_tracked:
                tracked.remove(input_id)
            pair = (int(input_id), int(node.id))
            k = counts.get(pair, 0)
            counts[pair] = k + 1
            element = f"e{pair[0]}_{pair[1]}_{k}"  # the k-th edge of a pair (x * x has two)
            edges.append(PictureEdge(element, is_tracked, *pair))
    return Picture(tuple(nodes), tuple(edges))
