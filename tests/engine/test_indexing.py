"""Python's indexing on a Tensor (`t[0]`, `t[1:3]`, `t[:, 0]`, `t[..., -1]`), `len` and iteration: one recorded node
per expression, numpy's shapes (but shape [1] where numpy gives a rank-0 array: Burn has none), and a typed refusal
naming the op to use for what Burn cannot do. The gradients of every form are checked against PyTorch and finite
differences in test_ops.py (the `index x[...]` cases of op_cases.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff import (
    Device,
    IndexOutOfBoundsError,
    ShapeMismatchError,
    Tensor,
    UnsupportedOperationError,
)

M = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _m() -> Tensor:
    return Tensor.from_floats(M, Device.numpy().autodiff()).require_grad()


# each key as Python passes it (np.s_[...] is the key the brackets make), and the op name it records
KEYS = [
    (np.s_[0], "index[0]"),
    (np.s_[-1], "index[-1]"),
    (np.s_[1:3], "index[1:3]"),
    (np.s_[:, 0], "index[:, 0]"),
    (np.s_[..., -1], "index[..., -1]"),
    (np.s_[1:3, 0], "index[1:3, 0]"),
    (np.s_[1:, :-1], "index[1:, :-1]"),
    (np.s_[0, 1], "index[0, 1]"),
    (np.s_[-10:10, 1:], "index[-10:10, 1:]"),  # Python clamps bounds outside the dim
    (np.s_[0:2:1], "index[0:2:1]"),
    (np.s_[...], "index[...]"),
    (np.s_[0, ...], "index[0, ...]"),
]


@pytest.mark.parametrize(("key", "op"), KEYS, ids=[op for _, op in KEYS])
def test_one_node_per_expression_with_numpys_values(key, op):
    x = _m()
    before = len(x.device.snapshot().nodes)
    part = x[key]
    snapshot = x.device.snapshot()
    assert len(snapshot.nodes) == before + 1
    node = snapshot.node(part.node_id)
    assert node.op == op
    assert [int(i) for i in node.inputs] == [int(x.node_id)]
    expected = np.array(M)[key]
    np.testing.assert_array_equal(part.numpy(), expected.reshape(expected.shape or (1,)))


def test_an_integer_on_a_vector_gives_one_value_of_shape_1():
    v = Tensor.from_floats([7.0, 8.0, 9.0], Device.numpy().autodiff())
    assert v[0].shape == (1,) and v[0].item() == 7.0
    assert v[-1].item() == 9.0
    assert _m()[1, 2].shape == (1,)
    assert v[0][0].shape == (1,)  # a one-value tensor indexed again stays one


def test_cs231n_neuron_on_vectors():
    """CS231n's neuron, f = σ(w0·x0 + w1·x1 + w2), in its notes' own indexing (cs231n.github.io/optimization-2):
    its published gradients at w = [2, -3, -3], x = [-1, -2]."""
    ad = Device.numpy().autodiff()
    w = Tensor.from_floats([2.0, -3.0, -3.0], ad).require_grad()
    x = Tensor.from_floats([-1.0, -2.0], ad).require_grad()
    f = (w[0] * x[0] + w[1] * x[1] + w[2]).sigmoid()
    assert f.shape == (1,)
    assert f.item() == pytest.approx(1 / (1 + math.exp(-1.0)), abs=1e-6)  # the dot product is 1
    grads = f.backward()
    np.testing.assert_allclose(w.grad(grads).numpy(), [-0.1966, -0.3932, 0.1966], atol=1e-4)
    np.testing.assert_allclose(x.grad(grads).numpy(), [0.3932, -0.5898], atol=1e-4)


def test_len_and_iteration_along_the_first_dim():
    x = _m()
    assert len(x) == 2 and len(x[0]) == 3 and len(x[0, 0]) == 1
    rows = list(x)
    assert [r.tolist() for r in rows] == M
    snapshot = x.device.snapshot()
    assert [snapshot.node(r.node_id).op for r in rows] == ["index[0]", "index[1]"]
    assert [v.item() for v in Tensor.from_floats([1.0, 2.0, 3.0], x.device)] == [1.0, 2.0, 3.0]
    grads = sum(row * float(k + 1) for k, row in enumerate(x)).sum().backward()
    np.testing.assert_array_equal(x.grad(grads).numpy(), [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])


def test_a_sum_over_zip_gives_the_gradient_of_the_dot_product():
    ad = Device.numpy().autodiff(checkpointing="balanced")
    w_values, x_values = [1.5, -2.0, 0.5], [0.3, 0.7, -1.2]
    w = Tensor.from_floats(w_values, ad, dtype="float64").require_grad()
    x = Tensor.from_floats(x_values, ad, dtype="float64").require_grad()
    looped = sum(wi * xi for wi, xi in zip(w, x, strict=True))
    assert isinstance(looped, Tensor)
    grads = looped.backward()
    whole = (w * x).sum().backward()
    np.testing.assert_allclose(looped.numpy(), [np.dot(w_values, x_values)], rtol=1e-15)
    np.testing.assert_allclose(w.grad(grads).numpy(), x_values, rtol=1e-15)  # d(w·x)/dw = x
    np.testing.assert_allclose(x.grad(grads).numpy(), w_values, rtol=1e-15)
    np.testing.assert_allclose(w.grad(grads).numpy(), w.grad(whole).numpy(), rtol=1e-15)
    np.testing.assert_allclose(x.grad(grads).numpy(), x.grad(whole).numpy(), rtol=1e-15)


def test_burn_slice_with_python_indexing():
    """Burn's slice.rs `should_diff_matmul_with_slice` (crates/burn-backend-tests/tests/autodiff/slice.rs, 0.22.0-pre)
    with its inputs and expected gradients, its `slice([0..2, 0..2])` written `t2[:, :2]`."""
    ad = Device.numpy().autodiff()
    t1 = Tensor.from_floats([[1.0, 7.0], [2.0, 3.0]], ad).require_grad()
    t2 = Tensor.from_floats([[4.0, 7.0, 100.0], [2.0, 3.0, 15.0]], ad).require_grad()
    grads = (t1 @ t2[:, :2]).backward()
    np.testing.assert_array_equal(t1.grad(grads).numpy(), [[11.0, 5.0], [11.0, 5.0]])
    np.testing.assert_array_equal(t2.grad(grads).numpy(), [[3.0, 3.0, 0.0], [10.0, 10.0, 0.0]])


def test_numpy_sees_a_tensor_as_one_array():
    """`t[0]` of a vector is again a vector, so numpy must not read a tensor as nested sequences (it would index
    64 dims deep, recording a node each time): np.asarray(t) is t.numpy(), and numpy's operators defer to the
    tensor's own, which refuse an array instead of computing on an untracked copy."""
    x = _m()
    count = len(x.device.snapshot().nodes)
    np.testing.assert_array_equal(np.asarray(x), M)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.array([x, x]).shape == (2, 2, 3)
    assert isinstance(np.float64(2.0) * x, Tensor)
    with pytest.raises(UnsupportedOperationError, match="ndarray"):
        np.ones(3) * x  # noqa: B018
    assert len(x.device.snapshot().nodes) == count + 1  # only np.float64(2.0) * x


