"""Check the gradients the engine computed against MLX's own autodiff and finite differences.

The graph is recomputed from its leaves with each op's own forward, applied to plain arrays (MLX
arrays for `mx.grad` / `mx.vjp`, float64 numpy arrays for central differences). Only the forward
is shared with the engine; the backward rules under test are never used. Two checks per node:

- *end to end*: the gradient reaching the node (leaf or intermediate) vs MLX vs finite differences;
- *local rule*: the values the node's step sent to its inputs vs `mx.vjp` of that one op, given the
  upstream gradient the engine recorded. A wrong backward rule fails here at exactly its own node,
  while end to end it also shows up at every node upstream of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .backends.base import Array, Buffer
from .errors import UnsupportedOperationError
from .graph import NodeId, Requirement
from .memory import MemoryPool
from .snapshot import GraphNode
from .trace import BackwardRecorder, GradientRegistered, StepStarted, TensorPreview

RTOL = 1e-4
ATOL = 1e-5
FINITE_DIFFERENCE_BUDGET = 64  # elements per node; larger nodes skip finite differences
EPS = 1e-6


_UNCOUNTED = MemoryPool()  # a plain buffer owns no bytes, so nothing is ever counted here


class _Plain(Buffer):
    """A buffer over a bare array: no accounting, no eager evaluation, plain kernels, so MLX's
    transforms can trace through an op's forward."""

    __slots__ = ()

    def __init__(self, array: Array, pool: MemoryPool = _UNCOUNTED, base: Buffer | None = None) -> None:
        self.array, self.pool, self.base, self.owned_bytes = array, pool, None, 0

    def __del__(self) -> None:
        pass

    def _new(self, array: Array) -> Buffer:
        return type(self)(array)

    _view = _new

    def _rounded(self, function: str) -> Buffer:
        # The backend's own kernel, so that MLX's transforms trace through it.
        if function == "sigmoid":
            return self._new(1.0 / (1.0 + self.xp.exp(-self.array)))
        return self._new(getattr(self.xp, function)(self.array))


class _NumpyPlain(_Plain):
    __slots__ = ()
    xp: ClassVar[Any] = np


def _mlx_plain() -> type[_Plain]:
    import mlx.core as mx

    class MlxPlain(_Plain):
        __slots__ = ()
        xp: ClassVar[Any] = mx

    return MlxPlain


def recompute(
    graph: list[GraphNode], wrap: Callable[[Array], Buffer], leaves: dict[NodeId, Array], eps: dict[NodeId, Array]
) -> dict[NodeId, Array]:
    """Every node's value from the leaves, adding `eps[k]` to op output k (to differentiate at it)."""
    values: dict[NodeId, Array] = {}
    for node in graph:
        if node.forward is None:
            values[node.id] = leaves[node.id]
            continue
        out = node.forward(*(wrap(values[i]) for i in node.inputs)).array
        values[node.id] = out + eps[node.id] if node.id in eps else out
    return values


@dataclass(frozen=True)
class NodeCheck:
    node_id: NodeId
    op: str
    engine: np.ndarray | None  # the gradient the engine computed for this node
    mlx: np.ndarray | None
    numeric: np.ndarray | None  # None when the node is larger than the finite-difference budget
    max_abs_error: float
    max_rel_error: float
    ok: bool  # end to end, engine vs MLX (and vs finite differences where computed)
    local_ok: bool | None  # the node's own rule vs mx.vjp; None for a leaf


