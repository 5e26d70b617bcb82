"""What the server remembers about every node, and when a step's memory is given back
(Burn's `runtime/memory_management.rs`).

Burn frees nothing while you build graphs. At the end of each backward it frees every pending step
that can no longer be useful: steps no live tensor depends on (abandoned graphs), and steps that can
never run because a step they depend on was consumed (unavailable). That is the `LazyFreeing` policy.
PyTorch's is here too, for comparison, as `EagerFreeing`: a graph is freed the moment no tensor refers to it.

Words, each with one meaning: a step is *consumed* when it runs in a backward and *freed* when it leaves the
server without running; either way that is its record's `outcome`. A node is *removed* from the graph when
steps that need it can never run again. A tensor is *dropped* when its last handle goes. A record is
*forgotten* when nothing is left to show of it. Bytes are *released* when the device gets them back.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import numpy as np

from .grads import Gradients
from .graph import Node, NodeId, Requirement, Step, tape_of
from .snapshot import NodeStatus, ValueSummary, keep_value
from .structure import GroupPath, current_path

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .checkpointing import CheckpointStrategy
    from .server import AutodiffServer
    from .tensor import Tensor
    from .trace import Recorder


_CONSUMED, _FREED = NodeStatus.CONSUMED, NodeStatus.FREED


class NodeRecord:
    """One node as the server remembers it, for snapshots, the sweep and recomputation."""

    __slots__ = (
        "node", "op", "shape", "inputs", "forward", "handle", "value", "group", "outcome", "outcome_in", "users",
        "removed",
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
        group: GroupPath = (),
    ) -> None:
        self.node = node
        self.op = op
        self.shape = shape
        self.inputs = inputs
        self.forward = forward  # the op's forward on buffers, so a graph can be recomputed elsewhere
        self.handle = handle
        self.value = value  # the forward value as pictures show it (`keep_values`), else None
        self.group = group  # what made it (loops, calls, scopes; `autodiff.structure`), with `value`, else ()
        self.outcome: NodeStatus | None = None  # CONSUMED or FREED once its step has left the server
        self.outcome_in = -1  # the backward that decided it (records are forgotten one backward later)
        self.users = 0  # records that list this node among their inputs
        # Burn removes a node from its graph when its step is consumed with no tensor referring to it, or
        # freed: steps that need it can never run again, and the next cleanup frees them (unavailable).
        # Never a leaf: a leaf has no step to run, so a path through it needs nothing that was consumed.
        self.removed = False


class MemoryPolicy:
    """When a graph's memory is given back: the hooks memory management calls. The defaults are Burn's."""

    name = "lazy"
    allows_retain_graph = False  # whether backward(retain_graph=True) and backward(into=...) may run
    watches_op_outputs = False  # whether memory management is told when an op's output is dropped (a leaf always)

    def new_steps(self) -> MutableMapping[NodeId, Step]:
        """The server's table of pending steps."""
        return {}

    def build_tape(self, server: AutodiffServer, reachable: list[Step], retain_graph: bool) -> list[list[Step]]:
        """The tape of one backward: Burn's takes every reachable step off the server, consumed."""
        return server.build_tape(reachable)

    def gradients(self, root_id: NodeId, root_value: Buffer, hook: Recorder, into: Gradients | None) -> Gradients:
        """The container of one backward: Burn's is always a new one."""
        return Gradients.new(root_id, root_value, hook)

    def dropped(self, memory: GraphMemoryManagement, node_id: NodeId) -> None:
        """A watched tensor was dropped. Burn frees nothing here; a constant no op used is forgotten, so a loop
        of constants leaves nothing behind."""
        memory.forget_if_unused(node_id)


class LazyFreeing(MemoryPolicy):
    """Burn's: nothing is freed while graphs are built; each backward's cleanup frees what can no longer be
    useful (abandoned or unavailable steps)."""


