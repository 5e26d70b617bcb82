"""The `Gradients` container returned by backward (Burn's `grads.rs`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .graph import Node, NodeId, Requirement
from .observer import NO_OBSERVER, Observer

if TYPE_CHECKING:
    from .backends.base import Buffer


_GRAD, _GRAD_IN_BACKWARD = Requirement.Grad, Requirement.GradInBackward


class Gradients:
    """A map from node id to gradient buffer (`Tensor.grad` wraps an entry as a tensor).

    Registering adds to an existing entry, so a tensor used twice gets both contributions.
    A step consumes its own node's gradient: a `GradInBackward` entry is removed, a `Grad`
    (leaf) entry is kept. That is why only leaves have gradients after backward.
    """

    def __init__(self, hook: Observer = NO_OBSERVER, container: dict[NodeId, Buffer] | None = None) -> None:
        self._container: dict[NodeId, Buffer] = {} if container is None else container
        self.hook = hook  # told of each registration and consumption (Burn's `on_register`)
        self._hooked = hook is not NO_OBSERVER  # a check costs less than a call that does nothing, on every step

    @classmethod
    def new(
        cls, root_id: NodeId, root_value: Buffer, hook: Observer = NO_OBSERVER, into: Gradients | None = None
    ) -> Gradients:
        """The container of one backward, its hook given at creation and the root's gradient (ones) registered
        (Burn's `Gradients::new_with_hook`). `into`: an earlier container whose entries this one adds to, as
        PyTorch's `.grad` accumulates (the PyTorch policy's only)."""
        gradients = cls(hook, None if into is None else into._container)
        gradients.register(root_id, root_value.ones_like())
        return gradients

    def register(self, node_id: NodeId, grad: Buffer, source: NodeId | None = None) -> None:
        container = self._container
        previous = container.get(node_id)
        total = grad if previous is None else previous + grad
        container[node_id] = total
        if self._hooked:
            self.hook.gradient_registered(node_id, source, grad, total)
        pool = total.pool
        if pool.watched:
            pool.observer.gradient(total, node_id)

    def consume(self, node: Node) -> Buffer:
        requirement = node.requirement
        if requirement is _GRAD_IN_BACKWARD:
            grad = self._container.pop(node.id, None)
        elif requirement is _GRAD:
            grad = self._container.get(node.id)
        else:
            raise RuntimeError("Trying to consume the gradients for an untracked tensor")
        if grad is None:
            raise RuntimeError(f"Can't consume the gradients of {node.id} before they are registered at least once.")
        if self._hooked:
            self.hook.gradient_consumed(node.id, requirement is _GRAD)
        return grad

    # -- public access, through Tensor.grad / grad_remove / grad_replace -----------------------------
    def get(self, node_id: NodeId) -> Buffer | None:
        return self._container.get(node_id)

    def remove(self, node_id: NodeId) -> Buffer | None:
        return self._container.pop(node_id, None)

    def replace(self, node_id: NodeId, grad: Buffer) -> None:
        self._container[node_id] = grad  # replaces, does not add

    def node_ids(self) -> list[NodeId]:
        return [NodeId(node_id) for node_id in sorted(self._container)]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._container

    def __len__(self) -> int:
        return len(self._container)

    def __iter__(self) -> Iterator[NodeId]:
        return iter(self.node_ids())

    def __repr__(self) -> str:
        return f"Gradients({', '.join(repr(i) for i in self.node_ids())})"