@dataclass(frozen=True)
class CrossCheck:
    nodes: tuple[NodeCheck, ...]
    rtol: float = RTOL
    atol: float = ATOL

    @property
    def ok(self) -> bool:
        return all(n.ok and n.local_ok is not False for n in self.nodes)

    @property
    def wrong_rules(self) -> list[NodeId]:
        """Nodes whose own backward rule disagrees with MLX: where a bug is."""
        return [n.node_id for n in self.nodes if n.local_ok is False]


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def _errors(engine: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    if engine.shape != reference.shape:
        return float("inf"), float("inf")
    diff = np.abs(engine - reference)
    return float(diff.max()), float((diff / np.maximum(np.abs(reference), 1e-12)).max())


def engine_gradients(recorder: BackwardRecorder) -> dict[NodeId, np.ndarray]:
    """The gradient that reached each node: its entry's total after the last registration."""
    totals: dict[NodeId, np.ndarray] = {}
    for event in recorder.events:
        if isinstance(event, GradientRegistered):
            totals[event.node_id] = _whole(event.total)
    return totals


def _whole(value: np.ndarray | TensorPreview) -> np.ndarray:
    if isinstance(value, TensorPreview):
        raise UnsupportedOperationError(
            "A cross-check needs every recorded gradient whole; this trace kept only a preview of some. "
            "Cross-check the recorder of the backward itself, in the process that ran it."
        )
    return value


def cross_check(
    graph: list[GraphNode], recorder: BackwardRecorder, rtol: float = RTOL, atol: float = ATOL
) -> CrossCheck:
    import mlx.core as mx

    mlx_plain = _mlx_plain()
    root = graph[-1].id
    tracked = [n for n in graph if n.requirement is not Requirement.Untracked]
    leaves32 = {n.id: mx.array(n.leaf_value.astype(np.float32)) for n in graph if n.leaf_value is not None}
    ops = [n.id for n in tracked if n.forward is not None]

    # End to end with MLX: d sum(root) / d (each tracked leaf and each op output), in one grad call.
    grad_leaves = [n.id for n in tracked if n.forward is None]
    values32 = recompute(graph, mlx_plain, leaves32, {})

    def loss(variables: dict[str, Array]) -> Array:
        leaves = {**leaves32, **{i: variables[f"leaf{int(i)}"] for i in grad_leaves}}
        eps = {i: variables[f"eps{int(i)}"] for i in ops}
        return mx.sum(recompute(graph, mlx_plain, leaves, eps)[root])

    variables = {f"leaf{int(i)}": leaves32[i] for i in grad_leaves}
    variables |= {f"eps{int(i)}": mx.zeros(values32[i].shape, dtype=mx.float32) for i in ops}
    reference = mx.grad(loss)(variables)
    mlx_grads = {i: np.array(reference[f"leaf{int(i)}"]) for i in grad_leaves}
    mlx_grads |= {i: np.array(reference[f"eps{int(i)}"]) for i in ops}

    numeric = _finite_differences(graph, tracked)
    local = _local_rules(graph, recorder, mlx_plain, values32, rtol, atol)
    engine = engine_gradients(recorder)
    checks = []
    for node in tracked:
        ours, theirs, fd = engine.get(node.id), mlx_grads[node.id], numeric.get(node.id)
        if ours is None:
            ok, abs_err, rel_err = False, float("inf"), float("inf")
        else:
            abs_err, rel_err = _errors(ours, theirs)
            ok = _close(ours, theirs, rtol, atol) and (fd is None or _close(ours, fd, 10 * rtol, 10 * atol))
        checks.append(NodeCheck(node.id, node.op, ours, theirs, fd, abs_err, rel_err, ok, local.get(node.id)))
    return CrossCheck(tuple(checks), rtol, atol)


def _finite_differences(graph: list[GraphNode], tracked: list[GraphNode]) -> dict[NodeId, np.ndarray]:
    """Central differences in float64 of sum(root) with respect to each small tracked node."""
    root = graph[-1].id
    leaves = {n.id: n.leaf_value.astype(np.float64) for n in graph if n.leaf_value is not None}
    base = recompute(graph, _NumpyPlain, leaves, {})
    results = {}
    for node in tracked:
        shape = np.shape(base[node.id])
        if int(np.prod(shape)) > FINITE_DIFFERENCE_BUDGET:
            continue
        grad = np.zeros(shape)
        for index in np.ndindex(shape):
            bump = np.zeros(shape)
            bump[index] = EPS
            sums = []
            for sign in (1.0, -1.0):
                if node.forward is None:
                    values = recompute(graph, _NumpyPlain, {**leaves, node.id: leaves[node.id] + sign * bump}, {})
                else:
                    values = recompute(graph, _NumpyPlain, leaves, {node.id: sign * bump})
                sums.append(float(np.sum(values[root])))
            grad[index] = (sums[0] - sums[1]) / (2 * EPS)
        results[node.id] = grad
    return results


def _local_rules(
    graph: list[GraphNode],
    recorder: BackwardRecorder,
    mlx_plain: type[_Plain],
    values: dict[NodeId, Any],
    rtol: float,
    atol: float,
) -> dict[NodeId, bool]:
    """For each step that ran: did it send its inputs what mx.vjp of its op sends, given the same
    upstream gradient?"""
    import mlx.core as mx

    nodes = {n.id: n for n in graph}
    requirement = {n.id: n.requirement for n in graph}
    upstream: dict[NodeId, np.ndarray] = {}
    sent: dict[NodeId, list[np.ndarray]] = {}
    current: NodeId | None = None
    for event in recorder.events:
        if isinstance(event, StepStarted):
            current = event.node_id
            sent[current] = []
        elif isinstance(event, GradientRegistered):
            if event.source is not None and event.source == current:
                sent[current].append(_whole(event.value))
            upstream[event.node_id] = _whole(event.total)
    results = {}
    for node_id, values_sent in sent.items():
        node = nodes.get(node_id)
        if node is None or node.forward is None:
            continue
        inputs = [values[i] for i in node.inputs]
        positions = [k for k, i in enumerate(node.inputs) if requirement[i] is not Requirement.Untracked]

        def op(
            *tracked_inputs: Array,
            forward: Callable[..., Buffer] = node.forward,
            inputs: list = inputs,
            positions: list = positions,
        ) -> Array:
            args = list(inputs)
            for k, value in zip(positions, tracked_inputs, strict=True):
                args[k] = value
            return forward(*(mlx_plain(a) for a in args)).array

        cotangent = mx.array(upstream[node_id].astype(np.float32))
        _, vjps = mx.vjp(op, [inputs[k] for k in positions], [cotangent])
        expected = [np.array(v) for v in vjps]
        results[node_id] = len(expected) == len(values_sent) and all(
            _close(got, want, rtol, atol) for got, want in zip(values_sent, expected, strict=True)
        )
    return results
