"""Each line the seed printed, as an assertion (values typed in from the seed, not from the engine)."""

import subprocess
import sys
from pathlib import Path

import pytest

from autodiff import Device, TapeConsumedError, Tensor
from autodiff.device import mlx_unavailable_reason
from course.scenarios import (
    abandoned_graphs_experiment,
    format_memory_row,
    gradient_consumption,
    memory_experiment,
    shared_subgraph,
    try_backward,
)

ROOT = Path(__file__).resolve().parents[2]
REFUSAL = (
    "Cannot run backward: graph tape has already been consumed at NodeId({}). Burn does not support "
    "retain_graph. Combine losses before backward or recompute the forward pass. Use detach() only to "
    "intentionally sever gradients through the previous computation."
)


def test_gradient_table_matches_the_seed():
    run = gradient_consumption(Device.numpy().autodiff())
    assert [(r.expression, r.value) for r in run.rows] == [
        ("x.grad", "Some([5.0, 7.0])"),
        ("h.grad", "None"),
        ("loss.grad", "None"),
        ("unused.grad", "None"),
        ("x.grad_remove", "Some([5.0, 7.0])"),
        ("x.grad again", "None"),
    ]
    assert all(r.reason for r in run.rows)


def test_backward_twice_is_refused_at_the_loss_node():
    run = gradient_consumption(Device.numpy().autodiff())
    refusal = try_backward(run.loss)
    assert isinstance(refusal, TapeConsumedError) and isinstance(refusal, RuntimeError)
    assert str(refusal) == REFUSAL.format(5)
    assert refusal.node_id == 5


def test_shared_subgraph_scenario_matches_the_seed():
    ad = Device.numpy().autodiff()
    run = gradient_consumption(ad)
    try_backward(run.loss)
    shared = shared_subgraph(ad, run.x)
    assert shared.l1_grad == "Some([5.4365635, 14.778112])"
    assert str(shared.l2_refusal) == REFUSAL.format(6)
    assert shared.l3_grad == "Some([4.0, 4.0])"
    assert shared.combined_grad == "Some([13.591409, 36.945282])"
    assert (shared.detached_tracked, shared.detached_require_grad) == (False, False)


SEED_MEMORY = [
    ("after creating x (1 MiB)", "1.0"),
    ("forward-only x5, loss dropped", "11.0"),
    ("forward-only x10, loss dropped", "21.0"),
    ("forward-only x15, loss dropped", "31.0"),
    ("forward-only x20, loss dropped", "41.0"),
    ("after one backward", "2.0"),
    ("grads dropped", "1.0"),
    ("without_autodiff forward x10", "1.0"),
    ("without_autodiff forward x20", "1.0"),
]


def test_memory_experiment_in_use_column_is_byte_exact():
    rows = list(memory_experiment(Device.numpy()))
    assert [(label, f"{usage.mib:.1f}") for label, usage in rows] == SEED_MEMORY
    mib = 2**20
    assert [usage.bytes_in_use for _, usage in rows] == [m * mib for m in (1, 11, 21, 31, 41, 2, 1, 1, 1)]
    assert format_memory_row(rows[0]).startswith("after creating x (1 MiB)           in_use=   1.0 MiB allocs=")


def test_abandoned_graphs_experiment_matches_the_seed():
    rows = list(abandoned_graphs_experiment(Device.numpy()))
    assert [(label, f"{usage.mib:.1f}") for label, usage in rows] == [
        ("5 abandoned graphs", "15.0"),
        ("control: untracked op + read #1", "15.0"),
        ("control: untracked op + read #2", "15.0"),
        ("after unrelated backward #1", "0.0"),
    ]
    assert rows[0][1].bytes_in_use == 15 * 2**20
    assert rows[1][1] == rows[0][1] == rows[2][1]  # the control frees (and keeps) nothing
    assert rows[3][1].bytes_in_use == 8  # only y ([1.0, 2.0], float32) is left


@pytest.mark.parametrize("backend", ["numpy", "mlx"])
def test_scenarios_module_prints_the_seed_lines(backend):
    if backend == "mlx" and mlx_unavailable_reason():
        pytest.skip(mlx_unavailable_reason())
    out = subprocess.run(
        [sys.executable, "-m", "course.scenarios", "--backend", backend],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in [
        "x.grad       = Some([5.0, 7.0])",
        "h.grad       = None",
        "loss.grad    = None",
        "unused.grad  = None",
        "x.grad_remove= Some([5.0, 7.0])",
        "x.grad again = None",
        REFUSAL.format(5),
        "l1 -> x.grad = Some([5.4365635, 14.778112])",
        REFUSAL.format(6),
        "l3 -> x.grad = Some([4.0, 4.0])",
        "l1+l2 -> x.grad = Some([13.591409, 36.945282])",
        "detached: is_tracked=false is_require_grad=false",
        "forward-only x20, loss dropped     in_use=  41.0 MiB",
        "5 abandoned graphs                 in_use=  15.0 MiB",
        "after unrelated backward #1        in_use=   0.0 MiB",
    ]:
        assert line in out, line


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seed_program_gradient(dtype):
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad, dtype=dtype).require_grad()
    grads = ((x * x) + x * 3.0).sum().backward()
    assert x.grad(grads).tolist() == [5.0, 7.0]  # d/dx (x² + 3x) = 2x + 3
    assert x.grad(grads).dtype == dtype
