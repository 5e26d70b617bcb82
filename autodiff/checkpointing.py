"""Checkpointing strategies (Burn's `checkpoint/strategy.rs`, `checkpoint/base.rs`): what an op keeps for its
backward, and how backward gets back what was not kept.

`NoCheckpointing` (the default) keeps every tensor a rule needs. `BalancedCheckpointing`: at registration, an
elementwise (memory-bound) op whose inputs are all tracked keeps a *recipe* instead of the tensors its backward
needs; during backward those are recomputed once from the nearest kept values (checkpoints: leaves, constants,
compute-bound outputs) and dropped after their last use. An op with an untracked input, and every compute-bound
op (matmul, sums), keeps its output as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .graph import Node, NodeId, Op, Step
from .observer import Observer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .backends.base import Buffer
    from .memory import MemoryPool
    from .memory_management import NodeRecord


class Checkpointer:
    """One backward's access to the saved state of its steps (Burn's `Checkpointer`). This one recomputes
    nothing: each step's saved state is what it kept."""

    def __init__(self, pool: MemoryPool, recorder: Observer) -> None:
        self._pool = pool
        self._recorder = recorder

    def retrieve(self, step: Step) -> dict[str, Buffer]:
        return step.saved

    def release(self, step: Step) -> None:
        """A step ran: what it saved is freed (Burn drops the step it consumed)."""
        bytes_before = self._pool.bytes_in_use
        step.free_saved()
        self._recorder.saved_state_freed(step, bytes_before, self._pool)


class CheckpointStrategy:
    """Burn's `CheckpointStrategy`: the hooks the server calls. The default is `NoCheckpointing`'s: keep all."""

    name = "none"
    keeps_recipes = False  # whether `checkpoint` does anything (asked before every op: a call costs more)

    def __init__(self) -> None:
        self.checkpoints: dict[NodeId, Buffer] = {}  # values kept for recomputation (none without recipes)

    def checkpoint(self, step: Step, op: Op, nodes: tuple[Node, ...], inputs: tuple[Buffer, ...]) -> None:
        """At registration of a tracked op (its inputs' nodes and values): decide what its step keeps."""

    def checkpointer(
        self, tape: list[list[Step]], records: dict[NodeId, NodeRecord], pool: MemoryPool, recorder: Observer
    ) -> Checkpointer:
        """At the start of a backward: how its steps get their saved state."""
        return Checkpointer(pool, recorder)

    def prune(self, steps: Mapping[NodeId, Step], records: dict[NodeId, NodeRecord]) -> None:
        """After steps left the server: forget what no pending step can be recomputed from."""


class NoCheckpointing(CheckpointStrategy):
    """Every op keeps the tensors its rules need (Burn's default)."""


class BalancedCheckpointing(CheckpointStrategy):
    """Elementwise ops keep a recipe; compute-bound ops and the inputs recipes start from are kept."""

    name = "balanced"
    keeps_recipes = True

    def checkpoint(self, step: Step, op: Op, nodes: tuple[Node, ...], inputs: tuple[Buffer, ...]) -> None:
        """A saved tensor made by a tracked elementwise node becomes a recipe (that node's id); the inputs
        an elementwise step would be recomputed from are kept as checkpoints."""
        producers = {"y": step.node} | {name: nodes[k] for k, name in enumerate(op.names[: len(inputs)])}
        recipes = {}
        for name in list(step.saved):
            producer = producers[name]
            if producer.memory_bound and producer.requirement.is_tracked:
                del step.saved[name]
                recipes[name] = producer.id
        if recipes:
            step.recipes = recipes
        if step.node.memory_bound:
            for node, value in zip(nodes, inputs, strict=True):
                if not (node.memory_bound and node.requirement.is_tracked):
                    self.checkpoints[node.id] = value

    def checkpointer(
        self, tape: list[list[Step]], records: dict[NodeId, NodeRecord], pool: MemoryPool, recorder: Observer
    ) -> Checkpointer:
        return RecomputingCheckpointer(tape, self.checkpoints, records, pool, recorder)

    def prune(self, steps: Mapping[NodeId, Step], records: dict[NodeId, NodeRecord]) -> None:
        if not self.checkpoints:
            return
        needed: set[NodeId] = set()
        for step in steps.values():
            if step.node.memory_bound and step.node.requirement.is_tracked:
                needed.update(records[step.node.id].inputs)
        self.checkpoints = {k: v for k, v in self.checkpoints.items() if k in needed}


STRATEGIES: dict[str, type[CheckpointStrategy]] = {"none": NoCheckpointing, "balanced": BalancedCheckpointing}


class RecomputingCheckpointer(Checkpointer):
    """Balanced checkpointing's recomputations in one backward: each recipe's value is computed once, cached
    while steps still need it, and dropped when its last step retrieves it."""

    def __init__(
        self,
        tape: list[list[Step]],
        checkpoints: dict[NodeId, Buffer],
        records: dict[NodeId, NodeRecord],
        pool: MemoryPool,
        recorder: Observer,
    ) -> None:
        super().__init__(pool, recorder)
        self._checkpoints = checkpoints
        self._records = records
        self._cache: dict[NodeId, Buffer] = {}
        self._uses: dict[NodeId, int] = {}  # steps still to retrieve each recomputed node
        for bucket in tape:
            for step in bucket:
                for node_id in step.recipes.values():
                    self._uses[node_id] = self._uses.get(node_id, 0) + 1

    def retrieve(self, step: Step) -> dict[str, Buffer]:
        if not step.recipes:
            return step.saved
        saved = dict(step.saved)
        for name, node_id in step.recipes.items():
            saved[name] = self._recompute(node_id)
            self._uses[node_id] -= 1
            if self._uses[node_id] == 0:
                self._cache.pop(node_id, None)
        return saved

    def _recompute(self, node_id: NodeId) -> Buffer:
        if node_id in self._cache:
            return self._cache[node_id]
        if node_id in self._checkpoints:
            return self._checkpoints[node_id]
        record = self._records[node_id]
        forward = record.forward
        assert forward is not None, "a leaf is never a recipe: it is kept as a checkpoint"
        value = forward(*(self._recompute(i) for i in record.inputs))
        self._recorder.recomputed(node_id, record.op)
        if self._uses.get(node_id, 0) > 0:
            self._cache[node_id] = value
        return value
