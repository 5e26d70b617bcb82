"""Burn's `graph_reuse.rs` (burn 0.22.1, crates/burn-backend-tests/tests/autodiff/graph_reuse.rs), ported whole
with Burn's values: a backward refuses a consumed intermediate before anything is consumed, and reusable
parameter leaves are never refused.

Rust moves a tensor into the op that uses it (`x * y` consumes `x` unless it is cloned): the Python drops the
variable (`del`) where Rust moved it, because that is what decides whether a node still has a handle. Burn's
`cat` is not an op of this engine; `cat([a, b, ...]).sum()` is written `a.sum() + b.sum() + ...`, which sends
the same gradient along the same edges (once per edge). Burn's `can_mut()` on a buffer (no other reference to
it) is asked here as "no pending step holds it".
"""

from __future__ import annotations

import pytest

from autodiff import Device, TapeConsumedError, Tensor


def ad() -> Device:
    return Device.numpy().autodiff()


def floats(values: list[float], device: Device) -> Tensor:
    return Tensor.from_floats(values, device).require_grad()


def held_by_a_step(device: Device, tensor: Tensor) -> bool:
    """Whether a pending step's saved state refers to this tensor's buffer (Burn: `!tensor.can_mut()`)."""
    buffer = tensor.data.allocation
    return any(b.allocation is buffer for step in device.server.steps.values() for b in step.saved.values())


def consumed():
    return pytest.raises(TapeConsumedError, match="graph tape has already been consumed")


def test_backward_rejects_a_new_loss_with_consumed_ancestors():
    d = ad()
    x = floats([2.0, 3.0], d)
    derived = x * 2.0
    assert x.grad(derived.sum().backward()).tolist() == [2.0, 2.0]
    # a fresh loss still depends on the consumed intermediate: tracked is about the graph, not the tape
    assert derived.is_tracked
    second_loss = (derived * 3.0).sum()
    with consumed():
        second_loss.backward()


def test_consumed_graph_is_rejected_before_an_incorrect_parameter_update():
    d = ad()
    parameter = floats([2.0, 3.0], d)
    shared = parameter * parameter
    shared.sum().backward()
    loss = (shared * 3.0 + parameter).sum()
    assert loss.tolist() == [44.0]  # the forward is still right, though x^2's step was consumed
    # d(sum(3x^2 + x))/dx = 6x + 1 = [13, 19]; skipping x^2 would give [1, 1] and a wrong update
    with consumed():
        grads = loss.backward()
        parameter = parameter.without_autodiff() - parameter.grad(grads) * 0.25  # never reached
    assert parameter.tolist() == [2.0, 3.0]
    # recomputing the forward gives the whole derivative and allows the update
    shared = parameter * parameter
    grads = (shared * 3.0 + parameter).sum().backward()
    grad = parameter.grad(grads)
    assert grad.tolist() == [13.0, 19.0]
    assert (parameter.without_autodiff() - grad * 0.25).tolist() == [-1.25, -1.75]


@pytest.mark.parametrize("stale_first", [False, True])
def test_rejection_preserves_a_fresh_branch(stale_first):
    d = ad()
    x = floats([2.0, 3.0], d)
    stale = x * 2.0
    stale.sum().backward()
    fresh = x * x
    invalid = (stale + fresh if stale_first else fresh + stale).sum()
    del stale  # moved into the sum in Rust
    with consumed():
        invalid.backward()
    assert x.grad(fresh.sum().backward()).tolist() == [4.0, 6.0]


@pytest.mark.parametrize("keep_shared_handle", [False, True])
def test_existing_losses_cannot_reuse_a_shared_intermediate(keep_shared_handle):
    d = ad()
    x = floats([2.0, 3.0], d)
    shared = x * x
    first = shared.sum()
    second = (shared * 3.0).sum()
    if not keep_shared_handle:
        del shared
    first.backward()
    with consumed():
        second.backward()


