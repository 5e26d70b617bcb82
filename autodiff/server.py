"""The autodiff server of one device (Burn's `runtime/server.rs`).

It owns every pending `Step`. `backward` reads as Burn's: build the tape from the root, execute the
steps bucket by bucket from the highest order down, then clean up. What the server remembers about
nodes and when memory is given back is `memory_management.py`; balanced checkpointing is
`checkpointing.py`; snapshots are `snapshot.py`. Nothing is global: each autodiff device has its own
server, so two users in one process never meet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import snapshot as snapshots
from .checkpointing import BalancedCheckpointing, Checkpointer
from .errors import TapeConsumedError
from .grads import Gradients
from .graph import Node, NodeId, RootStep, Step
from .memory import MemoryPool
from .memory_management import GraphMemoryManagement, NodeStatus
from .trace import BackwardFinished, BackwardRecorder, SavedStateFreed, StepStarted, SweepFreed, TapeBuilt

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .snapshot import GraphNode, GraphSnapshot
    from .tensor import Tensor


_CONSUMED = NodeStatus.CONSUMED


class AutodiffServer:
    def __init__(self, pool: MemoryPool, memory_policy: str = "lazy", checkpointing: str = "none") -> None:
        self.pool = pool
        self.memory_policy = memory_policy  # "lazy" (Burn) or "eager" (PyTorch)
        self.checkpointing = checkpointing  # "none" or "balanced" (Burn's BalancedCheckpointing)
        self.steps: dict[NodeId, Step] = {}
        self.memory = GraphMemoryManagement(memory_policy, self._release_step)
        self.balanced = BalancedCheckpointing() if checkpointing == "balanced" else None
        self._next_id = 0
        self.backward_count = 0

    @property
    def nodes_created(self) -> int:
        return self._next_id

    @property
    def checkpoints(self) -> dict[NodeId, Buffer]:
        return {} if self.balanced is None else self.balanced.checkpoints

    # -- registration ------------------------------------------------------------------------------
    def new_node_id(self) -> NodeId:
        node_id = NodeId(self._next_id)
        self._next_id += 1
        return node_id

    def register_leaf(self, tensor: Tensor, op: str) -> None:
        self.memory.track(tensor, op)

    def register(
        self, tensor: Tensor, step: Step, inputs: tuple[NodeId, ...], forward: Callable[..., Buffer] | None = None
    ) -> None:
        """An op's output and its one step (tracked or untracked)."""
        self.memory.track(tensor, step.op, inputs, forward)
        self._add_step(step)

    def register_root(self, tensor: Tensor) -> None:
        """require_grad() on a leaf: the same node id, now a `Grad` leaf with a `RootStep`."""
        self.memory.retrack_as_leaf(tensor.node)
        self._add_step(RootStep(tensor.node))

    def checkpoint(self, step: Step, producers: dict[str, Node], inputs: tuple[Tensor, ...]) -> None:
        if self.balanced is not None:
            self.balanced.prepare(step, producers, inputs)

    def _add_step(self, step: Step) -> None:
        self.steps[step.node.id] = step
        if self.memory.eager:  # only PyTorch's policy counts dependents
            self.memory.step_registered(step)

    def _take_step(self, node_id: NodeId) -> Step:
        """Remove a step from the server (it is consumed or freed)."""
        step = self.steps.pop(node_id)
        if self.memory.eager:  # only PyTorch's policy counts dependents
            self.memory.step_taken(step)
        return step

    def _release_step(self, node_id: NodeId) -> Step | None:
        step = self._take_step(node_id) if node_id in self.steps else None
        if self.balanced is not None:
            self.balanced.prune(self.steps, self.memory.records)
        return step

    # -- backward ----------------------------------------------------------------------------------
    def backward(
        self,
        root: Tensor,
        grads: Gradients,
        recorder: BackwardRecorder | None = None,
        retain_graph: bool = False,
    ) -> Gradients:
        """Build the tape, execute its steps, clean up. Refused before anything is consumed."""
        tape = self.build_tape(root.node.id, retain_graph)
        self.backward_count += 1
        self.pool.reset_peak()
        grads.recorder = recorder  # held for this backward only
        try:
            if recorder is not None:
                recorder.record(TapeBuilt(root.node.id, tuple(tuple(s.node.id for s in b) for b in tape)))
            grads.register(root.node.id, root.data.ones_like())
            self.execute_steps(tape, grads, recorder, retain_graph)
            self.cleanup(recorder)
            if recorder is not None:
                recorder.record(BackwardFinished(self.pool.usage(), tuple(grads.node_ids()), self.pool.peak_bytes))
        finally:
            grads.recorder = None
        return grads

    def build_tape(self, root_id: NodeId, retain_graph: bool = False) -> list[list[Step]]:
        """The steps reachable from the root, walked as Burn does (a stack), bucketed by order. A path
        through a consumed step is refused here, before any step is taken off the server."""
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
        tape: list[list[Step]] = [[] for _ in range(root.node.order + 1)]
        for step in reachable:
            if not retain_graph:
                self._take_step(step.node.id)
            tape[step.node.order].append(step)
        return tape

    def execute_steps(
        self, tape: list[list[Step]], grads: Gradients, recorder: BackwardRecorder | None, retain_graph: bool
    ) -> None:
        """Run every bucket from the highest order down; each step runs once and is consumed."""
        checkpointer = None
        if self.balanced is not None:
            checkpointer = Checkpointer(tape, self.balanced, self.memory.records.__getitem__, recorder)
        for bucket in reversed(tape):
            for step in bucket:
                if recorder is not None:
                    parents = tuple(p.id for p in step.node.parents)
                    rules = tuple(r.text for r in step.rules)
                    recorder.record(StepStarted(step.node.id, step.op, step.node.order, parents, rules))
                if checkpointer is not None:
                    checkpointer.retrieve(step)
                step.run(grads)
                if checkpointer is not None:
                    checkpointer.release(step)
                if retain_graph:  # PyTorch's retain_graph keeps the step; recomputed values are dropped
                    for name in step.recipes:
                        step.saved.pop(name, None)
                else:
                    self._consume(step, recorder)

    def _consume(self, step: Step, recorder: BackwardRecorder | None) -> None:
        self.memory.finish(step.node.id, _CONSUMED, self.backward_count)
        if recorder is None:
            step.free_saved()
            return
        saved_bytes, before = step.saved_bytes, self.pool.bytes_in_use
        step.free_saved()
        released = before - self.pool.bytes_in_use
        recorder.record(SavedStateFreed(step.node.id, saved_bytes, released, self.pool.usage()))

    def cleanup(self, recorder: BackwardRecorder | None) -> None:
        """Burn's memory management after a backward: free every pending step that can no longer be
        useful (abandoned, or unavailable because a step it needs is gone)."""
        memory = self.memory
        memory.forget_finished(self.backward_count)
        before = self.pool.bytes_in_use
        freed = memory.steps_to_free(self.steps) if self.steps else []
        for node_id in freed:
            self._take_step(node_id).free_saved()
            memory.finish(node_id, NodeStatus.FREED, self.backward_count)
        if recorder is not None:
            recorder.record(SweepFreed(tuple(freed), before - self.pool.bytes_in_use))
        if self.balanced is not None:
            self.balanced.prune(self.steps, memory.records)

    # -- pictures ----------------------------------------------------------------------------------
    def snapshot(self) -> GraphSnapshot:
        return snapshots.snapshot(self)

    def graph_of(self, root_id: NodeId) -> list[GraphNode]:
        return snapshots.graph_of(self, root_id)
