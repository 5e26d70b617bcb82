"""Burn's own behaviour, pinned: autodiff tests ported from Burn's test suite with Burn's expected values
(crates/burn-backend-tests/tests/autodiff/*.rs), and the places where this engine used to differ,
each with the Burn source file it comes from.

Rust moves a tensor into the op that uses it (`a * b` consumes `a` unless it is cloned). Where that
matters to memory management, the Python below drops the variable (`del`) at the point Rust moved it.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, Distribution, NodeStatus, TapeConsumedError, Tensor
from autodiff.trace import Recomputed

KIB = 1024
DATA = [[1.0, 2.0], [3.0, 4.0]]


def ad() -> Device:
    return Device.numpy().autodiff()


def leaf(data, device: Device, grad: bool = True) -> Tensor:
    t = Tensor.from_floats(data, device)
    return t.require_grad() if grad else t


def grad_of(t: Tensor, grads) -> np.ndarray:
    return t.grad(grads).numpy()


# -- ported from Burn's tests: values as Burn asserts them -------------------------------------------


def test_should_diff_mul():  # mul.rs
    d = ad()
    a, b = leaf([1.0, 7.0], d), leaf([4.0, 7.0], d)
    out = a * b
    grads = out.backward()
    np.testing.assert_array_equal(grad_of(a, grads), [4.0, 7.0])
    np.testing.assert_array_equal(out.numpy(), [4.0, 49.0])


def test_should_diff_mul_scalar():  # mul.rs
    d = ad()
    a = leaf([2.0, 5.0], d)
    out = a * 4.0
    grads = out.backward()
    np.testing.assert_array_equal(out.numpy(), [8.0, 20.0])
    np.testing.assert_array_equal(grad_of(a, grads), [4.0, 4.0])


def test_mul_complex_1():  # mul.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [13.0, -3.0]], d), leaf([[4.0, 7.0], [2.0, 3.0]], d)
    t3 = leaf([[2.0, 2.0], [2.0, 2.0]], d)
    grads = (t1 * ((t1 * t2) * t3)).backward()
    np.testing.assert_array_equal(grad_of(t1, grads), [[16.0, 196.0], [104.0, -36.0]])
    np.testing.assert_array_equal(grad_of(t2, grads), [[2.0, 98.0], [338.0, 18.0]])


def test_should_diff_matmul():  # matmul.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [2.0, 3.0]], d), leaf([[4.0, 7.0], [2.0, 3.0]], d)
    t3 = t1 @ t2
    grads = t3.backward()
    np.testing.assert_array_equal(grad_of(t1, grads), [[11.0, 5.0], [11.0, 5.0]])
    np.testing.assert_array_equal(grad_of(t2, grads), [[3.0, 3.0], [10.0, 10.0]])
    np.testing.assert_array_equal(t3.numpy(), [[18.0, 28.0], [14.0, 23.0]])


def test_matmul_complex_1_and_2():  # matmul.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [13.0, -3.0]], d), leaf([[4.0, 7.0], [2.0, 3.0]], d)
    t3 = leaf([[2.0, 2.0], [2.0, 2.0]], d)
    grads = ((t1 @ t2) @ t3).backward()
    np.testing.assert_array_equal(grad_of(t1, grads), [[44.0, 20.0], [44.0, 20.0]])
    np.testing.assert_array_equal(grad_of(t2, grads), [[56.0, 56.0], [16.0, 16.0]])
    grads = (t1 @ ((t1 @ t2) @ t3)).backward()
    np.testing.assert_array_equal(grad_of(t1, grads), [[800.0, 792.0], [360.0, 592.0]])
    np.testing.assert_array_equal(grad_of(t2, grads), [[264.0, 264.0], [344.0, 344.0]])


def test_should_diff_exp():  # exp.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [-2.0, -3.0]], d), leaf([[4.0, -7.0], [2.0, 3.0]], d)
    grads = (t1 @ t2.exp()).backward()
    np.testing.assert_allclose(grad_of(t1, grads), [[54.5991, 27.4746], [54.5991, 27.4746]], rtol=1e-4)
    np.testing.assert_allclose(grad_of(t2, grads), [[-5.4598e01, -9.1188e-04], [2.9556e01, 8.0342e01]], rtol=1e-4)


@pytest.mark.parametrize(
    ("build", "expected_1", "expected_2"),
    [
        (lambda t1, t2: ((t1 @ t2) @ t1) * t2, [[593.0, 463.0], [487.0, 539.0]], [[734.0, 294.0], [1414.0, 242.0]]),
        (
            lambda t1, t2: (((t1 @ t2) @ t1) + 17.0) + t2,
            [[166.0, 110.0], [212.0, 156.0]],
            [[113.0, 141.0], [33.0, 41.0]],
        ),
        (
            lambda t1, t2: (((t1 @ t2) @ t1) - t2) + ((t1 @ t2) @ t1),
            [[332.0, 220.0], [424.0, 312.0]],
            [[223.0, 279.0], [63.0, 79.0]],
        ),
    ],
    ids=["full_complex_1", "full_complex_2", "full_complex_3"],
)
def test_should_diff_full_complex(build, expected_1, expected_2):  # complex.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [13.0, -3.0]], d), leaf([[4.0, 7.0], [2.0, 3.0]], d)
    grads = build(t1, t2).backward()
    np.testing.assert_array_equal(grad_of(t1, grads), expected_1)
    np.testing.assert_array_equal(grad_of(t2, grads), expected_2)


def test_should_diff_relu():  # relu.rs
    d = ad()
    t1, t2 = leaf([[1.0, 7.0], [-2.0, -3.0]], d), leaf([[4.0, -7.0], [2.0, 3.0]], d)
    grads = ((t1 @ t2).relu() @ t2).backward()
    np.testing.assert_array_equal(grad_of(t1, grads), [[-47.0, 9.0], [-35.0, 15.0]])
    np.testing.assert_array_equal(grad_of(t2, grads), [[15.0, 13.0], [-2.0, 39.0]])


def test_should_diff_sigmoid_and_no_overflow():  # sigmoid.rs
    d = ad()
    t = leaf([0.8762], d)
    np.testing.assert_allclose(grad_of(t, t.sigmoid().backward()), [0.207549], rtol=1e-4)
    t = leaf([-90.0], d)
    np.testing.assert_allclose(grad_of(t, t.sigmoid().backward()), [0.0], atol=1e-6)


def test_should_diff_sqrt():  # sqrt.rs
    d = ad()
    t1, t2 = leaf([[0.0, 1.0], [3.0, 4.0]], d), leaf([[6.0, 7.0], [9.0, 10.0]], d)
    grads = ((t1 @ t2.sqrt()) @ t2).backward()
    np.testing.assert_allclose(grad_of(t1, grads), [[82.112640, 99.083275], [82.112640, 99.083275]], rtol=1e-5)
    np.testing.assert_allclose(grad_of(t2, grads), [[30.309311, 33.120457], [34.581974, 38.769463]], rtol=1e-5)


# -- memory_management.rs (all of its tests, in its order) -----------------------------------------------


def test_mm_independent_trees():
    d = ad()
    t0, t1, t2, t3 = (leaf(DATA, d) for _ in range(4))
    t6 = (t0 * t1) * (t2 * t3)
    t7, t8, t9, t10 = (leaf(DATA, d) for _ in range(4))
    t13 = (t7 * t8) * (t9 * t10)
    t6.backward()
    grads = t13.backward()
    assert all(t.grad(grads) is not None for t in (t7, t8, t9, t10))


def test_mm_crossover_trees_root_unavailable():
    d = ad()
    t0, t1, t2, t3 = (leaf(DATA, d) for _ in range(4))
    t4 = t0 * t1
    t6 = t4 * (t2 * t3)
    t9 = leaf(DATA, d) * leaf(DATA, d)
    t10 = t4 * t9
    del t4  # moved into t10 in Rust
    t6.backward()
    with pytest.raises(TapeConsumedError):
        t10.backward()


def test_mm_crossover_trees_with_referred_subtree():
    d = ad()
    t0, t1, t2, t3 = (leaf(DATA, d) for _ in range(4))
    t4 = t0 * t1
    t6 = t4 * (t2 * t3)
    t7, t8 = leaf(DATA, d), leaf(DATA, d)
    t9 = t7 * t8
    _t10 = t4 * t9
    del t4
    t6.backward()
    grads = t9.backward()  # t9 is still referenced: its own tree stays usable
    assert t7.grad(grads) is not None and t8.grad(grads) is not None


def three_crossover_trees(d: Device) -> tuple[Tensor, Tensor, Tensor, tuple[Tensor, ...]]:
    """The first tree (t6) and the third (t13) share their right halves with a second one (t14) between them;
    last, the third tree's leaves."""
    t0, t1, t2, t3 = (leaf(DATA, d) for _ in range(4))
    t5 = t2 * t3
    t6 = (t0 * t1) * t5
    t7, t8, t9, t10 = (leaf(DATA, d) for _ in range(4))
    t12 = t9 * t10
    t13 = (t7 * t8) * t12
    t14 = t5 * t12  # moves t5 and t12 in Rust
    return t6, t13, t14, (t7, t8, t9, t10)


