"""Graph nodes and steps, named as in Burn's `graph/` module.

A `Node` is what a tensor knows about its place in the graph. A `Step` is what the server
keeps for the backward pass: the node, the saved state and the backward rules. Running a step
consumes it: its saved state is freed and it can never run again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .grads import Gradients


class NodeId(int):
    """Identifier of a node, from a counter owned by the device's server."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodeId({int(self)})"

    __str__ = __repr__


class Requirement(enum.Enum):
    """Whether a node takes part in backward. Burn calls `Untracked` `None`."""

    Grad = "Grad"  # a leaf marked with require_grad(): its gradient is kept
    GradInBackward = "GradInBackward"  # an op output with a tracked input: gradient consumed
    Untracked = "None"  # constants, detached tensors, ops whose inputs are all untracked

    @property
    def is_tracked(self) -> bool:
        return self is not Requirement.Untracked


class Parent(NamedTuple):
    id: NodeId
    is_leaf: bool


class Node(NamedTuple):  # immutable, and cheap to create on every op
    id: NodeId
    parents: tuple[Parent, ...]  # tracked inputs only, in argument order (duplicates kept)
    order: int  # 1 + the highest order among all inputs; leaves 0
    requirement: Requirement
    memory_bound: bool = False  # an elementwise op: under balanced checkpointing, recomputed, not kept


@dataclass(frozen=True, slots=True)
class Rule:
    """The backward rule for one input: `text` is the math, `fn(grad, saved)` computes it,
    `needs` names the saved tensors it reads (only those are kept, as in Burn)."""

    text: str
    fn: Callable[[Buffer, dict[str, Buffer]], Buffer]
    needs: tuple[str, ...] = ()


class Step:
    """A registered operation awaiting backward (Burn's `OpsStep`)."""

    __slots__ = ("node", "op", "rules", "input_shapes", "saved", "recipes")

    def __init__(
        self,
        node: Node,
        op: str,
        rules: tuple[Rule, ...],
        input_shapes: tuple[tuple[int, ...], ...],
        saved: dict[str, Buffer],
        recipes: dict[str, NodeId] | None = None,
    ) -> None:
        self.node = node
        self.op = op
        self.rules = rules  # one per tracked parent, aligned with node.parents
        self.input_shapes = input_shapes  # aligned with node.parents
        self.saved = saved
        # balanced checkpointing: saved names whose value is recomputed from this node in backward
        self.recipes = recipes or {}

    @property
    def saved_bytes(self) -> int:
        """Bytes of the distinct buffers this step keeps alive (shared ones counted once here)."""
        owners = {id(b.allocation): b.allocation.owned_bytes for b in self.saved.values()}
        return sum(owners.values())

    def run(self, grads: Gradients) -> None:
        """Consume this node's gradient and send one to each tracked parent, by its rule."""
        grad = grads.consume(self.node)
        for parent, rule, shape in zip(self.node.parents, self.rules, self.input_shapes, strict=True):
            parent_grad = rule.fn(grad, self.saved)
            if parent_grad.shape != shape:
                parent_grad = parent_grad.sum_to(shape)
            grads.register(parent.id, parent_grad, self.node.id)

    def free_saved(self) -> None:
        self.saved = {}
        self.recipes = {}


class RootStep(Step):
    """Registered by require_grad(): running it only consumes (keeps) the leaf's gradient."""

    __slots__ = ()

    def __init__(self, node: Node) -> None:
        super().__init__(node, "leaf", (), (), {})

    def run(self, grads: Gradients) -> None:
        grads.consume(self.node)


class UntrackedOpsStep(Step):
    """Registered by an op whose inputs are all untracked: it never runs, it only marks the
    node on the server until a sweep frees it (Burn's `UntrackedOpsStep`)."""

    __slots__ = ()

    def __init__(self, node: Node, op: str) -> None:
        super().__init__(node, op, (), (), {})
