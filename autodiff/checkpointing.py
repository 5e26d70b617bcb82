"""Burn's balanced checkpointing (`checkpoint/strategy.rs`, `checkpoint/base.rs`).

At registration, an elementwise (memory-bound) op whose inputs are all tracked keeps a *recipe*
instead of the tensors its backward needs: during backward those are recomputed once from the nearest
kept values (checkpoints: leaves, constants, compute-bound outputs) and freed after their last use.
An op with an untracked input, and every compute-bound op (matmul, sums), keeps its output as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .graph import Node, NodeId, Step
from .trace import Recomputed

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .memory_management import NodeRecord
    from .tensor import Tensor
    from .trace import BackwardRecorder


class BalancedCheckpointing:
    """The server's checkpoints, kept between registration and the backward that needs them."""

    def __init__(self) -> None:
        self.checkpoints: dict[NodeId, Buffer] = {}

    def prepare(self, step: Step, producers: dict[str, Node], inputs: tuple[Tensor, ...]) -> None:
        """A saved tensor made by a tracked elementwise node becomes a recipe (that node's id); the inputs
        an elementwise step would be recomputed from are kept as checkpoints."""
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

    def prune(self, steps: dict[NodeId, Step], records: dict[NodeId, NodeRecord]) -> None:
        """Keep only the checkpoints a pending elementwise step could still be recomputed from."""
        if not self.checkpoints:
            return
        needed: set[NodeId] = set()
        for step in steps.values():
            if step.node.memory_bound and step.node.requirement.is_tracked:
                needed.update(records[step.node.id].inputs)
        self.checkpoints = {k: v for k, v in self.checkpoints.items() if k in needed}


class Checkpointer:
    """One backward's recomputations (Burn's `Checkpointer`): each recipe's value is computed once,
    cached while steps still need it, and freed after its last use."""

    def __init__(
        self,
        tape: list[list[Step]],
        strategy: BalancedCheckpointing | None,
        forward_of: Callable[[NodeId], NodeRecord],
        recorder: BackwardRecorder | None,
    ) -> None:
        self._strategy = strategy
        self._record = forward_of
        self._recorder = recorder
        self._cache: dict[NodeId, Buffer] = {}
        self._uses: dict[NodeId, int] = {}  # steps still to read each recomputed node
        for bucket in tape:
            for step in bucket:
                for node_id in step.recipes.values():
                    self._uses[node_id] = self._uses.get(node_id, 0) + 1

    def retrieve(self, step: Step) -> None:
        """Put the recomputed values a step's rules need into its saved state."""
        for name, node_id in step.recipes.items():
            step.saved[name] = self._recompute(node_id)

    def release(self, step: Step) -> None:
        """After the step ran: drop each recomputed value it was the last to need."""
        for node_id in step.recipes.values():
            self._uses[node_id] -= 1
            if self._uses[node_id] == 0:
                self._cache.pop(node_id, None)

    def _recompute(self, node_id: NodeId) -> Buffer:
        if node_id in self._cache:
            return self._cache[node_id]
        if self._strategy is not None and node_id in self._strategy.checkpoints:
            return self._strategy.checkpoints[node_id]
        record = self._record(node_id)
        value = record.forward(*(self._recompute(i) for i in record.inputs))
        if self._recorder is not None:
            self._recorder.record(Recomputed(node_id, record.op))
        if self._uses.get(node_id, 0) > 0:
            self._cache[node_id] = value
        return value