def test_mm_three_crossover_trees_last_still_usable():
    d = ad()
    t6, t13, _t14, t13_leaves = three_crossover_trees(d)  # `_tensor_14` lives to the end, unused
    t6.backward()
    grads = t13.backward()
    assert len(grads) == 4  # t7, t8, t9, t10: each gets the product of the other three
    for t in t13_leaves:
        np.testing.assert_allclose(grad_of(t, grads), np.array(DATA) ** 3)


def test_mm_three_crossover_trees_middle_one_unavailable():
    d = ad()
    t6, _t13, t14, _ = three_crossover_trees(d)  # `_tensor_13` lives to the end, unused
    t6.backward()
    with pytest.raises(TapeConsumedError):
        t14.backward()


def test_mm_self_referencing_tree():
    d = ad()
    t0, t1, t2 = (leaf(DATA, d) for _ in range(3))
    t3 = t0 * t1
    grads = (t3 * (t2 * t3)).backward()
    np.testing.assert_allclose(grad_of(t2, grads), (np.array(DATA) ** 2) ** 2)


def test_mm_with_non_impacting_detach():
    d = ad()
    t1, t2, t3 = (leaf(DATA, d) for _ in range(3))
    grads = ((t1 * t2).detach() * t3).backward()
    assert t3.grad(grads) is not None and t1.grad(grads) is None