class EagerFreeing(MemoryPolicy):
    """PyTorch's: a graph is freed the moment no tensor refers to it, and `retain_graph=True` keeps a graph
    for a second backward."""

    name = "eager"
    allows_retain_graph = True
    watches_op_outputs = True

    def __init__(self) -> None:
        self.steps = CountedSteps()  # one policy per server: this is that server's table

    def new_steps(self) -> MutableMapping[NodeId, Step]:
        return self.steps

    def build_tape(self, server: AutodiffServer, reachable: list[Step], retain_graph: bool) -> list[list[Step]]:
        """`retain_graph=True`: every step stays on the server, with what it saved, for another backward; the
        tape runs copies of them (running a copy frees only the copy's hold on the saved tensors)."""
        if not retain_graph:
            return server.build_tape(reachable)
        return tape_of([copy.copy(step) for step in reachable])

    def gradients(self, root_id: NodeId, root_value: Buffer, hook: Recorder, into: Gradients | None) -> Gradients:
        """`into`: the gradients add to an earlier container's, as PyTorch's `.grad` accumulates."""
        return Gradients.new(root_id, root_value, hook, into)

    def dropped(self, memory: GraphMemoryManagement, node_id: NodeId) -> None:
        """Free the dropped node's step, and then each ancestor's, as soon as no live tensor and no pending
        step needs it; forget each at once (nothing is left to show)."""
        steps = self.steps
        stack = [node_id]
        while stack:
            current = stack.pop()
            record = memory.records.get(current)
            if record is None or record.handle() is not None or steps.is_needed(current):
                continue
            step = memory.free_step(current)
            if step is not None:
                stack.extend(p.id for p in step.node.parents)
            memory.forget(current)


class CountedSteps(MutableMapping[NodeId, Step]):
    """The pending steps under PyTorch's policy, counting for each node the pending steps that need it."""

    def __init__(self) -> None:
        self._steps: dict[NodeId, Step] = {}
        self._dependents: dict[NodeId, int] = {}

    def is_needed(self, node_id: NodeId) -> bool:
        """Whether a pending step needs this node."""
        return node_id in self._dependents

    def __setitem__(self, node_id: NodeId, step: Step) -> None:
        self._steps[node_id] = step
        for parent in step.node.parents:
            self._dependents[parent.id] = self._dependents.get(parent.id, 0) + 1

    def __delitem__(self, node_id: NodeId) -> None:
        step = self._steps.pop(node_id)
        for parent in step.node.parents:
            left = self._dependents[parent.id] - 1
            if left:
                self._dependents[parent.id] = left
            else:
                del self._dependents[parent.id]  # no entry per dead node: memory stays flat

    def __getitem__(self, node_id: NodeId) -> Step:
        return self._steps[node_id]

    def __iter__(self) -> Iterator[NodeId]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


POLICIES: dict[str, type[MemoryPolicy]] = {"lazy": LazyFreeing, "eager": EagerFreeing}


