"""Graph nodes and steps, named as in Burn's `graph/` module.

A `Node` is what a tensor knows about its place in the graph. A `Step` is what the server
keeps for the backward pass: the node, the saved state and the backward rules. Running a step
consumes it: its saved state is freed and it can never run again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

from .ids import NodeId

if TYPE_CHECKING:
    from .backends.base import Buffer

__all__ = ["Node", "NodeId", "Op", "Requirement", "Rule", "RootStep", "Step", "UntrackedOpsStep", "per_constant"]


class Requirement(enum.Enum):
    """Whether a node takes part in backward. Burn calls `Untracked` `None`."""

    Grad = "Grad"  # a leaf marked with require_grad(): its gradient is kept
    GradInBackward = "GradInBackward"  # an op output with a tracked input: gradient consumed
    Untracked = "None"  # constants, detached tensors, ops whose inputs are all untracked

    @property
    def is_tracked(self) -> bool:
        return self is not Requirement.Untracked


class Node:
    """A tensor's place in the graph (Burn's `Node`). Never changed after creation; `require_grad()`
    gives its tensor a new one. A slots class, not a NamedTuple: one is made on every op."""

    __slots__ = ("id", "parents", "order", "requirement", "shape", "memory_bound")

    def __init__(
        self,
        id: NodeId,
        parents: tuple[Node, ...],
        order: int,
        requirement: Requirement,
        shape: tuple[int, ...],
        memory_bound: bool = False,
    ) -> None:
        self.id = id
        self.parents = parents  # the nodes of the tracked inputs, in argument order (duplicates kept)
        self.order = order  # 1 + the highest order among all inputs; leaves 0
        self.requirement = requirement
        # the tensor's shape: the shape of its gradient, to which a step sums a broadcast one back
        self.shape = shape
        self.memory_bound = memory_bound  # an elementwise op: under balanced checkpointing, recomputed, not kept

    @property
    def is_leaf(self) -> bool:
        return self.order == 0

    def __repr__(self) -> str:
        parents = ", ".join(repr(NodeId(p.id)) for p in self.parents)
        return f"Node({NodeId(self.id)!r}, parents=[{parents}], order={self.order}, {self.requirement.value})"


class Rule:
    """The backward rule for one input: `text` is the math, `fn(grad, saved)` computes it,
    `needs` names the saved tensors it reads (only those are kept, as in Burn)."""

    __slots__ = ("text", "fn", "needs")

    def __init__(self, text: str, fn: Callable[[Buffer, dict[str, Buffer]], Buffer], needs: tuple[str, ...] = ()):
        self.text = text
        self.fn = fn
        self.needs = needs


class Op:
    """One operation, its forward and its backward side by side: `forward(*buffers)` computes the output,
    `rules[i]` is input i's backward rule. `names` names the inputs for the rules' saved tensors ("y" is
    the output). `compute_bound` ops (matmul, reductions) keep their outputs under balanced checkpointing;
    elementwise ones are recomputed."""

    __slots__ = ("name", "forward", "rules", "names", "compute_bound", "sources", "needs")

    def __init__(
        self,
        name: str,
        forward: Callable[..., Buffer],
        rules: tuple[Rule, ...],
        names: tuple[str, ...] = ("x",),
        compute_bound: bool = False,
    ) -> None:
        self.name = name
        self.forward = forward
        self.rules = rules
        self.names = names
        self.compute_bound = compute_bound
        # per rule, where each saved tensor it needs comes from: an input's index, or -1 for the output
        self.sources = tuple(tuple((n, -1 if n == "y" else names.index(n)) for n in rule.needs) for rule in rules)
        # all of them when every input is tracked (in order, each once)
        self.needs = tuple(dict.fromkeys(source for sources in self.sources for source in sources))


def per_constant(build: Callable[..., Op]) -> Callable[..., Op]:
    """An op that depends on constants (a number, a shape) is built once per constants: a loop reuses
    its own. At most 256 are kept, so memory stays flat whatever a program does."""
    built: dict[tuple, Op] = {}

    def op(*constants: object) -> Op:
        # 0.0 == -0.0, yet x * -0.0 is not x * 0.0: keys with a zero are told apart by their text
        key = constants if 0.0 not in constants else tuple(map(repr, constants))
        found = built.get(key)
        if found is None:
            if len(built) >= 256:
                built.clear()
            found = built[key] = build(*constants)
        return found

    return op


_NONE: dict = {}  # a freed step's recipes: shared, never written


class Step(dict[str, "Buffer"]):
    """A registered operation awaiting backward (Burn's `OpsStep`). The server runs it once
    (`AutodiffServer.run_step`): it consumes its node's gradient, sends one to each tracked parent by
    its rule, and frees what it saved.

    A step is itself the table of the tensors it saved (`step["x"]`, also named `step.saved`): one object per op,
    not two, for the cyclic collector to walk while a graph waits for its backward."""

    __slots__ = ("node", "op", "rules", "recipes")

    def __init__(self, node: Node, op: str, rules: tuple[Rule, ...]) -> None:
        # what it saves is written into it by `run_op`, name by name
        self.node = node
        self.op = op
        self.rules = rules  # one per tracked parent, aligned with node.parents
        # balanced checkpointing: saved names whose value is recomputed from this node in backward (the
        # strategy gives a step its own table when it has one: this empty one is shared, never written)
        self.recipes: dict[str, NodeId] = _NONE

    @property
    def saved(self) -> dict[str, Buffer]:
        """The tensors this step keeps for its rules, by the names they read (`x`, `a`, `b`, `y`)."""
        return self

    @property
    def saved_bytes(self) -> int:
        """Bytes of the distinct buffers this step keeps alive (shared ones counted once here)."""
        owners = {id(b.allocation): b.allocation.owned_bytes for b in self.values()}
        return sum(owners.values())

    def free_saved(self) -> None:
        self.clear()
        self.recipes = _NONE

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.op}, {NodeId(self.node.id)!r}, saved=[{', '.join(self)}])"

    # a step is one operation, not a value: compared and hashed by identity, never by what it saved
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__  # type: ignore[assignment]


class RootStep(Step):
    """Registered by require_grad(): it has no parents, so running it only consumes (keeps) the leaf's
    gradient."""

    __slots__ = ()

    def __init__(self, node: Node) -> None:
        super().__init__(node, "leaf", ())


class UntrackedOpsStep(Step):
    """Registered by an op whose inputs are all untracked: it never runs, it only marks the
    node on the server until a sweep frees it (Burn's `UntrackedOpsStep`)."""

    __slots__ = ()

    def __init__(self, node: Node, op: str) -> None:
        super().__init__(node, op, ())


def tape_of(steps: list[Step]) -> list[list[Step]]:
    """Steps bucketed by order, as Burn's tape: `tape[order]`. The first step is the root, of the highest order."""
    tape: list[list[Step]] = [[] for _ in range(steps[0].node.order + 1)]
    for step in steps:
        tape[step.node.order].append(step)
    return tape