def test_shared_losses_can_be_combined_before_backward():
    d = ad()
    x = floats([2.0, 3.0], d)
    shared = x * x
    first = shared.sum()
    second = (shared * 3.0).sum()
    del shared
    assert x.grad((first + second).backward()).tolist() == [16.0, 24.0]


def test_detaching_consumed_ancestry_starts_a_new_lineage():
    d = ad()
    x = floats([2.0, 3.0], d)
    shared = x * x
    shared.sum().backward()
    new_leaf = shared.detach().require_grad()
    grads = (new_leaf * 3.0).sum().backward()
    assert x.grad(grads) is None
    assert new_leaf.grad(grads).tolist() == [3.0, 3.0]


def test_fresh_forwards_can_reuse_a_leaf():
    d = ad()
    x = Tensor.ones([2], d).require_grad()
    for scale in (2.0, 3.0):
        assert x.grad((x * scale).sum().backward()).tolist() == [scale, scale]


def test_reused_leaves_can_be_parents_alongside_deeper_nodes():
    d = ad()
    x = Tensor.ones([2], d).require_grad()
    x.sum().backward()
    first = x * 2.0
    deeper = first * 3.0
    assert x.grad((deeper + x).sum().backward()).tolist() == [7.0, 7.0]
    first = x * 2.0
    deeper = first * 3.0
    grads = (x.sum() + deeper.sum() + x.sum()).backward()  # Burn: cat([x, deeper, x]).sum()
    assert x.grad(grads).tolist() == [8.0, 8.0]


def test_existing_branches_can_share_only_a_leaf_even_after_its_handle_is_dropped():
    d = ad()
    x = Tensor.ones([2], d).require_grad()
    y = Tensor.ones([2], d).require_grad()
    first = x * 2.0
    second = x * y
    del x  # moved into `x * y` in Rust
    first.sum().backward()
    assert y.grad(second.sum().backward()).tolist() == [1.0, 1.0]


def test_shared_intermediates_and_cat_accumulate_once_per_edge():
    d = ad()
    x = Tensor.ones([2], d).require_grad()
    shared = x * 2.0
    grads = (shared.sum() + (shared * 3.0).sum()).backward()  # Burn: cat([shared, shared * 3]).sum()
    assert x.grad(grads).tolist() == [8.0, 8.0]
    with consumed():
        (shared.sum() + shared.sum()).backward()  # Burn: cat([shared, shared]).sum()


def test_backward_twice_on_the_same_output_is_rejected():
    d = ad()
    output = Tensor.ones([2], d).require_grad().sum()
    clone = output  # a Rust clone is the same node
    output.backward()
    with consumed():
        output.backward()
    with consumed():
        clone.backward()


def test_orphan_cleanup_releases_saved_buffers_with_a_reusable_leaf_still_alive():
    d = ad()
    leaf = Tensor.ones([2], d).require_grad()
    leaf.sum().backward()
    saved = Tensor.from_floats([2.0, 3.0], d)
    assert not held_by_a_step(d, saved)
    abandoned = leaf * saved
    assert held_by_a_step(d, saved), "the unused backward step must hold a buffer reference"
    del abandoned
    Tensor.ones([2], d).require_grad().sum().backward()  # an unrelated backward sweeps the orphan
    assert not held_by_a_step(d, saved), "orphan cleanup must release the saved buffer despite the live leaf"
    assert leaf.grad(leaf.sum().backward()) is not None


def test_cleanup_preserves_live_saved_buffers_and_releases_them_after_backward():
    d = ad()
    leaf = Tensor.ones([2], d).require_grad()
    saved = Tensor.from_floats([2.0, 3.0], d)
    output = leaf * saved
    assert held_by_a_step(d, saved)
    Tensor.ones([2], d).require_grad().sum().backward()
    assert held_by_a_step(d, saved), "a live branch must keep its saved buffer"
    grads = output.sum().backward()
    assert leaf.grad(grads).tolist() == [2.0, 3.0]
    del grads
    assert not held_by_a_step(d, saved), "consumed steps must release their saved buffers"
