"""Burn's runtime semantics: steps, order, requirements, consumption, saved state, sweeps."""

import gc

import numpy as np
import pytest

from autodiff import (
    BackwardRecorder,
    Device,
    DeviceMismatchError,
    Distribution,
    NodeStatus,
    Requirement,
    TapeConsumedError,
    Tensor,
)
from autodiff.trace import BackwardFinished


@pytest.fixture
def ad():
    return Device.numpy().autodiff()


def test_every_op_registers_one_step_with_order_and_tracked_parents(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    c = Tensor.from_floats([3.0, 4.0], ad)  # untracked constant: not a parent
    before = len(ad.server.steps)
    y = x * c
    z = y.exp() + c
    assert len(ad.server.steps) == before + 3
    assert [(p.id, p.is_leaf) for p in y.node.parents] == [(x.node_id, True)]
    assert (x.node.order, y.node.order, z.node.order) == (0, 1, 3)
    assert z.node.parents[0].id == z.node_id - 1  # the exp node, not a leaf
    assert (x.requirement, c.requirement, y.requirement) == (
        Requirement.Grad,
        Requirement.Untracked,
        Requirement.GradInBackward,
    )


def test_untracked_ops_register_a_no_op_step(ad):
    c = Tensor.from_floats([1.0], ad)
    d = c * 2.0
    assert d.requirement is Requirement.Untracked
    assert d.node_id in ad.server.steps
    assert ad.server.steps[d.node_id].rules == ()


def test_only_leaves_keep_gradients(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    h = x.exp()
    loss = (h * x).sum()
    grads = loss.backward()
    assert h.grad(grads) is None and loss.grad(grads) is None
    np.testing.assert_allclose(x.grad(grads).numpy(), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])), rtol=1e-6)
    assert grads.node_ids() == [x.node_id]