def test_mm_with_missing_require_grad_after_cleanup():
    d = ad()
    t1, t2, t3 = leaf(DATA, d), leaf(DATA, d, grad=False), leaf(DATA, d, grad=False)
    t5 = (t1 * t2) * t3
    leaf(DATA, d).backward()  # a trivial backward, to trigger a cleanup
    grads = t5.backward()
    assert t1.grad(grads) is not None and t2.grad(grads) is None and t3.grad(grads) is None


def test_mm_with_detach_after_cleanup():
    d = ad()
    t1, t2, t3 = (leaf(DATA, d) for _ in range(3))
    t5 = (t1 * t2) * t3.detach()
    leaf(DATA, d).backward()
    grads = t5.backward()
    assert t1.grad(grads) is not None and t2.grad(grads) is not None and t3.grad(grads) is None


def test_mm_deletables_propagate_well():
    d = ad()
    t2 = leaf(DATA, d) * leaf(DATA, d)
    t3 = t2.exp()
    _t4 = t3.log()
    t2.backward()
    with pytest.raises(TapeConsumedError):
        t3.backward()


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")  # exp applied five times: inf, as in Burn
def test_mm_node_explored_once_can_still_be_tagged_as_useful_when_found_again_deeper():
    # t2 is reached first through the shallow t4, then again deeper through t8: it must stay useful
    d = ad()
    for _ in range(12):
        t0, t1 = leaf(DATA, d), leaf(DATA, d)
        t2 = t1.exp()
        t3 = t0.exp()
        _t4 = t3 * t2
        t8 = t2.exp().exp().exp().exp()
        del t2  # moved into `t2.exp()` in Rust
        t3.backward()
        grads = t8.backward()
        assert t1.grad(grads) is not None


# -- where this engine used to differ from Burn ----------------------------------------------------------


