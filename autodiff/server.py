"""The autodiff server of one device (Burn's `runtime/server.rs`).

It owns every pending `Step`. `backward` reads as Burn's: build the tape from the root, execute the
steps bucket by bucket from the highest order down, then clean up. What the server remembers about
nodes and when memory is given back is `memory_management.py` (with the memory policy, Burn's or
PyTorch's); what a step keeps for backward is the checkpointing strategy, `checkpointing.py`; a
recorder watches a backward (`trace.py`); snapshots are `snapshot.py`. Nothing is global: each autodiff
device has its own server, so two users in one process never meet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import snapshot as snapshots
from .checkpointing import Checkpointer, CheckpointStrategy, NoCheckpointing
from .errors import TapeConsumedError
from .graph import Node, NodeId, RootStep, Step, tape_of
from .memory import MemoryPool
from .memory_management import GraphMemoryManagement, LazyFreeing, MemoryPolicy
from .trace import NO_RECORDER, Recorder

if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping

    from .backends.base import Buffer
    from .grads import Gradients
    from .snapshot import GraphNode, GraphSnapshot
    from .tensor import Tensor


class AutodiffServer:
    def __init__(
        self, pool: MemoryPool, policy: MemoryPolicy | None = None, strategy: CheckpointStrategy | None = None
    ) -> None:
        self.pool = pool
        self.policy = policy or LazyFreeing()  # when graphs' memory is given back: Burn's, or PyTorch's
        self.strategy = strategy or NoCheckpointing()  # what a step keeps for backward (Burn's CheckpointStrategy)
        self.steps: MutableMapping[NodeId, Step] = self.policy.new_steps()
        self.memory = GraphMemoryManagement(self.policy, self.steps, self.strategy)
        self._next_id = 0
        self.backward_count = 0

    @property
    def nodes_created(self) -> int:
        return self._next_id

    @property
    def checkpoints(self) -> dict[NodeId, Buffer]:
        return self.strategy.checkpoints

    # -- registration ------------------------------------------------------------------------------
    def new_node_id(self) -> NodeId:
        node_id = NodeId(self._next_id)
        self._next_id += 1
        return node_id

    def register_leaf(self, tensor: Tensor, node: Node, op: str) -> None:
        self.memory.track(tensor, node, op)
        if self.pool.history is not None:
            self.pool.history.leaf(tensor.data, node.id, op)

    def register(
        self, tensor: Tensor, step: Step, inputs: tuple[NodeId, ...], forward: Callable[..., Buffer] | None = None
    ) -> None:
        """An op's output and its one step (tracked or untracked)."""
        self.memory.track(tensor, step.node, step.op, inputs, forward)
        self.steps[step.node.id] = step
        if self.pool.history is not None:
            self.pool.history.registered(tensor.data, step, self.checkpoints)

    def register_root(self, node: Node) -> None:
        """require_grad() on a leaf: the same node id, now a `Grad` leaf with a `RootStep`."""
        self.memory.retrack_as_leaf(node)
        self.steps[node.id] = RootStep(node)
        if self.pool.history is not None:
            self.pool.history.parameter(node.id)

    # -- backward ----------------------------------------------------------------------------------
    def backward(
        self,
        root: Node,
        value: Buffer,
        recorder: Recorder = NO_RECORDER,
        retain_graph: bool = False,
        into: Gradients | None = None,
    ) -> Gradients:
        """Build the tape from `root` (whose forward value is `value`), execute its steps, clean up. Refused
        before anything is consumed. `retain_graph` and `into` are the PyTorch policy's (see `EagerFreeing`)."""
        reachable = self.reachable_steps(root.id)
        self.backward_count += 1
        self.pool.reset_peak()
        tape = self.policy.build_tape(self, reachable, retain_graph)
        recorder.tape_built(root.id, tape)
        grads = self.policy.gradients(root.id, value, recorder, into)
        checkpointer = self.strategy.checkpointer(tape, self.memory.records, self.pool, recorder)
        self.execute_steps(tape, grads, checkpointer)
        self.cleanup(recorder)
        recorder.backward_finished(self.pool, grads)
        return grads

    def reachable_steps(self, root_id: NodeId) -> list[Step]:
        """The steps reachable from the root, walked as Burn does (a stack), the root first. A path through a
        consumed step is refused here, before any step is taken off the server."""
        steps = self.steps
        root = steps.get(root_id)
        if root is None:
            raise TapeConsumedError(root_id)
        visited = {root_id}
        reachable = [root]
        stack = list(root.node.parents)
        while stack:
            parent = stack.pop()
            if parent.id in visited:
                continue
            visited.add(parent.id)
            step = steps.get(parent.id)
            if step is not None:
                reachable.append(step)
                stack.extend(step.node.parents)
            elif not parent.is_leaf:
                raise TapeConsumedError(parent.id)
        return reachable

    def build_tape(self, reachable: list[Step]) -> list[list[Step]]:
        """Take each reachable step off the server, consumed (Burn's `consume_node`), into the tape by order."""
        for step in reachable:
            node_id = step.node.id
            self.steps.pop(node_id)
            self.memory.consume_node(node_id, self.backward_count)
        return tape_of(reachable)

    @staticmethod
    def execute_steps(tape: list[list[Step]], grads: Gradients, checkpointer: Checkpointer) -> Gradients:
        """Run every bucket from the highest order down; each step runs once (and frees what it saved)."""
        for steps in reversed(tape):
            for step in steps:
                step.run(grads, checkpointer)
        return grads

    def cleanup(self, recorder: Recorder) -> None:
        """Burn's memory management after a backward: free every pending step that can no longer be
        useful (abandoned, or unavailable because a step it needs is gone)."""
        self.memory.forget_decided(self.backward_count)
        bytes_before = self.pool.bytes_in_use
        freed = self.memory.free_unavailable_nodes(self.backward_count) if self.steps else []
        recorder.swept(tuple(freed), bytes_before - self.pool.bytes_in_use)
        self.strategy.prune(self.steps, self.memory.records)

    # -- pictures ----------------------------------------------------------------------------------
    def snapshot(self) -> GraphSnapshot:
        return snapshots.snapshot(self)

    def graph_of(self, root_id: NodeId) -> list[GraphNode]:
        return snapshots.graph_of(self, root_id)
