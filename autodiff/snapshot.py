"""Pictures of a server's graph: a snapshot of every node (for drawing), and a graph export that can
be recomputed elsewhere (for the MLX cross-check), with what the pictures need of each node: its status,
its forward value (kept whole when small, else summarised) and what made it. Values and groups are kept
by `Pictures`, an observer of the server's memory management, only on a device made with
`keep_values=True`. Read-only: nothing here changes the server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import UnsupportedOperationError
from .graph import NodeId, Requirement
from .memory import MemoryUsage
from .memory_management import NodeStatus
from .observer import Observer
from .structure import GroupPath, current_path

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .server import AutodiffServer

__all__ = ["GraphNode", "GraphSnapshot", "NodeSnapshot", "NodeStatus", "Pictures", "ValueSummary"]


@dataclass(frozen=True)
class ValueSummary:
    """A forward value too large to draw whole, kept as its shape and its smallest, mean and largest value."""

    shape: tuple[int, ...]
    minimum: float
    mean: float
    maximum: float


WHOLE_VALUE = 16  # a forward value up to this many numbers is kept whole for the pictures


def keep_value(array: np.ndarray, whole: int = WHOLE_VALUE) -> np.ndarray | ValueSummary:
    """What a snapshot keeps of a forward value: a copy when it has at most `whole` numbers, else a summary (see
    `ValueSummary`)."""
    if array.size <= whole:
        return array.copy()
    with np.errstate(all="ignore"):
        return ValueSummary(tuple(array.shape), float(array.min()), float(array.mean()), float(array.max()))


class Pictures(Observer):
    """What the pictures keep of each node while the server remembers it: its forward value (see `keep_value`)
    and what made it (`autodiff.structure`: a walk of the call stack). A copy and a walk per op: only on a
    device made with `keep_values=True`."""

    def __init__(self, whole: int = WHOLE_VALUE) -> None:
        self.whole = whole
        self.values: dict[NodeId, np.ndarray | ValueSummary] = {}
        self.groups: dict[NodeId, GroupPath] = {}

    def tracked(self, node_id: NodeId, buffer: Buffer) -> None:
        self.values[node_id] = keep_value(buffer.to_numpy(), self.whole)
        self.groups[node_id] = current_path()

    def forgotten(self, node_id: NodeId) -> None:
        self.values.pop(node_id, None)
        self.groups.pop(node_id, None)


def pictures_of(server: AutodiffServer) -> Pictures | None:
    observer = server.memory.observer
    return observer if isinstance(observer, Pictures) else None


@dataclass(frozen=True)
class NodeSnapshot:
    id: NodeId
    op: str
    shape: tuple[int, ...]
    requirement: Requirement
    order: int
    parents: tuple[NodeId, ...]  # tracked inputs, as Burn records them
    inputs: tuple[NodeId, ...]  # every autodiff input, tracked or not (for drawing)
    status: NodeStatus
    saved_bytes: int  # bytes of the buffers its step saved, shared ones included
    held_bytes: int  # of those, bytes that only the graph keeps alive (each buffer counted once)
    handle_alive: bool
    value: np.ndarray | ValueSummary | None = None  # its forward value, on a device that keeps values
    group: GroupPath = ()  # what made it (loops, calls, scopes), outermost first, on a device that keeps values


@dataclass(frozen=True)
class GraphSnapshot:
    nodes: tuple[NodeSnapshot, ...]
    pending_steps: tuple[NodeId, ...]
    memory: MemoryUsage
    backward_count: int

    def node(self, node_id: int) -> NodeSnapshot:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(f"NodeId({node_id}) is not in this snapshot")


@dataclass(frozen=True)
class GraphNode:
    """One node of a graph as `graph_of` returns it, enough to recompute it elsewhere."""

    id: NodeId
    op: str
    requirement: Requirement
    inputs: tuple[NodeId, ...]
    forward: Callable[..., Buffer] | None  # None for a leaf
    leaf_value: np.ndarray | None  # a leaf's values; None for an op output


def snapshot(server: AutodiffServer) -> GraphSnapshot:
    memory = server.memory
    pictures = pictures_of(server)
    values = {} if pictures is None else pictures.values
    groups = {} if pictures is None else pictures.groups
    needed = memory.needed_steps(server.steps)
    held = memory.held_bytes(server.steps)
    nodes = []
    for node_id in sorted(memory.records):
        record = memory.records[node_id]
        step = server.steps.get(node_id)
        alive = record() is not None
        if step is not None:
            status = NodeStatus.LIVE if node_id in needed else NodeStatus.ABANDONED
        elif record.outcome is not None:
            status = record.outcome
        else:
            status = NodeStatus.CONSTANT if alive else NodeStatus.FREED
        nodes.append(
            NodeSnapshot(
                id=NodeId(node_id),  # ids as a person reads them: the server counts with plain ints
                op=record.op,
                shape=tuple(record.node.shape),
                requirement=record.node.requirement,
                order=record.node.order,
                parents=tuple(NodeId(p.id) for p in record.node.parents),
                inputs=tuple(map(NodeId, record.inputs)),
                status=status,
                saved_bytes=0 if step is None else step.saved_bytes,
                held_bytes=held.get(node_id, 0),
                handle_alive=alive,
                value=values.get(node_id),
                group=groups.get(node_id, ()),
            )
        )
    pending = tuple(map(NodeId, sorted(server.steps)))
    return GraphSnapshot(tuple(nodes), pending, server.pool.usage(), server.backward_count)


def graph_of(server: AutodiffServer, root_id: NodeId) -> list[GraphNode]:
    """The nodes `root_id` was computed from, inputs before the nodes that use them. Call it before
    backward (records are forgotten one backward later); every leaf must still be alive."""
    records = server.memory.records
    order: list[NodeId] = []  # depth-first post-order: a topological order
    seen: set[NodeId] = set()
    stack: list[tuple[NodeId, bool]] = [(root_id, False)]
    while stack:
        node_id, inputs_done = stack.pop()
        if inputs_done:
            order.append(node_id)
        elif node_id not in seen:
            seen.add(node_id)
            stack.append((node_id, True))
            stack.extend((i, False) for i in reversed(records[node_id].inputs) if i not in seen)
    nodes = []
    for node_id in order:
        record = records[node_id]
        value = None
        if record.forward is None:
            tensor = record()
            if tensor is None:
                raise UnsupportedOperationError(
                    f"{NodeId(node_id)!r} ({record.op}) is an input whose tensor was dropped: keep every input "
                    "in a variable to recompute the graph."
                )
            value = tensor.data.to_numpy()
        nodes.append(GraphNode(node_id, record.op, record.node.requirement, record.inputs, record.forward, value))
    return nodes
