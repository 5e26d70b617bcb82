"""What a course writes when it installs the engine (`pip install seeing-autodiff`, or `pip install git+<repo>`)
into its own unit tests: the seed's scenario, a student's hand-derived gradient checked against the engine, and
Burn's refusal of a second backward. Only the installed `autodiff` package and numpy are used, so CI runs this
file from a folder outside the repository, in a fresh virtual environment without Streamlit (see .ci/wheel)."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff import Device, Distribution, TapeConsumedError, Tensor

MIB = 1024 * 1024


def test_the_seed_scenario_gradient_table():
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    unused = Tensor.from_floats([5.0, 5.0], ad).require_grad()
    h = x * x
    loss = (h + x * 3.0).sum()
    grads = loss.backward()
    assert x.grad(grads).tolist() == [5.0, 7.0]  # 2x + 3, both paths added up
    assert h.grad(grads) is None and loss.grad(grads) is None and unused.grad(grads) is None
    assert x.grad_remove(grads).tolist() == [5.0, 7.0]
    assert x.grad(grads) is None
    with pytest.raises(TapeConsumedError, match="graph tape has already been consumed"):
        loss.backward()


def test_the_seed_memory_experiment_in_mib():
    ad = Device.numpy().autodiff()
    x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()

    def forward(x: Tensor) -> Tensor:
        return (x.exp() * x).matmul(x).sum()

    in_use = [ad.memory_usage().bytes_in_use / MIB]
    for _ in range(5):
        forward(x)  # dropped at once: Burn keeps the abandoned graph until the next backward
    in_use.append(ad.memory_usage().bytes_in_use / MIB)
    grads = forward(x).backward()
    in_use.append(ad.memory_usage().bytes_in_use / MIB)
    del grads
    in_use.append(ad.memory_usage().bytes_in_use / MIB)
    assert [round(m) for m in in_use] == [1, 11, 2, 1]


def student_sigmoid_grad(x: np.ndarray) -> np.ndarray:
    """A student's derivation: d/dx sigmoid(x) = sigmoid(x) (1 - sigmoid(x))."""
    s = 1.0 / (1.0 + np.exp(-x))
    return s * (1.0 - s)


def test_a_students_derivation_matches_the_engine():
    ad = Device.numpy().autodiff()
    values = [-2.0, -0.5, 0.0, 0.5, 2.0]
    x = Tensor.from_floats(values, ad).require_grad()
    grads = x.sigmoid().sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), student_sigmoid_grad(np.array(values)), rtol=1e-6)


def test_a_training_step_on_a_parameter_reused_across_backwards():
    ad = Device.numpy().autodiff()
    w = Tensor.from_floats([0.0, 0.0], ad).require_grad()
    target = Tensor.from_floats([1.0, -1.0], ad)
    losses = []
    for _ in range(50):
        loss = ((w - target) ** 2.0).sum()
        losses.append(loss.item())
        step = w.grad(loss.backward()) * 0.1
        w = Tensor.from_inner(w.without_autodiff() - step, ad).require_grad()
    assert losses[0] == 2.0 and losses[-1] < 1e-6
