"""The MLX backend: parity with numpy for every op, the seed scenarios, and MLX's own counters."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autodiff import Device, Tensor, UnsupportedOperationError
from autodiff.device import mlx_unavailable_reason
from course.scenarios import (
    abandoned_graphs_experiment,
    gradient_consumption,
    memory_experiment,
    shared_subgraph,
    try_backward,
)

if mlx_unavailable_reason():
    if os.environ.get("CI") == "true":
        pytest.fail(f"MLX is a dependency and must import in CI: {mlx_unavailable_reason()}", pytrace=False)
    pytest.skip(mlx_unavailable_reason(), allow_module_level=True)

from test_gradients import BINARY, UNARY, broadcast_pair


def run_on(backend: str, program, arrays: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    ad = Device.named(backend).autodiff()
    leaves = [Tensor.from_floats(a, ad).require_grad() for a in arrays]
    out = program(*leaves)
    weights = Tensor.from_floats(np.linspace(0.5, 1.5, out.data.array.size).reshape(out.shape), ad)
    grads = (out * weights).sum().backward()
    return out.numpy(), [leaf.grad(grads).numpy() for leaf in leaves]


def assert_parity(program, arrays: list[np.ndarray]) -> None:
    arrays = [np.asarray(a, dtype=np.float32) for a in arrays]
    out_np, grads_np = run_on("numpy", program, arrays)
    out_mx, grads_mx = run_on("mlx", program, arrays)
    np.testing.assert_allclose(out_mx, out_np, rtol=2e-5, atol=1e-6)
    for g_mx, g_np in zip(grads_mx, grads_np, strict=True):
        assert g_mx.shape == g_np.shape and g_mx.dtype == g_np.dtype == np.float32
        np.testing.assert_allclose(g_mx, g_np, rtol=2e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(UNARY)), seed=st.integers(0, 10_000))
def test_every_unary_op_matches_numpy(name, seed):
    op, make = UNARY[name]
    np.random.seed(seed)
    assert_parity(op, [make(2, 3)])


@settings(max_examples=30, deadline=None)
@given(pair=broadcast_pair(), name=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 10_000))
def test_every_binary_op_matches_numpy_over_random_shapes(pair, name, seed):
    rng = np.random.default_rng(seed)
    assert_parity(BINARY[name], [rng.uniform(-1.5, 1.5, size=pair[0]), rng.uniform(0.5, 2.0, size=pair[1])])


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 4), k=st.integers(1, 4), m=st.integers(1, 4), batch=st.sampled_from([(), (2,)]))
def test_matmul_matches_numpy(n, k, m, batch):
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    assert_parity(lambda a, b: a @ b, [rng.normal(size=(*batch, n, k)), rng.normal(size=(*batch, k, m))])


def test_seed_scenarios_on_mlx():
    ad = Device.mlx().autodiff()
    run = gradient_consumption(ad)
    assert [r.value for r in run.rows] == ["Some([5.0, 7.0])", "None", "None", "None", "Some([5.0, 7.0])", "None"]
    assert try_backward(run.loss).node_id == 5
    shared = shared_subgraph(ad, run.x)
    assert shared.l1_grad == "Some([5.4365635, 14.778112])"
    assert shared.l2_refusal.node_id == 6
    assert shared.combined_grad == "Some([13.591409, 36.945282])"


def test_memory_experiment_on_mlx_and_mlx_counter_follows_it():
    device = Device.mlx()
    rows, active = [], []
    for _, usage in memory_experiment(device):
        rows.append(usage.bytes_in_use)
        active.append(device.backend_memory()["active"])
    assert rows == [m * 2**20 for m in (1, 11, 21, 31, 41, 2, 1, 1, 1)]
    # MLX's own (process-wide) counter moves by the same amounts: eager evaluation means what we count exists
    for k in range(1, len(rows)):
        assert abs((active[k] - active[k - 1]) - (rows[k] - rows[k - 1])) < 4096
    assert [u.mib for _, u in abandoned_graphs_experiment(Device.mlx())] == [15.0, 15.0, 15.0, 8 / 2**20]


def test_backends_by_name():
    assert Device.named("mlx").backend.name == "mlx"
    with pytest.raises(UnsupportedOperationError):
        Device.named("cuda")
