"""Memory policies: Burn's lazy sweep vs PyTorch's eager freeing, and PyTorch's retain_graph."""

from __future__ import annotations

import pytest

from autodiff import Device, Distribution, TapeConsumedError, Tensor, UnsupportedOperationError
from course.programs import memory_forward
from course.scenarios import abandoned_graphs_experiment, memory_experiment

MIB = 2**20


def test_eager_policy_frees_a_dropped_graph_at_once():
    ad = Device.numpy().autodiff(memory_policy="eager")
    x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()
    loss = memory_forward(x)
    assert ad.memory_usage().bytes_in_use == 3 * MIB + 4  # x, exp(x), exp(x)*x held for backward; the loss
    del loss
    assert ad.memory_usage().bytes_in_use == MIB and not ad.server.steps.keys() - {x.node_id}


def test_seed_memory_experiment_under_each_policy():
    lazy = [u.bytes_in_use // MIB for _, u in memory_experiment(Device.numpy())]
    eager = [u.bytes_in_use // MIB for _, u in memory_experiment(Device.numpy(), memory_policy="eager")]
    assert lazy == [1, 11, 21, 31, 41, 2, 1, 1, 1]
    assert eager == [1, 1, 1, 1, 1, 2, 1, 1, 1]


def test_abandoned_graphs_hold_nothing_under_eager():
    rows = abandoned_graphs_experiment(Device.numpy(), size=64, memory_policy="eager")
    assert [u.bytes_in_use for _, u in rows] == [0, 0, 0, 8]


def test_backward_twice_without_retain_graph_is_refused_under_both():
    for policy in ("lazy", "eager"):
        ad = Device.numpy().autodiff(memory_policy=policy)
        x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
        loss = ((x * x) + x * 3.0).sum()
        loss.backward()
        with pytest.raises(TapeConsumedError):
            loss.backward()


def test_retain_graph_lets_a_second_backward_run_and_accumulates_like_dot_grad():
    ad = Device.numpy().autodiff(memory_policy="eager")
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    loss = ((x * x) + x * 3.0).sum()
    grads = loss.backward(retain_graph=True)
    assert x.grad(grads).tolist() == [5.0, 7.0]
    loss.backward(into=grads)  # the second backward runs; x's gradient accumulates as .grad would
    assert x.grad(grads).tolist() == [10.0, 14.0]
    with pytest.raises(TapeConsumedError):  # the last backward did not retain the graph
        loss.backward()


def test_shared_subgraph_with_retain_graph():
    ad = Device.numpy().autodiff(memory_policy="eager")
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    shared = x.exp()
    l1, l2 = (shared * 2.0).sum(), (shared * 3.0).sum()
    grads = l1.backward(retain_graph=True)
    l2.backward(into=grads)
    expected = [5 * 2.7182817, 5 * 7.389056]
    assert x.grad(grads).tolist() == pytest.approx(expected, rel=1e-6)


def test_burn_policy_refuses_retain_graph():
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0], ad).require_grad()
    with pytest.raises(UnsupportedOperationError, match="Burn does not support retain_graph"):
        (x * x).sum().backward(retain_graph=True)
    assert x.grad((x * x).sum().backward()).tolist() == [2.0]  # still usable


def test_unknown_policy():
    with pytest.raises(UnsupportedOperationError, match="lazy"):
        Device.numpy().autodiff(memory_policy="sometimes")
