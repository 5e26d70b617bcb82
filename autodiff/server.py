"""The autodiff server of one device (Burn's `runtime/server.rs`).

It alone owns the table of pending steps. Ops register their output's node and step here; `backward`
reads as Burn's: take the reachable steps off the table into a tape bucketed by order, execute the steps
bucket by bucket from the highest order down, then clean up. Memory management (`memory_management.py`)
remembers every node and answers which steps can be freed, under the memory policy (Burn's or PyTorch's);
the server frees them. What a step keeps for backward is the checkpointing strategy (`checkpointing.py`).
Observers (`observer.py`) hear what happens. The server knows nodes, buffers and steps, never tensors: a
tensor is only the handle through which it sees whether a node is still held. Nothing is global: each
autodiff device has its own server, so two users in one process never meet.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from .checkpointing import Checkpointer, CheckpointStrategy, NoCheckpointing
from .errors import TapeConsumedError
from .grads import Gradients
from .graph import Node, NodeId, RootStep, Step, tape_of
from .memory import MemoryPool
from .memory_management import CountedSteps, GraphMemoryManagement, Handle, LazyFreeing, MemoryPolicy, NodeRecord
from .observer import NO_OBSERVER, Observer

if TYPE_CHECKING:
    from .backends.base import Buffer


class AutodiffServer:
    def __init__(
        self, pool: MemoryPool, policy: MemoryPolicy | None = None, strategy: CheckpointStrategy | None = None
    ) -> None:
        self.pool = pool
        self.policy = policy or LazyFreeing()  # when graphs' memory is given back: Burn's, or PyTorch's
        self.strategy = strategy or NoCheckpointing()  # what a step keeps for backward (Burn's CheckpointStrategy)
        # the pending steps; PyTorch's policy asks on every drop whether a pending step needs a node
        self.steps: MutableMapping[NodeId, Step] = CountedSteps() if self.policy.watches_op_outputs else {}
        self.memory = GraphMemoryManagement()
        self._watch_op_outputs = self.policy.watches_op_outputs
        # the next node's id: a plain int handed out as a `NodeId` (see there), without a call to cast it on every op
        self.next_id: Any = 0
        self.backward_count = 0

    @property
    def nodes_created(self) -> int:
        return self.next_id

    @property
    def checkpoints(self) -> dict[NodeId, Buffer]:
        return self.strategy.checkpoints

    # -- registration ------------------------------------------------------------------------------
    def new_node_id(self) -> NodeId:
        node_id: NodeId = self.next_id
        self.next_id = node_id + 1
        return node_id

    def register_leaf(self, node: Node, value: Buffer, handle: Handle, op: str) -> None:
        """A leaf's node, held by `handle` (its tensor); its drop is always watched (a constant is forgotten)."""
        self.memory.track(node, value, handle, self.dropped, op)
        self.pool.observer.leaf(value, node.id, op)

    def register(
        self,
        node: Node,
        value: Buffer,
        handle: Handle,
        step: Step,
        inputs: tuple[Node, ...],
        forward: Callable[..., Buffer] | None = None,
    ) -> None:
        """An op's output (`value`, held by `handle`) and its one step (tracked or untracked)."""
        on_drop = self.dropped if self._watch_op_outputs else None
        self.memory.track(node, value, handle, on_drop, step.op, inputs, forward)
        self.steps[node.id] = step
        pool = self.pool
        if pool.watched:
            pool.observer.registered(value, step, self.strategy.checkpoints)

    def register_root(self, node: Node) -> None:
        """require_grad() on a leaf: the same node id, now a `Grad` leaf with a `RootStep`."""
        self.memory.retrack_as_leaf(node)
        self.steps[node.id] = RootStep(node)
        self.pool.observer.parameter(node.id)

    def dropped(self, record: NodeRecord) -> None:
        """The tensor that held a watched node was dropped: the policy says what to free."""
        self.policy.to_free_on_drop(self.memory, record.node.id, self.steps, self.free_step)

    # -- backward ----------------------------------------------------------------------------------
    def backward(
        self,
        root: Node,
        value: Buffer,
        recorder: Observer = NO_OBSERVER,
        retain_graph: bool = False,
        into: Gradients | None = None,
    ) -> Gradients:
        """Build the tape from `root` (whose forward value is `value`), execute its steps, clean up. Refused
        before anything is consumed. `retain_graph` and `into` are the PyTorch policy's (see `EagerFreeing`)."""
        reachable = self.reachable_steps(root.id)
        self.backward_count += 1
        pool = self.pool
        pool.peak_bytes = pool.bytes_in_use  # `pool.reset_peak()` without the call
        tape = self.build_tape(reachable, retain_graph)
        if recorder is not NO_OBSERVER:
            recorder.tape_built(root.id, tape)
        grads = Gradients.new(root.id, value, recorder, into)
        checkpointer = self.strategy.checkpointer(tape, self.memory.records, pool, recorder)
        self.execute_steps(tape, grads, checkpointer, recorder)
        self.cleanup(recorder)
        if recorder is not NO_OBSERVER:
            recorder.backward_finished(pool, tuple(grads.node_ids()))
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
            parent_id = parent.id
            if parent_id in visited:
                continue
            visited.add(parent_id)
            step = steps.get(parent_id)
            if step is not None:
                reachable.append(step)
                stack.extend(step.node.parents)
            elif parent.order:  # not a leaf: its step was consumed
                raise TapeConsumedError(parent_id)
        return reachable

    def build_tape(self, reachable: list[Step], retain_graph: bool = False) -> list[list[Step]]:
        """Take each reachable step off the server, consumed (Burn's `consume_node`), into the tape by order.
        `retain_graph=True` (PyTorch's policy only): every step stays on the server with what it saved, for
        another backward; the tape runs copies of them (running a copy frees only the copy's hold)."""
        if retain_graph:
            return tape_of([copy.copy(step) for step in reachable])
        steps = self.steps
        node_ids = []
        tape: list[list[Step]] = [[] for _ in range(reachable[0].node.order + 1)]  # `tape_of`, in the same pass
        for step in reachable:
            node = step.node
            node_id = node.id
            del steps[node_id]
            node_ids.append(node_id)
            tape[node.order].append(step)
        self.memory.consume_nodes(node_ids, self.backward_count)
        return tape

    @classmethod
    def execute_steps(
        cls, tape: list[list[Step]], grads: Gradients, checkpointer: Checkpointer, recorder: Observer = NO_OBSERVER
    ) -> Gradients:
        """Run every bucket from the highest order down; each step runs once (and frees what it saved)."""
        run_step = cls.run_step
        for steps in reversed(tape):
            for step in steps:
                run_step(step, grads, checkpointer, recorder)
        return grads

    @staticmethod
    def run_step(step: Step, grads: Gradients, checkpointer: Checkpointer, recorder: Observer) -> None:
        """Consume the step's node's gradient and send one to each tracked parent, by its rule (Burn's `step`,
        which takes the step by value: once it ran, what it saved is freed)."""
        if recorder is not NO_OBSERVER:  # a check costs less than a call that does nothing, on every step
            recorder.step_started(step)
        node = step.node
        # the saved state: what the step kept, and values recomputed in place of its recipes
        recipes = step.recipes
        saved = checkpointer.retrieve(step) if recipes else step
        grad = grads.consume(node)
        node_id = node.id
        # aligned by construction: not checked on every step (a strict zip costs 0.1 us)
        for parent, rule in zip(node.parents, step.rules, strict=False):
            parent_grad = rule.fn(grad, saved)
            if parent_grad.array.shape != parent.shape:  # the input was broadcast
                parent_grad = parent_grad.sum_to(parent.shape)
            grads.register(parent.id, parent_grad, node_id)
        # what it saved is freed: Burn drops the step it consumed (and a recorder hears the bytes it gave back)
        if recorder is not NO_OBSERVER:
            checkpointer.release(step)
        elif recipes:
            step.free_saved()
        else:
            step.clear()  # a step without recipes holds nothing else

    def cleanup(self, recorder: Observer = NO_OBSERVER) -> None:
        """Burn's memory management after a backward: free every pending step that can no longer be
        useful (abandoned, or unavailable because a step it needs is gone)."""
        memory = self.memory
        memory.forget_decided(self.backward_count)
        bytes_before = self.pool.bytes_in_use
        freed = memory.useless_steps(self.steps) if self.steps else []
        for node_id in freed:
            self.free_step(node_id)
            memory.step_freed(node_id, self.backward_count)
        if recorder is not NO_OBSERVER:
            recorder.swept(tuple(freed), bytes_before - self.pool.bytes_in_use)
        if self.strategy.keeps_recipes:
            self.strategy.prune(self.steps, memory.records)

    def free_step(self, node_id: NodeId) -> Step | None:
        """Take a pending step off the server without running it, and free what it kept."""
        step = self.steps.pop(node_id, None)
        if step is not None:
            step.free_saved()
            self.strategy.prune(self.steps, self.memory.records)
        return step
