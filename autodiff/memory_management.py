"""What the server remembers about every node, and which steps can be freed
(Burn's `runtime/memory_management.rs`).

Burn frees nothing while you build graphs. At the end of each backward it frees every pending step
that can no longer be useful: steps no live tensor depends on (abandoned graphs), and steps that can
never run because a step they depend on was consumed (unavailable). That is the `LazyFreeing` policy.
PyTorch's is here too, for comparison, as `EagerFreeing`: a graph is freed the moment no tensor refers to it.

Memory management decides; the server acts. It reads the server's table of pending steps and answers which
steps to free; the server takes them off its table (as Burn's `free_unavailable_nodes` calls back the server).

Words, each with one meaning: a step is *consumed* when it runs in a backward and *freed* when it leaves the
server without running; either way that is its record's `outcome`. A node is *removed* from the graph when
steps that need it can never run again. A tensor is *dropped* when its last handle goes. A record is
*forgotten* when nothing is left to show of it. Bytes are *released* when the device gets them back.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Protocol

from .graph import Node, NodeId, Requirement, Step
from .observer import NO_OBSERVER, Observer

if TYPE_CHECKING:
    from .backends.base import Buffer


class Handle(Protocol):
    """What holds a node for the program (a tensor): the server watches it through a weak reference, as
    Burn's memory management counts the references to a node."""

    data: Buffer


class NodeStatus(enum.Enum):
    LIVE = "live"  # step pending, and a live tensor handle depends on it
    ABANDONED = "abandoned"  # step pending, but no live tensor depends on it: held until a backward
    CONSUMED = "consumed"  # step ran in a backward; its saved state is gone
    FREED = "freed"  # freed without running: abandoned, unavailable, or a dropped leaf with no step
    CONSTANT = "constant"  # an untracked leaf (from data, random, detach) with a live handle


_CONSUMED, _FREED = NodeStatus.CONSUMED, NodeStatus.FREED
_UNTRACKED = Requirement.Untracked
Steps = Mapping[NodeId, Step]  # the server's pending steps, as memory management reads them


class NodeRecord(weakref.ref[Handle]):
    """One node as the server remembers it, for the sweep, recomputation and snapshots. A record is a weak
    reference to what holds the node (its tensor): `record()` is that handle while it lives, else None; the
    server is told when it goes if it asked (one object per node, not a record and a reference). Made by
    `GraphMemoryManagement.track`, which sets every field."""

    __slots__ = ("node", "op", "input_nodes", "forward", "outcome", "outcome_in", "users", "uses_constants", "removed")
    node: Node
    op: str
    # the nodes of every input, tracked or not, in argument order (the op's own tuple: no copy per op)
    input_nodes: tuple[Node, ...]
    forward: Callable[..., Buffer] | None  # the op's forward on buffers, so a graph can be recomputed elsewhere
    outcome: NodeStatus | None  # CONSUMED or FREED once its step has left the server
    outcome_in: int  # the backward that decided it (records are forgotten one backward later)
    # a constant's: records that list it among their inputs (it is forgotten once none does and it is dropped);
    # no other node's is counted, so an op on tracked tensors looks nothing up
    users: int
    uses_constants: bool  # a constant is among its inputs: forgetting it counts that constant's users down
    # Burn removes a node from its graph when its step is consumed with no tensor referring to it, or freed:
    # steps that need it can never run again, and the next cleanup frees them (unavailable). Never a leaf: a
    # leaf has no step to run, so a path through it needs nothing that was consumed.
    removed: bool

    @property
    def inputs(self) -> tuple[NodeId, ...]:
        """The ids of every input, tracked or not."""
        return tuple([node.id for node in self.input_nodes])


class MemoryPolicy:
    """When a graph's memory is given back: the questions memory management asks. The answers here are Burn's."""

    name = "lazy"
    allows_retain_graph = False  # whether backward(retain_graph=True) and backward(into=...) may run
    watches_op_outputs = False  # whether it is told when an op's output is dropped (a leaf's drop always is)

    def to_free_on_drop(
        self, memory: GraphMemoryManagement, node_id: NodeId, steps: Steps, free: Callable[[NodeId], Step | None]
    ) -> None:
        """A watched tensor was dropped. Burn frees nothing here; a constant no op used is forgotten, so a loop
        of constants leaves nothing behind. `free` takes a pending step off the server."""
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

    def to_free_on_drop(
        self, memory: GraphMemoryManagement, node_id: NodeId, steps: Steps, free: Callable[[NodeId], Step | None]
    ) -> None:
        """Free the dropped node's step, and then each ancestor's, as soon as no live tensor and no pending
        step needs it; forget each at once (nothing is left to show)."""
        assert isinstance(steps, CountedSteps), "the server counts dependents under this policy"
        stack = [node_id]
        while stack:
            current = stack.pop()
            record = memory.records.get(current)
            if record is None or record() is not None or steps.is_needed(current):
                continue
            step = free(current)
            if step is not None:
                stack.extend(p.id for p in step.node.parents)
            memory.forget(current)


