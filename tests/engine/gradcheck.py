"""Central finite differences in float64, computed on an inner (non-autodiff) device."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from autodiff import Device, Tensor

Program = Callable[..., Tensor]


def engine_and_numeric_grads(
    program: Program, inputs: Sequence[np.ndarray], eps: float = 1e-6
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Gradients of sum(program(*inputs) * weights) by the engine and by finite differences.

    The random weights make every output element matter differently, so a rule that is
    right only for an all-ones upstream gradient fails."""
    inputs = [np.asarray(a, dtype=np.float64) for a in inputs]
    inner = Device.numpy()
    probe = program(*[Tensor.from_floats(a, inner, dtype="float64") for a in inputs])
    weights = np.random.default_rng(7).uniform(0.5, 1.5, size=probe.shape)

    def loss_value(arrays: Sequence[np.ndarray]) -> float:
        out = program(*[Tensor.from_floats(a, inner, dtype="float64") for a in arrays])
        return float((out.numpy() * weights).sum())

    ad = inner.autodiff()
    leaves = [Tensor.from_floats(a, ad, dtype="float64").require_grad() for a in inputs]
    loss = (program(*leaves) * Tensor.from_floats(weights, ad, dtype="float64")).sum()
    grads = loss.backward()
    engine = []
    for leaf, array in zip(leaves, inputs, strict=True):
        grad = leaf.grad(grads)
        engine.append(np.zeros_like(array) if grad is None else grad.numpy())

    numeric = []
    for k, array in enumerate(inputs):
        g = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[k][index] += eps
            minus[k][index] -= eps
            g[index] = (loss_value(plus) - loss_value(minus)) / (2 * eps)
        numeric.append(g)
    return engine, numeric


def assert_gradients_match(program: Program, inputs: Sequence[np.ndarray], tol: float = 1e-5) -> None:
    engine, numeric = engine_and_numeric_grads(program, inputs)
    for k, (e, n) in enumerate(zip(engine, numeric, strict=True)):
        assert e.shape == n.shape, f"input {k}: gradient shape {e.shape} != input shape {n.shape}"
        np.testing.assert_allclose(e, n, rtol=tol, atol=tol, err_msg=f"gradient of input {k}")