def test_detach_keeps_a_grad_leaf_a_grad_leaf():
    # ops/tensor.rs, float_detach: "we remove it from the graph, but we still want to keep the require_grad"
    d = ad()
    x = leaf([1.0, 2.0], d)
    detached = x.detach()
    assert detached.is_require_grad and detached.node_id != x.node_id
    grads = (detached * 3.0).sum().backward()
    np.testing.assert_array_equal(grad_of(detached, grads), [3.0, 3.0])
    assert x.grad(grads) is None  # the gradient stops at the detached leaf
    op_output = (x * 2.0).detach()
    assert not op_output.is_tracked  # an op output is not require_grad: its detach is untracked


@pytest.mark.parametrize("op", ["tanh", "sigmoid", "relu", "sqrt"])
def test_activations_save_their_input_not_their_output(op):
    # ops/activation.rs and ops/tensor.rs: `let state = prep.checkpoint(&tensor)`, recomputed in backward
    d = ad()
    x = Tensor.random([256, 256], Distribution.uniform(0.1, 1.0), d).require_grad()
    loss = getattr(x, op)().sum()
    usage = d.memory_usage().bytes_in_use
    assert usage == 256 * KIB + 4  # x and the loss: the op's output is not kept (its input is x itself)
    step = next(n for n in d.snapshot().nodes if n.op == op)
    assert step.saved_bytes == 256 * KIB and step.held_bytes == 0
    assert x.grad(loss.backward()) is not None


def test_a_step_that_can_never_run_is_freed_at_cleanup():
    # runtime/memory_management.rs: consuming an unreferenced node makes its descendants unavailable,
    # and `free_unavailable_nodes` frees them even while their own tensor is alive
    d = ad()
    x = Tensor.random([256, 256], Distribution.Default, d).require_grad()
    t2 = x * 2.0
    t3 = t2.exp()  # saves its input, t2
    loss = t2.sum()
    del t2  # `t2.sum()` moves t2 in Rust
    loss.backward()
    assert d.memory_usage().bytes_in_use == 512 * KIB + 4  # x, t3 and the loss; exp's saved input is gone
    assert d.snapshot().node(t3.node_id).status is NodeStatus.FREED
    with pytest.raises(TapeConsumedError):
        t3.sum().backward()


def test_balanced_checkpointing_keeps_the_output_of_an_op_with_an_untracked_input():
    # checkpoint/strategy.rs: "When a parent is untracked, we can't easily checkpoint its state"
    d = Device.numpy().autodiff(checkpointing="balanced")
    x = leaf([[0.5, 1.0], [1.5, 2.0]], d)
    c = leaf([[2.0, 3.0], [4.0, 5.0]], d, grad=False)
    a = x * c
    y = a * x  # saves a (tracked producer) and x
    recorder = BackwardRecorder()
    grads = y.sum().backward(recorder=recorder)
    recomputed = [e.node_id for e in recorder.events if isinstance(e, Recomputed)]
    assert a.node_id not in recomputed  # kept, as Burn keeps a compute-bound output
    expected = 2 * np.array([[0.5, 1.0], [1.5, 2.0]]) * np.array([[2.0, 3.0], [4.0, 5.0]])
    np.testing.assert_allclose(grad_of(x, grads), expected)


# -- Python's own memory stays flat -------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_no_bookkeeping_grows_with_iterations(policy):
    d = Device.numpy().autodiff(memory_policy=policy)
    x = leaf([1.0, 2.0], d)
    for _ in range(1000):
        loss = (x * x + x * 3.0).sum()
        del loss
        Tensor.from_floats([1.0], d)  # a dropped constant
    memory = d.server.memory
    if policy == "lazy":  # Burn keeps abandoned graphs until a backward: x and 4 steps a pass, no constants
        assert len(memory.records) == 1 + 4 * 1000
    else:  # PyTorch frees each graph with its loss
        snap = d.snapshot()
        assert len(snap.pending_steps) <= 1 and len(snap.nodes) <= 10
    for _ in range(5):
        (x * 2.0).sum().backward()
    assert len(memory.records) <= 10


@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_python_heap_is_flat_over_forward_backward_iterations(policy):
    d = Device.numpy().autodiff(memory_policy=policy)
    x = leaf([1.0, 2.0], d)

    def iterate(n: int) -> None:
        for _ in range(n):
            (x * x + x * 3.0).sum().backward()
            Tensor.from_floats([1.0], d)

    iterate(200)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    iterate(2000)
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    assert grown < 20 * KIB, grown