class CountedSteps(MutableMapping[NodeId, Step]):
    """A table of pending steps that counts, for each node, the pending steps that need it (PyTorch's policy
    asks that on every drop)."""

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

    def __init__(self) -> None:
        self.records: dict[NodeId, NodeRecord] = {}
        self.observer: Observer = NO_OBSERVER  # told of each node remembered and forgotten (the pictures)
        # records whose step was consumed or freed, to forget once their tensor is dropped (a cleanup visits
        # only these)
        self._decided: list[NodeRecord] = []

    # -- tracking ----------------------------------------------------------------------------------
    def track(
        self,
        node: Node,
        value: Buffer,
        handle: Handle,
        on_drop: Callable[[NodeRecord], None] | None,
        op: str,
        inputs: tuple[Node, ...] = (),
        forward: Callable[..., Buffer] | None = None,
    ) -> None:
        """Remember a new node: a leaf, or an op's output with its inputs. `handle` is what holds the node (its
        tensor), watched through a weak reference, `on_drop` called when it goes."""
        records = self.records
        node_id = node.id
        record = records[node_id] = NodeRecord(handle, on_drop)
        record.node, record.op, record.input_nodes = node, op, inputs
        # `outcome_in` is set with `outcome`, and read only after
        record.forward, record.outcome, record.users, record.removed = forward, None, 0, False
        uses_constants = False
        for input_node in inputs:
            if input_node.order == 0 and input_node.requirement is _UNTRACKED:  # only a constant's users count
                used = records.get(input_node.id)
                if used is not None:
                    used.users += 1
                    uses_constants = True
        record.uses_constants = uses_constants
        if self.observer is not NO_OBSERVER:
            self.observer.tracked(node_id, value)

    def retrack_as_leaf(self, node: Node) -> None:
        """require_grad() on an untracked tensor: the same id, now a `Grad` leaf."""
        record = self.records[node.id]
        record.node, record.forward = node, None
        self._forget_inputs(record)

    def consume_nodes(self, node_ids: list[NodeId], backward: int) -> None:
        """The nodes' steps were taken off the server by a backward, to run in it (Burn's `consume_node`, a whole
        tape in one call)."""
        self._steps_left(node_ids, _CONSUMED, backward)

    def step_freed(self, node_id: NodeId, backward: int) -> None:
        """A node's step was taken off the server without running (it never will)."""
        self._steps_left((node_id,), _FREED, backward)

    def _steps_left(self, node_ids: Iterable[NodeId], outcome: NodeStatus, backward: int) -> None:
        """The nodes' steps left the server: CONSUMED (they run in a backward) or FREED (they never will). Unless
        it is a leaf, a node is removed from the graph when no tensor refers to it."""
        records, decided, freed = self.records, self._decided, outcome is _FREED
        for node_id in node_ids:
            record = records.get(node_id)
            if record is not None:
                record.outcome, record.outcome_in = outcome, backward
                record.removed = record.node.order > 0 and (freed or record() is None)
                decided.append(record)

    # -- forgetting ------------------------------------------------------------------------------------
    def forget_if_unused(self, node_id: NodeId) -> None:
        """A dropped untracked leaf that no recorded op used is part of no graph: forget it now."""
        record = self.records.get(node_id)
        if record is not None and _is_constant(record) and record.users == 0:
            self.forget(node_id)

    def forget(self, node_id: NodeId) -> None:
        record = self.records.pop(node_id)
        if self.observer is not NO_OBSERVER:
            self.observer.forgotten(node_id)
        if record.uses_constants:
            self._forget_inputs(record)

    def _forget_inputs(self, record: NodeRecord) -> None:
        inputs, record.input_nodes, record.uses_constants = record.input_nodes, (), False
        for input_node in inputs:
            if input_node.order == 0 and input_node.requirement is _UNTRACKED:  # counted in `track`
                used = self.records.get(input_node.id)
                if used is not None:
                    used.users -= 1
                    if used.users == 0 and used() is None and _is_constant(used):
                        self.forget(input_node.id)

    # -- the cleanup at the end of a backward --------------------------------------------------------
    def useless_steps(self, steps: Steps) -> list[NodeId]:
        """Every pending step that can no longer be useful: unavailable (a step it needs was consumed or freed,
        so it can never run) or abandoned (no live tensor depends on it). The server frees them."""
        unavailable = self._unavailable(steps)
        needed = self.needed_steps(steps, unavailable)
        return [node_id for node_id in steps if node_id in unavailable or node_id not in needed]

    def _unavailable(self, steps: Steps) -> set[NodeId]:
        """Steps with a parent removed from the graph, and every step that depends on one."""
        unavailable: set[NodeId] = set()
        records = self.records
        for node_id in sorted(steps):  # ids grow with creation: a parent is seen before its children
            for parent in steps[node_id].node.parents:
                if parent.order == 0:
                    continue  # a leaf has no step to run: a path through it needs nothing consumed
                record = records.get(parent.id)
                if parent.id in unavailable or record is None or record.removed:
                    unavailable.add(node_id)
                    break
        return unavailable

    def needed_steps(self, steps: Steps, unavailable: AbstractSet[NodeId] = frozenset()) -> set[NodeId]:
        """Pending steps that are a live handle's own or one of its ancestors."""
        records = self.records
        stack = [i for i in steps if i not in unavailable and records[i]() is not None]
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
            if record.outcome_in < backward and record() is None:
                self.forget(node_id)
            else:
                self._decided.append(record)

    def held_bytes(self, steps: Steps) -> dict[NodeId, int]:
        """Per pending step, the bytes it alone keeps alive: saved buffers that no live tensor
        holds, each counted once (for the first step, by id, that saved it)."""
        counted = {id(buffer.allocation) for buffer in self.live_values()}
        held: dict[NodeId, int] = {}
        for node_id in sorted(steps):
            for buffer in steps[node_id].saved.values():
                owner = buffer.allocation
                if id(owner) not in counted:
                    counted.add(id(owner))
                    held[node_id] = held.get(node_id, 0) + owner.owned_bytes
        return held

    def live_values(self) -> Iterator[Buffer]:
        """The buffers of the tensors still alive (a handle holds its value as `data`)."""
        for record in self.records.values():
            handle = record()
            if handle is not None:
                yield handle.data


def _is_constant(record: NodeRecord) -> bool:
    """An untracked leaf: data, random, zeros, detach (no step of its own, ever)."""
    return record.node.order == 0 and record.node.requirement is Requirement.Untracked