class GraphMemoryManagement:
    """The node records of one server, and the decisions about which steps to free."""

    def __init__(self, policy: MemoryPolicy, steps: MutableMapping[NodeId, Step], strategy: CheckpointStrategy) -> None:
        self.policy = policy
        self.steps = steps  # the server's pending steps (the server adds them; freeing takes them off here)
        self.strategy = strategy  # told when steps left, to forget checkpoints no pending step needs
        self.keep_values = False  # keep each node's forward value (small, or summarised) for the pictures
        self.records: dict[NodeId, NodeRecord] = {}
        self._watch_op_outputs = policy.watches_op_outputs
        # records whose step was consumed or freed, to forget once their tensor is dropped (a cleanup visits
        # only these)
        self._decided: list[NodeRecord] = []

    # -- tracking ----------------------------------------------------------------------------------
    def track(
        self,
        tensor: Tensor,
        node: Node,
        op: str,
        inputs: tuple[NodeId, ...] = (),
        forward: Callable[..., Buffer] | None = None,
    ) -> None:
        """Remember `tensor`'s new node: a leaf, or an op's output with its inputs."""
        records = self.records
        # told of the drop: a leaf always, an op's output when the policy frees graphs on drops
        handle = weakref.ref(tensor, self._on_drop(node.id) if self._watch_op_outputs or not inputs else None)
        if self.keep_values:  # the pictures' data: the value, and what made the node (a walk of the call stack)
            value, group = keep_value(tensor.data.to_numpy()), current_path()
        else:
            value, group = None, ()
        records[node.id] = NodeRecord(node, op, tensor.data.array.shape, inputs, handle, forward, value, group)
        for input_id in inputs:
            record = records.get(input_id)
            if record is not None:
                record.users += 1

    def retrack_as_leaf(self, node: Node) -> None:
        """require_grad() on an untracked tensor: the same id, now a `Grad` leaf."""
        record = self.records[node.id]
        record.node, record.forward = node, None
        self._forget_inputs(record)

    def consume_node(self, node_id: NodeId, backward: int) -> None:
        """A node's step was taken off the server by a backward, to run in it (Burn's `consume_node`)."""
        self._step_left(node_id, _CONSUMED, backward)

    def _step_left(self, node_id: NodeId, outcome: NodeStatus, backward: int) -> None:
        """A node's step left the server: CONSUMED (it runs in a backward) or FREED (it never will). Unless
        it is a leaf, the node is removed from the graph when no tensor refers to it."""
        record = self.records.get(node_id)
        if record is not None:
            record.outcome, record.outcome_in = outcome, backward
            record.removed = record.node.order > 0 and (outcome is _FREED or record.handle() is None)
            self._decided.append(record)

    # -- dropping ------------------------------------------------------------------------------------
    def _on_drop(self, node_id: NodeId) -> Callable[[weakref.ref], None]:
        def dropped(_: weakref.ref) -> None:
            self.policy.dropped(self, node_id)

        return dropped

    def free_step(self, node_id: NodeId) -> Step | None:
        """Take a pending step off the server without running it, and free what it kept."""
        step = self.steps.pop(node_id, None)
        if step is not None:
            step.free_saved()
            self.strategy.prune(self.steps, self.records)
        return step

    def forget_if_unused(self, node_id: NodeId) -> None:
        """A dropped untracked leaf that no recorded op used is part of no graph: forget it now."""
        record = self.records.get(node_id)
        if record is not None and _is_constant(record) and record.users == 0:
            del self.records[node_id]

    def forget(self, node_id: NodeId) -> None:
        record = self.records.pop(node_id)
        self._forget_inputs(record)

    def _forget_inputs(self, record: NodeRecord) -> None:
        inputs, record.inputs = record.inputs, ()
        for input_id in inputs:
            used = self.records.get(input_id)
            if used is not None:
                used.users -= 1
                if used.users == 0 and used.handle() is None and _is_constant(used):
                    self.forget(input_id)

    # -- the cleanup at the end of a backward --------------------------------------------------------
    def free_unavailable_nodes(self, backward: int) -> list[NodeId]:
        """Free every pending step that can no longer be useful: unavailable (a step it needs was consumed
        or freed, so it can never run) or abandoned (no live tensor depends on it). Returns their ids."""
        steps = self.steps
        unavailable = self._unavailable(steps)
        needed = self.needed_steps(steps, unavailable)
        useless = [node_id for node_id in steps if node_id in unavailable or node_id not in needed]
        for node_id in useless:
            self.free_step(node_id)
            self._step_left(node_id, _FREED, backward)
        return useless

    def _unavailable(self, steps: MutableMapping[NodeId, Step]) -> set[NodeId]:
        """Steps with a parent removed from the graph, and every step that depends on one."""
        unavailable: set[NodeId] = set()
        for node_id in sorted(steps):  # ids grow with creation: a parent is seen before its children
            for parent in steps[node_id].node.parents:
                if parent.is_leaf:
                    continue  # a leaf has no step to run: a path through it needs nothing consumed
                record = self.records.get(parent.id)
                if parent.id in unavailable or record is None or record.removed:
                    unavailable.add(node_id)
                    break
        return unavailable

    def needed_steps(
        self, steps: MutableMapping[NodeId, Step], unavailable: AbstractSet[NodeId] = frozenset()
    ) -> set[NodeId]:
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

    def forget_decided(self, backward: int) -> None:
        """Forget records whose step was consumed or freed before this backward and whose tensor is dropped
        (kept one backward longer, so a snapshot right after a backward still shows what it consumed)."""
        decided, self._decided = self._decided, []
        records = self.records
        for record in decided:
            node_id = record.node.id
            if records.get(node_id) is not record:
                continue  # already forgotten
            if record.outcome_in < backward and record.handle() is None:
                self.forget(node_id)
            else:
                self._decided.append(record)

    def held_bytes(self, steps: MutableMapping[NodeId, Step]) -> dict[NodeId, int]:
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


def _is_constant(record: NodeRecord) -> bool:
    """An untracked leaf: data, random, zeros, detach (no step of its own, ever)."""
    return record.node.order == 0 and record.node.requirement is Requirement.Untracked