# fmt: skip below: a table, one refusal per row: the key, the error and words its message must have
REFUSALS = [
    ("step 2", np.s_[::2], UnsupportedOperationError, "Tensor.from_ints"),
    ("step 2 in the second dim", np.s_[:, 0:4:2], UnsupportedOperationError, "contiguous"),
    ("step -1", np.s_[::-1], UnsupportedOperationError, "flip"),
    ("None", np.s_[None], UnsupportedOperationError, "unsqueeze_dim"),
    ("None beside a slice", np.s_[:, None], UnsupportedOperationError, "unsqueeze_dim"),
    ("list", [0, 1], UnsupportedOperationError, "select"),
    ("list in a tuple", np.s_[:, [0, 2]], UnsupportedOperationError, "Tensor.from_ints"),
    ("bool", True, UnsupportedOperationError, "mask_fill"),
    ("float", 0.5, UnsupportedOperationError, "whole number"),
    ("float bound", np.s_[0.5:], UnsupportedOperationError, "whole numbers"),
    ("two ellipses", np.s_[..., 0, ...], UnsupportedOperationError, "only one"),
    ("int past the end", 2, IndexOutOfBoundsError, "use 0 to 1, or -2 to -1"),
    ("negative int past the start", -3, IndexOutOfBoundsError, "out of range for dim 0 of size 2"),
    ("int past the end of dim 1", np.s_[:, 3], IndexOutOfBoundsError, "dim 1 of size 3"),
    ("empty slice", np.s_[1:1], IndexOutOfBoundsError, "no empty tensors"),
    ("slice past the end", np.s_[5:], IndexOutOfBoundsError, "has no element"),
    ("reversed slice in dim 1", np.s_[:, 2:1], IndexOutOfBoundsError, "of dim 1"),
    ("too many parts", np.s_[0, 0, 0], ShapeMismatchError, "3 parts"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "key", "error", "words"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_with_a_typed_error_saying_what_to_use(what, key, error, words):
    x = _m()
    before = len(x.device.snapshot().nodes)
    with pytest.raises(error) as raised:
        x[key]  # noqa: B018
    assert words in str(raised.value)
    assert len(x.device.snapshot().nodes) == before  # refused before any op was registered


def test_index_tensors_are_refused_with_the_op_that_takes_them():
    x = _m()
    with pytest.raises(UnsupportedOperationError, match="select"):
        x[Tensor.from_ints([0, 1], x.device)]  # noqa: B018
    with pytest.raises(UnsupportedOperationError, match="mask_where"):
        x[x.greater_elem(2.0)]  # noqa: B018
    with pytest.raises(UnsupportedOperationError, match="select"):
        x[x]  # noqa: B018
