"""What the server remembers about every node, and when a step's memory is given back
(Burn's `runtime/memory_management.rs`).

Burn frees nothing while you build graphs. At the end of each backward it frees every pending step
that can no longer be useful: steps no live tensor depends on (abandoned graphs), and steps that can
never run because a step they depend on was consumed (unavailable). PyTorch's policy is here too, for
comparison: a graph is freed the moment no tensor refers to it.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from .graph import Node, NodeId, Requirement, Step
from .trace import ValueSummary, keep_value

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .tensor import Tensor


class NodeStatus(enum.Enum):
    LIVE = "live"  # step pending, and a live tensor handle depends on it
    ABANDONED = "abandoned"  # step pending, but no live tensor depends on it: held until a backward
    CONSUMED = "consumed"  # step ran in a backward; its saved state is gone
    FREED = "freed"  # freed without running: abandoned, unavailable, or a dropped leaf with no step
    CONSTANT = "constant"  # an untracked leaf (from data, random, detach) with a live handle


_FREED = NodeStatus.FREED


class NodeRecord:
    """One node as the server remembers it, for snapshots, the sweep and recomputation."""

    __slots__ = (
        "node", "op", "shape", "inputs", "forward", "handle", "value", "finished", "finished_in", "users", "gone"
    )  # fmt: skip

    def __init__(
        self,
        node: Node,
        op: str,
        shape: tuple[int, ...],
        inputs: tuple[NodeId, ...],
        handle: weakref.ref[Tensor],
        forward: Callable[..., Buffer] | None,
        value: np.ndarray | ValueSummary | None,
    ) -> None:
        self.node = node
        self.op = op
        self.shape = shape
        self.inputs = inputs
        self.forward = forward  # the op's forward on buffers, so a graph can be recomputed elsewhere
        self.handle = handle
        self.value = value  # the forward value as pictures show it (`keep_values`), else None
        self.finished: NodeStatus | None = None  # CONSUMED or FREED once its step is gone
        self.finished_in = -1  # the backward that finished it (records are forgotten one backward later)
        self.users = 0  # records that list this node among their inputs
        # Burn removes a node from its graph when its step is consumed with no tensor referring to it, or
        # freed: steps that need it can never run again, and the next cleanup frees them (unavailable)
        self.gone = False


class GraphMemoryManagement:
    """The node records of one server, and the decisions about which steps to free."""

    def __init__(self, policy: str, release: Callable[[NodeId], Step | None]) -> None:
        self.eager = policy == "eager"  # PyTorch's policy; else Burn's ("lazy")
        self.keep_values = False  # keep each node's forward value (small, or summarised) for the pictures
        self.records: dict[NodeId, NodeRecord] = {}
        # takes a pending step off the server (eager policy); weak, so the server and this need no cycle
        # collection to go away with the session that held them
        self._release_step = weakref.WeakMethod(release)
        self._dependents: dict[NodeId, int] = {}  # eager policy: pending steps that list each node as a parent
        # records consumed or freed, to forget once their tensor is gone (a cleanup visits only these)
        self._finished: list[NodeRecord] = []

    # -- tracking ----------------------------------------------------------------------------------
    def track(
        self,
        tensor: Tensor,
        op: str,
        inputs: tuple[NodeId, ...] = (),
        forward: Callable[..., Buffer] | None = None,
    ) -> None:
        """Remember a new node: a leaf, or an op's output with its inputs."""
        node = tensor.node
        records = self.records
        # told of the drop: every node under PyTorch's policy; under Burn's only a leaf (see _on_drop)
        handle = weakref.ref(tensor, self._on_drop(node.id) if self.eager or not inputs else None)
        value = keep_value(tensor.data.to_numpy()) if self.keep_values else None
        records[node.id] = NodeRecord(node, op, tensor.data.array.shape, inputs, handle, forward, value)
        for input_id in inputs:
            record = records.get(input_id)
            if record is not None:
                record.users += 1

    def retrack_as_leaf(self, node: Node) -> None:
        """require_grad() on an untracked tensor: the same id, now a `Grad` leaf."""
        record = self.records[node.id]
        record.node, record.forward = node, None
        self._forget_inputs(record)

    def step_registered(self, step: Step) -> None:
        """Eager policy: count the pending steps that need each node."""
        for parent in step.node.parents:
            self._dependents[parent.id] = self._dependents.get(parent.id, 0) + 1

    def step_taken(self, step: Step) -> None:
        """Eager policy: a pending step is gone."""
        for parent in step.node.parents:
            left = self._dependents[parent.id] - 1
            if left:
                self._dependents[parent.id] = left
            else:
                del self._dependents[parent.id]  # no entry per dead node: memory stays flat

    def finish(self, node_id: NodeId, status: NodeStatus, backward_count: int) -> None:
        """A step was consumed (it ran) or freed (it never will)."""
        record = self.records.get(node_id)
        if record is not None:
            record.finished, record.finished_in = status, backward_count
            record.gone = status is _FREED or record.handle() is None
            self._finished.append(record)

    # -- dropping ------------------------------------------------------------------------------------
    def _on_drop(self, node_id: NodeId) -> Callable[[weakref.ref], None]:
        def dropped(_: weakref.ref) -> None:
            if self.eager:
                self._release(node_id)
            else:
                self._forget_if_unused(node_id)

        return dropped

    def _forget_if_unused(self, node_id: NodeId) -> None:
        """A dropped untracked leaf that no recorded op used is part of no graph: forget it now, so a loop
        of constants leaves nothing behind."""
        record = self.records.get(node_id)
        if record is not None and _is_constant(record) and record.users == 0:
            del self.records[node_id]

    def _release(self, node_id: NodeId) -> None:
        """Eager policy: a tensor handle died. Free its step, and then each ancestor's, as soon as no
        live tensor and no pending step needs it (PyTorch frees a graph this way)."""
        stack = [node_id]
        while stack:
            current = stack.pop()
            record = self.records.get(current)
            if record is None or record.handle() is not None or current in self._dependents:
                continue
            release = self._release_step()
            step = None if release is None else release(current)
            if step is not None:
                step.free_saved()
                stack.extend(p.id for p in step.node.parents)
            self._forget(current)  # nothing left to show: PyTorch forgets it at once

    def _forget(self, node_id: NodeId) -> None:
        record = self.records.pop(node_id)
        self._forget_inputs(record)

    def _forget_inputs(self, record: NodeRecord) -> None:
        inputs, record.inputs = record.inputs, ()
        for input_id in inputs:
            used = self.records.get(input_id)
            if used is not None:
                used.users -= 1
                if used.users == 0 and used.handle() is None and _is_constant(used):
                    self._forget(input_id)

    # -- the cleanup at the end of a backward --------------------------------------------------------
    def steps_to_free(self, steps: dict[NodeId, Step]) -> list[NodeId]:
        """Pending steps that can no longer be useful: unavailable (a step they need was consumed or
        freed, so they can never run) or abandoned (no live tensor depends on them)."""
        unavailable = self._unavailable(steps)
        needed = self.needed_steps(steps, unavailable)
        return [node_id for node_id in steps if node_id in unavailable or node_id not in needed]

    def _unavailable(self, steps: dict[NodeId, Step]) -> set[NodeId]:
        """Steps with a parent that is gone from the graph, and every step that depends on one."""
        unavailable: set[NodeId] = set()
        for node_id in sorted(steps):  # ids grow with creation: a parent is seen before its children
            for parent in steps[node_id].node.parents:
                if parent.is_leaf:
                    continue  # a leaf has no step to run: a path through it needs nothing consumed
                record = self.records.get(parent.id)
                if parent.id in unavailable or record is None or record.gone:
                    unavailable.add(node_id)
                    break
        return unavailable

    def needed_steps(self, steps: dict[NodeId, Step], unavailable: set[NodeId] = frozenset()) -> set[NodeId]:
        """Pending steps that are a live handle's own or one of its ancestors."""
        stack = [i for i in steps if i not in unavailable and self.records[i].handle() is not None]
        needed: set[NodeId] = set()
        while stack:
            node_id = stack.pop()
            if node_id in needed:
                continue
            needed.add(node_id)
            stack.extend(p.id for p in steps[node_id].node.parents if p.id in steps)
        return needed

    def forget_finished(self, backward_count: int) -> None:
        """Forget records finished before this backward whose tensors are gone (kept one backward
        longer, so a snapshot right after a backward still shows what it consumed)."""
        finished, self._finished = self._finished, []
        records = self.records
        for record in finished:
            node_id = record.node.id
            if records.get(node_id) is not record:
                continue  # already forgotten
            if record.finished_in < backward_count and record.handle() is None:
                self._forget(node_id)
            else:
                self._finished.append(record)

    def held_bytes(self, steps: dict[NodeId, Step]) -> dict[NodeId, int]:
        """Per pending step, the bytes it alone keeps alive: saved buffers that no live tensor
        holds, each counted once (for the first step, by id, that saved it)."""
        counted = {id(tensor.data.allocation) for tensor in self.live_tensors()}
        held: dict[NodeId, int] = {}
        for node_id in sorted(steps):
            for buffer in steps[node_id].saved.values():
                owner = buffer.allocation
                if id(owner) not in counted:
                    counted.add(id(owner))
                    held[node_id] = held.get(node_id, 0) + owner.owned_bytes
        return held

    def live_tensors(self) -> Iterator[Tensor]:
        for record in self.records.values():
            tensor = record.handle()
            if tensor is not None:
                yield tensor

    def dependents(self) -> int:
        """How many nodes the eager policy currently counts dependents for (for leak tests)."""
        return len(self._dependents)


def _is_constant(record: NodeRecord) -> bool:
    """An untracked leaf: data, random, zeros, detach (no step of its own, ever)."""
    return record.node.order == 0 and record.node.requirement is Requirement.Untracked
