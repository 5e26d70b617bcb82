"""Pictures of a server's graph: a snapshot of every node (for drawing), and a graph export that can
be recomputed elsewhere (for the MLX cross-check), with what the pictures need of each node: its status
and its forward value (kept whole when small, else summarised). Read-only: nothing here changes the server."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import UnsupportedOperationError
from .graph import NodeId, Requirement
from .memory import MemoryUsage
from .structure import GroupPath

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .server import AutodiffServer


class NodeStatus(enum.Enum):
    LIVE = "live"  # step pending, and a live tensor handle depends on it
    ABANDONED = "abandoned"  # step pending, but no live tensor depends on it: held until a backward
    CONSUMED = "consumed"  # step ran in a backward; its saved state is gone
    FREED = "freed"  # freed without running: abandoned, unavailable, or a dropped leaf with no step
    CONSTANT = "constant"  # an untracked leaf (from data, random, detach) with a live handle


@dataclass(frozen=True)
class ValueSummary:
    """A forward value too large to draw whole, kept as its shape and its smallest, mean and largest value."""

    shape: tuple[int, ...]
    minimum: float
    mean: float
    maximum: float


WHOLE_VALUE = 16  # a forward value up to this many numbers is kept whole for the pictures


def keep_value(array: np.ndarray) -> np.ndarray | ValueSummary:
    """What a snapshot keeps of a forward value: a copy when small, else a summary (see `ValueSummary`)."""
    if array.size <= WHOLE_VALUE:
        return array.copy()
    with np.errstate(all="ignore"):
        return ValueSummary(tuple(array.shape), float(array.min()), float(array.mean()), float(array.max()))


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
    needed = memory.needed_steps(server.steps)
    held = memory.held_bytes(server.steps)
    nodes = []
    for node_id in sorted(memory.records):
        record = memory.records[node_id]
        step = server.steps.get(node_id)
        alive = record.handle() is not None
        if step is not None:
            status = NodeStatus.LIVE if node_id in needed else NodeStatus.ABANDONED
        elif record.outcome is not None:
            status = record.outcome
        else:
            status = NodeStatus.CONSTANT if alive else NodeStatus.FREED
        nodes.append(
            NodeSnapshot(
                id=node_id,
                op=record.op,
                shape=tuple(record.shape),
                requirement=record.node.requirement,
                order=record.node.order,
                parents=tuple(p.id for p in record.node.parents),
                inputs=record.inputs,
                status=status,
                saved_bytes=0 if step is None else step.saved_bytes,
                held_bytes=held.get(node_id, 0),
                handle_alive=alive,
                value=record.value,
                group=record.group,
            )
        )
    return GraphSnapshot(tuple(nodes), tuple(sorted(server.steps)), server.pool.usage(), server.backward_count)


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
            tensor = record.handle()
            if tensor is None:
                raise UnsupportedOperationError(
                    f"{node_id!r} ({record.op}) is an input whose tensor was dropped: keep every input "
                    "in a variable to recompute the graph."
                )
            value = tensor.numpy()
        nodes.append(GraphNode(node_id, record.op, record.node.requirement, record.inputs, record.forward, value))
    return nodes
