"""The autodiff server of one device (Burn's `runtime/server.rs` + memory management).

It owns every pending `Step` and a record of every node, for snapshots. Nothing is global:
each autodiff device has its own server, so two users in one process never meet.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import TapeConsumedError, UnsupportedOperationError
from .grads import Gradients
from .graph import Node, NodeId, Requirement, RootStep, Step
from .memory import MemoryPool, MemoryUsage
from .trace import (
    BackwardFinished,
    BackwardRecorder,
    Recomputed,
    SavedStateFreed,
    StepStarted,
    SweepFreed,
    TapeBuilt,
)

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .device import Device
    from .tensor import Tensor


class NodeStatus(enum.Enum):
    LIVE = "live"  # step pending, and a live tensor handle depends on it
    ABANDONED = "abandoned"  # step pending, but no live tensor depends on it: held until a backward
    CONSUMED = "consumed"  # step ran in a backward; its saved state is gone
    FREED = "freed"  # freed by a sweep without running (or a dropped leaf with no step)
    CONSTANT = "constant"  # an untracked leaf (from data, random, detach) with a live handle


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
    """One node of a graph as `AutodiffServer.graph_of` returns it, enough to recompute it elsewhere."""

    id: NodeId
    op: str
    requirement: Requirement
    inputs: tuple[NodeId, ...]
    forward: Callable[..., Buffer] | None  # None for a leaf
    leaf_value: np.ndarray | None  # a leaf's values; None for an op output


class _Record:
    """What the server remembers about a node, for snapshots and the sweep."""

    __slots__ = ("node", "op", "shape", "inputs", "forward", "handle", "finished", "finished_in")

    def __init__(
        self,
        node: Node,
        op: str,
        shape: tuple[int, ...],
        inputs: tuple[NodeId, ...],
        tensor: Tensor,
        forward: Callable[..., Buffer] | None = None,
        on_drop: Callable[[NodeId], None] | None = None,
    ) -> None:
        self.node = node
        self.op = op
        self.shape = shape
        self.inputs = inputs
        self.forward = forward  # the op's forward on buffers, so a graph can be recomputed elsewhere
        node_id = node.id
        self.handle = weakref.ref(tensor, None if on_drop is None else lambda _: on_drop(node_id))
        self.finished: NodeStatus | None = None  # CONSUMED or FREED once the step is gone
        self.finished_in = -1  # the backward that finished it (records are pruned one later)


class AutodiffServer:
    def __init__(self, pool: MemoryPool, memory_policy: str = "lazy", checkpointing: str = "none") -> None:
        self.pool = pool
        self.memory_policy = memory_policy  # "lazy" (Burn) or "eager" (PyTorch)
        self.checkpointing = checkpointing  # "none" or "balanced" (Burn's BalancedCheckpointing)
        # balanced only: outputs kept so that backward can recompute elementwise ops from them
        self.checkpoints: dict[NodeId, Buffer] = {}
        self.steps: dict[NodeId, Step] = {}
        self._records: dict[NodeId, _Record] = {}
        self._next_id = 0
        self.backward_count = 0
        # eager policy only: how many pending steps list each node as a parent (a graph refcount)
        self._dependents: dict[NodeId, int] = {}

    @property
    def nodes_created(self) -> int:
        return self._next_id

    # -- registration ------------------------------------------------------------------
    def new_node_id(self) -> NodeId:
        node_id = NodeId(self._next_id)
        self._next_id += 1
        return node_id

    @property
    def _on_drop(self) -> Callable[[NodeId], None] | None:
        return self._release if self.memory_policy == "eager" else None

    def register_leaf(self, tensor: Tensor, op: str) -> None:
        node = tensor.node
        self._records[node.id] = _Record(node, op, tensor.data.shape, (), tensor, on_drop=self._on_drop)

    def register(
        self, tensor: Tensor, step: Step, inputs: tuple[NodeId, ...], forward: Callable[..., Buffer] | None = None
    ) -> None:
        node = tensor.node
        record = self._records.get(node.id)
        if record is None:
            self._records[node.id] = _Record(node, step.op, tensor.data.shape, inputs, tensor, forward, self._on_drop)
        else:  # require_grad() on a leaf (or an untracked result): same id, now a Grad leaf
            record.node, record.inputs, record.forward = node, (), None
        self.steps[node.id] = step
        if self.memory_policy == "eager":
            for parent in step.node.parents:
                self._dependents[parent.id] = self._dependents.get(parent.id, 0) + 1

    def checkpoint(self, step: Step, producers: dict[str, Node], inputs: tuple[Tensor, ...]) -> None:
        """Balanced checkpointing at registration: a saved tensor made by a tracked elementwise node
        becomes a recipe (that node's id); the inputs an elementwise op would be recomputed from
        (leaves, constants, compute-bound outputs) are kept as checkpoints."""
        for name in list(step.saved):
            producer = producers[name]
            if producer.memory_bound and producer.requirement.is_tracked:
                del step.saved[name]
                step.recipes[name] = producer.id
        if step.node.memory_bound:
            for tensor in inputs:
                node = tensor.node
                if not (node.memory_bound and node.requirement.is_tracked):
                    self.checkpoints[node.id] = tensor.data

    def _recompute(
        self, node_id: NodeId, cache: dict[NodeId, Buffer], uses: dict[NodeId, int], recorder: BackwardRecorder | None
    ) -> Buffer:
        """A node's output, recomputed once from the nearest checkpoints (cached while still needed)."""
        if node_id in cache:
            return cache[node_id]
        if node_id in self.checkpoints:
            return self.checkpoints[node_id]
        record = self._records[node_id]
        value = record.forward(*(self._recompute(i, cache, uses, recorder) for i in record.inputs))
        if recorder is not None:
            recorder.record(Recomputed(node_id, record.op))
        if uses.get(node_id, 0) > 0:
            cache[node_id] = value
        return value

    def _prune_checkpoints(self) -> None:
        """Keep only the checkpoints a pending elementwise step could still be recomputed from."""
        if not self.checkpoints:
            return
        needed: set[NodeId] = set()
        for step in self.steps.values():
            if step.node.memory_bound and step.node.requirement.is_tracked:
                needed.update(self._records[step.node.id].inputs)
        self.checkpoints = {k: v for k, v in self.checkpoints.items() if k in needed}

    def register_root(self, tensor: Tensor) -> None:
        self.register(tensor, RootStep(tensor.node), ())

    # -- backward --------------------------------------------------------------------------
    def backward(
        self,
        root: Tensor,
        inner: Device,
        recorder: BackwardRecorder | None = None,
        retain_graph: bool = False,
        into: Gradients | None = None,
    ) -> Gradients:
        order = self._validate(root.node.id)  # raises before anything is consumed
        root_step = self.steps[root.node.id]
        tape: list[list[Step]] = [[] for _ in range(root_step.node.order + 1)]
        for node_id in order:
            step = self.steps[node_id] if retain_graph else self._take_step(node_id)
            tape[step.node.order].append(step)
        self.backward_count += 1
        if recorder is not None:
            recorder.record(TapeBuilt(root.node.id, tuple(tuple(s.node.id for s in b) for b in tape)))

        self.pool.reset_peak()
        uses: dict[NodeId, int] = {}  # balanced checkpointing: steps still to read each recomputed node
        for bucket in tape:
            for step in bucket:
                for node_id in step.recipes.values():
                    uses[node_id] = uses.get(node_id, 0) + 1
        cache: dict[NodeId, Buffer] = {}
        grads = into if into is not None else Gradients(inner)
        grads.register(root.node.id, root.data.ones_like(), None, recorder)
        for bucket in reversed(tape):
            for step in bucket:
                if recorder is not None:
                    recorder.record(
                        StepStarted(
                            step.node.id,
                            step.op,
                            step.node.order,
                            tuple(p.id for p in step.node.parents),
                            tuple(r.text for r in step.rules),
                        )
                    )
                for name, node_id in step.recipes.items():
                    step.saved[name] = self._recompute(node_id, cache, uses, recorder)
                step.run(grads, recorder)
                for node_id in step.recipes.values():  # freed after its last use, as Burn's checkpointer
                    uses[node_id] -= 1
                    if uses[node_id] == 0:
                        cache.pop(node_id, None)
                if retain_graph:  # PyTorch's retain_graph keeps the step; recomputed values are dropped
                    for name in step.recipes:
                        step.saved.pop(name, None)
                else:
                    self._finish(step, NodeStatus.CONSUMED, recorder)
        self._sweep(recorder)
        self._prune_checkpoints()
        if recorder is not None:
            recorder.record(BackwardFinished(self.pool.usage(), tuple(grads.node_ids()), self.pool.peak_bytes))
        return grads

    def _validate(self, root_id: NodeId) -> list[NodeId]:
        """Walk the ancestry as Burn does (a stack) and return the steps to consume."""
        if root_id not in self.steps:
            raise TapeConsumedError(root_id)
        visited = {root_id}
        order = [root_id]
        stack = list(self.steps[root_id].node.parents)
        while stack:
            parent = stack.pop()
            if parent.id in visited:
                continue
            visited.add(parent.id)
            step = self.steps.get(parent.id)
            if step is not None:
                order.append(parent.id)
                stack.extend(step.node.parents)
            elif not parent.is_leaf:
                raise TapeConsumedError(parent.id)
        return order

    def _take_step(self, node_id: NodeId) -> Step:
        """Remove a step from the server (it is consumed or freed)."""
        step = self.steps.pop(node_id)
        if self.memory_policy == "eager":
            for parent in step.node.parents:
                self._dependents[parent.id] -= 1
        return step

    def _release(self, node_id: NodeId) -> None:
        """Eager policy: a tensor handle died. Free its step, and then each ancestor's, as soon as no
        live tensor and no pending step needs it (PyTorch frees a graph this way)."""
        stack = [node_id]
        while stack:
            current = stack.pop()
            record = self._records.get(current)
            if record is None or record.handle() is not None or self._dependents.get(current, 0) > 0:
                continue
            step = self.steps.get(current)
            if step is not None:
                self._take_step(current).free_saved()
                stack.extend(p.id for p in step.node.parents)
            del self._records[current]  # nothing left to show: PyTorch forgets it at once
            self._dependents.pop(current, None)
        if self.checkpointing == "balanced":
            self._prune_checkpoints()

    def _finish(self, step: Step, status: NodeStatus, recorder: BackwardRecorder | None) -> None:
        record = self._records.get(step.node.id)
        if record is not None:
            record.finished, record.finished_in = status, self.backward_count
        if recorder is None:
            step.free_saved()
            return
        saved_bytes, before = step.saved_bytes, self.pool.bytes_in_use
        step.free_saved()
        released = before - self.pool.bytes_in_use
        recorder.record(SavedStateFreed(step.node.id, saved_bytes, released, self.pool.usage()))

    def _sweep(self, recorder: BackwardRecorder | None) -> None:
        """Free every pending step that no live tensor handle depends on (abandoned graphs),
        and forget records finished before this backward whose tensors are gone."""
        for node_id in [i for i, r in self._records.items() if self._prunable(r)]:
            del self._records[node_id]
        needed = self._needed_steps()
        before = self.pool.bytes_in_use
        freed = []
        for node_id in [i for i in self.steps if i not in needed]:
            step = self._take_step(node_id)
            step.free_saved()
            record = self._records[node_id]
            record.finished, record.finished_in = NodeStatus.FREED, self.backward_count
            freed.append(node_id)
        for record in self._records.values():  # dropped constants: nothing left to hold
            if record.node.id not in self.steps and record.finished is None and record.handle() is None:
                record.finished, record.finished_in = NodeStatus.FREED, self.backward_count
        if recorder is not None:
            recorder.record(SweepFreed(tuple(freed), before - self.pool.bytes_in_use))

    def _prunable(self, record: _Record) -> bool:
        return record.finished is not None and record.finished_in < self.backward_count and record.handle() is None

    def _needed_steps(self) -> set[NodeId]:
        """Pending steps that are a live handle's own or one of its ancestors."""
        stack = [i for i in self.steps if self._records[i].handle() is not None]
        needed: set[NodeId] = set()
        while stack:
            node_id = stack.pop()
            if node_id in needed:
                continue
            needed.add(node_id)
            stack.extend(p.id for p in self.steps[node_id].node.parents if p.id in self.steps)
        return needed

    def _held_bytes(self) -> dict[NodeId, int]:
        """Per pending step, the bytes it alone keeps alive: saved buffers that no live tensor
        holds, each counted once (for the first step, by id, that saved it)."""
        counted = set()
        for record in self._records.values():
            tensor = record.handle()
            if tensor is not None:
                counted.add(id(tensor.data.allocation))
        held: dict[NodeId, int] = {}
        for node_id in sorted(self.steps):
            for buffer in self.steps[node_id].saved.values():
                owner = buffer.allocation
                if id(owner) not in counted:
                    counted.add(id(owner))
                    held[node_id] = held.get(node_id, 0) + owner.owned_bytes
        return held

    def graph_of(self, root_id: NodeId) -> list[GraphNode]:
        """The nodes `root_id` was computed from, inputs before the nodes that use them. Call it
        before backward (records are pruned one backward later); every leaf must still be alive."""
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
                stack.extend((i, False) for i in reversed(self._records[node_id].inputs) if i not in seen)
        nodes = []
        for node_id in order:
            record = self._records[node_id]
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

    # -- snapshot ------------------------------------------------------------------------
    def snapshot(self) -> GraphSnapshot:
        needed = self._needed_steps()
        held = self._held_bytes()
        nodes = []
        for node_id in sorted(self._records):
            record = self._records[node_id]
            step = self.steps.get(node_id)
            alive = record.handle() is not None
            if step is not None:
                status = NodeStatus.LIVE if node_id in needed else NodeStatus.ABANDONED
            elif record.finished is not None:
                status = record.finished
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
                )
            )
        return GraphSnapshot(tuple(nodes), tuple(sorted(self.steps)), self.pool.usage(), self.backward_count)