def test_grad_remove_and_replace(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    grads = (x * 2.0).sum().backward()
    x.grad_replace(grads, Tensor.from_floats([9.0, 9.0], ad.inner))
    assert x.grad(grads).tolist() == [9.0, 9.0]  # replaced, not added
    assert x.grad_remove(grads).tolist() == [9.0, 9.0]
    assert x.grad(grads) is None and len(grads) == 0


def test_consumed_steps_are_gone_and_refusal_consumes_nothing(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    shared = x.exp()
    l1 = (shared * 2.0).sum()
    l2 = (shared * 3.0).sum()
    l1.backward()
    steps_before = dict(ad.server.steps)
    with pytest.raises(TapeConsumedError) as refusal:
        l2.backward()
    assert refusal.value.node_id == shared.node_id
    assert ad.server.steps == steps_before  # nothing consumed by the refused backward
    snap = ad.snapshot()
    assert snap.node(shared.node_id).status is NodeStatus.CONSUMED
    assert snap.node(l2.node_id).status is NodeStatus.LIVE
    # the server is still usable: a fresh loss on the same leaf works
    assert x.grad((x * 4.0).sum().backward()).tolist() == [4.0, 4.0]


def test_detach_severs_and_shares_data(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    y = x * 2.0
    d = y.detach()
    assert not d.is_tracked and not d.is_require_grad and d.node_id != y.node_id
    assert d.data is y.data  # same buffer, no copy
    grads = (d * x).sum().backward()
    assert x.grad(grads).tolist() == [2.0, 4.0]  # d treated as a constant
    assert y.node_id in ad.server.steps  # y's step was not part of that backward


def test_without_autodiff_is_on_the_inner_device(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    xi = x.without_autodiff()
    assert xi.device is ad.inner and xi.node is None and xi.data is x.data
    steps = len(ad.server.steps)
    (xi * 2.0).exp().sum()
    assert len(ad.server.steps) == steps


MIB = 2**20


def big(ad):
    return Tensor.ones([512, 512], ad)


def test_saved_state_follows_burn(ad):
    x = big(ad).require_grad()
    c = big(ad)
    base = ad.memory_usage().bytes_in_use
    y = x * c  # x tracked, c not: only c is saved (x's rule needs c)
    s = y.sum()  # sum saves only the shape
    e = x.exp()  # exp saves its input
    snap = ad.snapshot()
    one = 512 * 512 * 4
    assert snap.node(y.node_id).saved_bytes == one  # c, not also x
    assert snap.node(s.node_id).saved_bytes == 0
    assert snap.node(e.node_id).saved_bytes == one  # x, not its output
    assert snap.node(y.node_id).held_bytes == snap.node(e.node_id).held_bytes == 0  # c's and x's live buffers
    del y, s, e
    gc.collect()
    # y's buffer is gone (sum saved nothing), e's output too; only handles and saved inputs remain
    assert ad.memory_usage().bytes_in_use == base


def test_abandoned_graph_keeps_memory_until_next_backward(ad):
    x = big(ad).require_grad()
    base = ad.memory_usage().bytes_in_use
    loss = (x.exp() * x).sum()
    del loss
    assert ad.memory_usage().bytes_in_use == base + MIB  # exp's output saved by mul
    assert any(n.status is NodeStatus.ABANDONED for n in ad.snapshot().nodes)
    for _ in range(3):  # untracked work and reads never sweep
        (big(ad) * 2.0).sum().item()
    assert ad.memory_usage().bytes_in_use == base + MIB
    y = Tensor.from_floats([1.0], ad).require_grad()
    (y * y).sum().backward()
    assert ad.memory_usage().bytes_in_use == base + 4  # y itself
    assert all(n.status is not NodeStatus.ABANDONED for n in ad.snapshot().nodes)


def test_sweep_keeps_graphs_of_live_tensors(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    kept = (x.exp() * x).sum()  # its handle is alive: must survive an unrelated backward
    other = Tensor.from_floats([1.0], ad).require_grad()
    (other * 2.0).sum().backward()
    grads = kept.backward()
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(x.grad(grads).numpy(), e * np.array([1.0, 2.0]) + e, rtol=1e-6)


def test_memory_returns_to_baseline(ad):
    base = ad.memory_usage()
    x = Tensor.random([64, 64], __import__("autodiff").Distribution.Default, ad).require_grad()
    grads = ((x @ x).tanh().mean()).backward()
    del grads, x
    assert ad.memory_usage() == base


def test_devices_are_isolated():
    a, b = Device.numpy().autodiff(), Device.numpy().autodiff()
    xa = Tensor.ones([256, 256], a).require_grad()
    (xa.exp() * 2.0).sum()
    assert b.memory_usage().bytes_in_use == 0 and b.snapshot().nodes == ()
    xb = Tensor.from_floats([1.0], b)
    assert xb.node_id == 0  # each server counts its own ids


def test_from_inner_makes_an_untracked_leaf_sharing_data(ad):
    w = Tensor.from_floats([1.0], ad).require_grad()
    grads = (w * w).sum().backward()
    stepped = w.without_autodiff() - w.grad(grads) * 0.25  # 1 - 0.25 * 2
    leaf = Tensor.from_inner(stepped, ad)
    assert leaf.data is stepped.data and not leaf.is_tracked and leaf.tolist() == [0.5]
    assert leaf.require_grad().is_require_grad
    with pytest.raises(DeviceMismatchError):
        Tensor.from_inner(w, ad)


# -- ops with a constant are built once per constant ---------------------------------------------------


def test_zero_and_negative_zero_are_different_constants(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    positive, negative = x * 0.0, x * -0.0  # the second is built after the first: no cache mix-up
    assert not np.signbit(positive.numpy()).any() and np.signbit(negative.numpy()).all()
    ops = {ad.snapshot().node(t.node_id).op for t in (positive, negative)}
    assert ops == {"mul_scalar(0)", "mul_scalar(-0)"}
    grads = (x * -0.0).sum().backward()
    assert np.signbit(x.grad(grads).numpy()).all()  # grad * -0, as PyTorch gives


def test_constants_are_remembered_in_bounded_memory(ad):
    import tracemalloc

    x = Tensor.from_floats([1.0], ad).require_grad()
    for k in range(300):  # past the bound once, so the measurement below starts from a steady state
        x * float(k)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    for k in range(300, 3000):
        (x * float(k)).sum().backward()
        x = Tensor.from_floats([1.0], ad).require_grad()
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    assert grown < 400 * 1024, grown  # an op a constant kept for ever would be about 2.7 MiB here


def test_a_dropped_constant_stays_in_the_pictures_while_a_graph_uses_it(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    c = Tensor.from_floats([3.0, 4.0], ad)
    pending = (x * c).sum()
    c_id = c.node_id
    del c  # its tensor is gone, but the pending graph reads it
    for _ in range(2):
        (x * 2.0).sum().backward()  # unrelated backwards
    assert ad.snapshot().node(c_id).status is NodeStatus.FREED  # no handle: drawn as freed, still drawn
    pending.backward()
    (x * 2.0).sum().backward()
    assert c_id not in {n.id for n in ad.snapshot().nodes}  # forgotten with the last graph that used it


def test_the_device_names_its_memory_policy_and_checkpointing_strategy_objects():
    from autodiff.checkpointing import BalancedCheckpointing, NoCheckpointing
    from autodiff.memory_management import EagerFreeing, LazyFreeing

    burn = Device.numpy().autodiff()
    pytorch = Device.numpy().autodiff(memory_policy="eager", checkpointing="balanced")
    assert isinstance(burn.server.policy, LazyFreeing) and isinstance(burn.server.strategy, NoCheckpointing)
    assert isinstance(pytorch.server.policy, EagerFreeing)
    assert isinstance(pytorch.server.strategy, BalancedCheckpointing)
    assert (burn.name, pytorch.name) == ("numpy+autodiff", "numpy+autodiff (eager, balanced)")


def test_a_recorder_hears_each_moment_of_a_backward(ad):
    from autodiff.observer import Observer

    class Counting(Observer):
        def __init__(self) -> None:
            self.heard: list[str] = []

        def step_started(self, step) -> None:
            self.heard.append(f"run {int(step.node.id)}")

        def saved_state_freed(self, step, bytes_before, pool) -> None:
            self.heard.append(f"consumed {int(step.node.id)}")

        def swept(self, node_ids, bytes_released) -> None:
            self.heard.append(f"swept {len(node_ids)}")

    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    loss = (x * x + x * 3.0).sum()  # nodes 1 (x*x), 2 (x*3), 3 (+), 4 (sum) over the leaf 0
    recorder = Counting()
    grads = loss.backward(recorder=recorder)
    assert recorder.heard == [
        "run 4",
        "consumed 4",
        "run 3",
        "consumed 3",
        "run 2",
        "consumed 2",
        "run 1",
        "consumed 1",  # order 1: the stack reaches x*3 first
        "run 0",
        "consumed 0",
        "swept 0",
    ]
    assert grads.hook is recorder  # given at creation (Burn's `Gradients::new_with_hook`)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["exp", "sin", "cos", "sinh", "cosh"])
def test_a_rule_that_multiplies_by_a_function_of_x_counts_it_in_the_peak_whether_watched_or_not(op, dtype):
    # `grad * cos(x)` makes cos(x) as a bare array when no recording watches the pool (Buffer.times): the peak and
    # the gradient are what they are when cos(x) is a buffer of its own, with a memory history recording each buffer
    def backward(watched: bool) -> tuple[int, np.ndarray]:
        device = Device.numpy(seed=1)
        device.record_memory_history(watched)
        ad = device.autodiff()
        x = Tensor.random([64, 64], Distribution.Default, ad, dtype=dtype).require_grad()
        recorder = BackwardRecorder()
        grads = getattr(getattr(x * 0.5, op)(), op)().sum().backward(recorder=recorder)
        finished = recorder.events[-1]
        assert isinstance(finished, BackwardFinished)
        return finished.peak_bytes, x.grad(grads).numpy()

    (peak, grad), (watched_peak, watched_grad) = backward(False), backward(True)
    assert peak == watched_peak
    np.testing.assert_array_equal(grad, watched_grad)  # bit for bit: the same arithmetic
