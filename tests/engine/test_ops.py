"""Burn's ops (autodiff/tensor.py, activation.py, loss.py) against PyTorch in float64 and float32, finite differences,
balanced checkpointing and MLX; and each refused with a typed error on bad shapes, dtypes and indices."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from op_cases import CASES, Case, random_inputs, weights_for

from autodiff import (
    Device,
    DeviceMismatchError,
    DTypeError,
    IndexOutOfBoundsError,
    NonFiniteError,
    ShapeMismatchError,
    Tensor,
    UnsupportedOperationError,
    activation,
    loss,
    module,
)
from autodiff.device import mlx_unavailable_reason
from autodiff.module import ConvOptions

REFERENCE = json.loads((Path(__file__).resolve().parent / "torch_reference.json").read_text())
IDS = [c.name for c in CASES]


def engine_values(case: Case, arrays: list[np.ndarray], device: Device, dtype: str = "float64"):
    leaves = [Tensor.from_floats(a, device, dtype=dtype).require_grad() for a in arrays]
    out = case.engine(*leaves)
    weights = Tensor.from_floats(weights_for(out.shape), device, dtype=dtype)
    grads = (out * weights).sum().backward()
    return out.numpy(), [leaf.grad(grads).numpy() for leaf in leaves]


def test_every_case_has_a_reference():
    assert set(REFERENCE["cases"]) == set(IDS)
    assert REFERENCE["dtype"] == "float64"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_agrees_with_pytorch_in_float64(case: Case):
    stored = REFERENCE["cases"][case.name]
    out, grads = engine_values(case, [np.array(a) for a in stored["inputs"]], Device.numpy().autodiff())
    np.testing.assert_allclose(out, stored["output"], rtol=1e-10, atol=1e-12)
    for k, (ours, theirs) in enumerate(zip(grads, stored["grads"], strict=True)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, err_msg=f"gradient of input {k}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_agrees_with_pytorch_in_float32(case: Case):
    """The same inputs rounded to float32, the engine computing in float32: PyTorch's float64 values up to float32's
    precision (the largest difference over every case is about 2e-6)."""
    stored = REFERENCE["cases"][case.name]
    out, grads = engine_values(case, [np.array(a) for a in stored["inputs"]], Device.numpy().autodiff(), "float32")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, stored["output"], rtol=1e-5, atol=1e-5)
    for k, (ours, theirs) in enumerate(zip(grads, stored["grads"], strict=True)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, err_msg=f"gradient of input {k}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_agrees_with_live_pytorch(case: Case):
    torch = pytest.importorskip("torch")
    arrays = random_inputs(case, seed=3)  # inputs the stored reference never saw
    leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    expected = case.torch(torch, *leaves)
    (expected * torch.tensor(weights_for(tuple(expected.shape)))).sum().backward()
    out, grads = engine_values(case, arrays, Device.numpy().autodiff())
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(ours, leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_agrees_with_finite_differences(case: Case):
    assert_gradients_match(case.engine, random_inputs(case, seed=1))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_balanced_checkpointing_gives_the_same_gradients(case: Case):
    arrays = random_inputs(case, seed=2)
    plain = engine_values(case, arrays, Device.numpy().autodiff())
    balanced = engine_values(case, arrays, Device.numpy().autodiff(checkpointing="balanced"))
    for ours, theirs in zip([balanced[0], *balanced[1]], [plain[0], *plain[1]], strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.skipif(mlx_unavailable_reason() is not None, reason="MLX is not installed")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mlx_backend_gives_the_same_gradients(case: Case):
    arrays = random_inputs(case, seed=2)
    expected = engine_values(case, arrays, Device.numpy().autodiff(), "float32")
    got = engine_values(case, arrays, Device.mlx().autodiff(), "float32")
    for ours, theirs in zip([got[0], *got[1]], [expected[0], *expected[1]], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_memory_is_given_back(case: Case):
    """Every buffer an op, its step and its backward made is released once its tensors are dropped, and its
    record forgotten (records, and the indices an indexing op's forward holds, stay one backward longer)."""
    device = Device.numpy().autodiff()
    result = engine_values(case, random_inputs(case), device)
    del result
    x = Tensor.from_floats([1.0], device).require_grad()
    (x * 2.0).backward()
    del x
    gc.collect()
    assert device.memory_usage().bytes_in_use == 0
    assert device.snapshot().pending_steps == ()


def test_saved_tensors_are_only_those_a_rule_needs():
    device = Device.numpy().autodiff()
    x = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], device).require_grad()
    permuted, clamped = x.permute([1, 0]), x.clamp(0.0, 2.0)
    snapshot = device.snapshot()
    assert snapshot.node(permuted.node_id).saved_bytes == 0  # its rule only permutes the gradient back
    assert snapshot.node(clamped.node_id).saved_bytes == 16  # its rule reads x: 4 float32
    grads = (permuted.sum() + clamped.sum()).backward()
    np.testing.assert_array_equal(x.grad(grads).numpy(), [[2.0, 2.0], [1.0, 1.0]])


def test_conv_and_pools_save_only_what_their_rules_read():
    """conv keeps x and the weight (Burn's conv saves both; the bias's rule reads neither), max_pool2d keeps x (its
    rule finds each window's maximum again), avg_pool2d keeps nothing; all counted as the device's memory."""
    device = Device.numpy().autodiff()
    x = Tensor.from_floats(np.ones((1, 2, 4, 4)), device).require_grad()  # 128 bytes
    w = Tensor.from_floats(np.ones((3, 2, 2, 2)), device).require_grad()  # 96 bytes
    b = Tensor.from_floats(np.ones(3), device).require_grad()
    before = device.memory_usage().bytes_in_use
    conv = module.conv2d(x, w, b, PLAIN_2D)
    pooled = module.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1])
    averaged = module.avg_pool2d(x, [2, 2], [2, 2], [0, 0])
    snapshot = device.snapshot()
    assert snapshot.node(conv.node_id).saved_bytes == 128 + 96
    assert snapshot.node(pooled.node_id).saved_bytes == 128
    assert snapshot.node(averaged.node_id).saved_bytes == 0
    assert device.memory_usage().bytes_in_use - before == 4 * (conv.numpy().size + 2 * pooled.numpy().size)


def test_prod_gradient_is_right_with_zeros():
    # Burn divides the product by each element (NaN at a zero); the product of the others is exact
    device = Device.numpy().autodiff()
    x = Tensor.from_floats([2.0, 0.0, 3.0, 0.0, 5.0], device).require_grad()
    np.testing.assert_array_equal(x.grad(x.prod().backward()).numpy(), [0.0, 0.0, 0.0, 0.0, 0.0])
    x = Tensor.from_floats([2.0, 0.0, 3.0, 4.0], device).require_grad()
    np.testing.assert_array_equal(x.grad(x.prod().backward()).numpy(), [0.0, 24.0, 0.0, 0.0])


def test_max_dim_sends_the_gradient_to_the_first_maximum_only():
    device = Device.numpy().autodiff()
    x = Tensor.from_floats([[1.0, 3.0, 3.0]], device).require_grad()
    np.testing.assert_array_equal(x.grad(x.max_dim(1).backward()).numpy(), [[0.0, 1.0, 0.0]])


def test_stable_for_large_inputs():
    device = Device.numpy().autodiff()
    x = Tensor.from_floats([[1000.0, 0.0], [-1000.0, 0.0]], device).require_grad()
    assert np.all(np.isfinite(activation.softmax(x, 1).numpy()))
    assert np.all(np.isfinite(activation.log_softmax(x, 1).numpy()))
    grads = activation.log_sigmoid(x).backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [[0.0, 0.5], [1.0, 0.5]])


def _x() -> Tensor:
    return Tensor.from_floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], Device.numpy().autodiff())


def _zeros(x: Tensor, shape: tuple[int, ...], dtype: str = "float32") -> Tensor:
    return Tensor.from_floats(np.zeros(shape), x.device, dtype=dtype)


PLAIN_2D = ConvOptions([1, 1], [0, 0], [1, 1], 1)


def _conv2d(
    x: Tensor,
    image: tuple[int, ...],
    weight: tuple[int, ...],
    bias: tuple[int, ...] | None = None,
    options: ConvOptions = PLAIN_2D,
) -> Tensor:
    return module.conv2d(_zeros(x, image), _zeros(x, weight), None if bias is None else _zeros(x, bias), options)


# fmt: skip below: a table, one case per row
REFUSALS = [
    ("powf shapes", lambda x: x.powf(Tensor.from_floats([1.0, 2.0], x.device)), ShapeMismatchError),
    ("powf dtype", lambda x: x.powf(Tensor.from_floats([[1.0]], x.device, dtype="float64")), DTypeError),
    ("powf number", lambda x: x.powf(2.0), UnsupportedOperationError),
    ("clamp order", lambda x: x.clamp(2.0, 1.0), ShapeMismatchError),
    ("clamp nan", lambda x: x.clamp_min(float("nan")), NonFiniteError),
    ("max_dim dim", lambda x: x.max_dim(2), ShapeMismatchError),
    ("prod_dim dim", lambda x: x.prod_dim(-3), ShapeMismatchError),
    ("cumsum dim", lambda x: x.cumsum(5), ShapeMismatchError),
    ("permute repeat", lambda x: x.permute([0, 0]), ShapeMismatchError),
    ("permute rank", lambda x: x.permute([0]), ShapeMismatchError),
    ("expand shrink", lambda x: x.expand([2, 2]), ShapeMismatchError),
    ("expand fewer dims", lambda x: x.expand([3]), ShapeMismatchError),
    ("repeat_dim times", lambda x: x.repeat_dim(0, 0), ShapeMismatchError),
    ("flip dim", lambda x: x.flip([3]), ShapeMismatchError),
    ("squeeze size", lambda x: x.squeeze(0), ShapeMismatchError),
    ("unsqueeze rank", lambda x: x.unsqueeze(1), ShapeMismatchError),
    ("slice outside", lambda x: x.slice([(0, 3)]), IndexOutOfBoundsError),
    ("slice empty", lambda x: x.slice([(1, 1)]), IndexOutOfBoundsError),
    ("slice too many dims", lambda x: x.slice([(0, 1), (0, 1), (0, 1)]), ShapeMismatchError),
    ("slice float", lambda x: x.slice([(0.5, 1)]), ShapeMismatchError),
    ("slice_assign shape", lambda x: x.slice_assign([(0, 1)], Tensor.from_floats([1.0], x.device)), ShapeMismatchError),
    ("cat dims", lambda x: Tensor.cat([x, Tensor.from_floats([[1.0]], x.device)], 0), ShapeMismatchError),
    ("cat devices", lambda x: Tensor.cat([x, Tensor.from_floats([[1.0, 2.0, 3.0]], Device.numpy())], 0),
     DeviceMismatchError),
    ("cat empty", lambda x: Tensor.cat([], 0), UnsupportedOperationError),
    ("select floats", lambda x: x.select(0, Tensor.from_floats([0.0], x.device)), DTypeError),
    ("select list", lambda x: x.select(0, [0]), DTypeError),
    ("select outside", lambda x: x.select(1, Tensor.from_ints([0, 3], x.device)), IndexOutOfBoundsError),
    ("select negative", lambda x: x.select(1, Tensor.from_ints([-1], x.device)), IndexOutOfBoundsError),
    ("select rank", lambda x: x.select(1, Tensor.from_ints([[0]], x.device)), ShapeMismatchError),
    ("gather shape", lambda x: x.gather(1, Tensor.from_ints([[0], [1], [2]], x.device)), ShapeMismatchError),
    ("gather outside", lambda x: x.gather(1, Tensor.from_ints([[0], [7]], x.device)), IndexOutOfBoundsError),
    ("scatter values", lambda x: x.scatter(1, Tensor.from_ints([[0], [1]], x.device), x), ShapeMismatchError),
    ("indices device", lambda x: x.select(0, Tensor.from_ints([0], Device.numpy())), DeviceMismatchError),
    ("from_ints floats", lambda x: Tensor.from_ints([0.5], x.device), DTypeError),
    ("from_ints bools", lambda x: Tensor.from_ints([True], x.device), DTypeError),
    ("from_bools ints", lambda x: Tensor.from_bools([1, 0], x.device), DTypeError),
    ("mask shape", lambda x: x.mask_fill(Tensor.from_bools([True], x.device), 0.0), ShapeMismatchError),
    ("mask floats", lambda x: x.mask_fill(x, 0.0), DTypeError),
    ("mask_where source", lambda x: x.mask_where(x.greater_elem(2.0), Tensor.from_floats([1.0], x.device)),
     ShapeMismatchError),
    ("cross_entropy shapes", lambda x: loss.cross_entropy_with_logits(x, Tensor.from_floats([[1.0]], x.device)),
     ShapeMismatchError),
    ("softmax dim", lambda x: activation.softmax(x, 2), ShapeMismatchError),
    ("conv2d rank", lambda x: module.conv2d(x, x, None, PLAIN_2D), ShapeMismatchError),
    ("conv2d weight rank", lambda x: _conv2d(x, (1, 2, 4, 4), (2, 2, 3)), ShapeMismatchError),
    ("conv2d channels", lambda x: _conv2d(x, (1, 3, 4, 4), (2, 2, 3, 3)), ShapeMismatchError),
    ("conv2d kernel larger than the padded input", lambda x: _conv2d(x, (1, 2, 2, 2), (1, 2, 3, 3)),
     ShapeMismatchError),
    ("conv2d groups", lambda x: _conv2d(x, (1, 4, 4, 4), (3, 2, 1, 1), None, ConvOptions([1, 1], [0, 0], [1, 1], 2)),
     ShapeMismatchError),
    ("conv2d bias", lambda x: _conv2d(x, (1, 2, 4, 4), (2, 2, 3, 3), (3,)), ShapeMismatchError),
    ("conv2d dtype", lambda x: module.conv2d(_zeros(x, (1, 2, 4, 4)), _zeros(x, (2, 2, 3, 3), "float64"), None,
                                             PLAIN_2D), DTypeError),
    ("conv2d int weight", lambda x: module.conv2d(_zeros(x, (1, 1, 2, 2)), Tensor.from_ints([[[[1]]]], x.device), None,
                                                  PLAIN_2D), DTypeError),
    ("conv2d devices", lambda x: module.conv2d(_zeros(x, (1, 1, 2, 2)), Tensor.from_floats([[[[1.0]]]], Device.numpy()),
                                               None, PLAIN_2D), DeviceMismatchError),
    ("conv1d options", lambda x: module.conv1d(_zeros(x, (1, 1, 4)), _zeros(x, (1, 1, 2)), None,
                                               ConvOptions([1, 1], [0, 0], [1, 1], 1)), ShapeMismatchError),
    ("conv stride 0", lambda x: ConvOptions([0], [0], [1], 1), ShapeMismatchError),
    ("max_pool2d padding", lambda x: module.max_pool2d(_zeros(x, (1, 1, 4, 4)), [2, 2], [1, 1], [2, 0], [1, 1]),
     ShapeMismatchError),
    ("max_pool2d kernel", lambda x: module.max_pool2d(_zeros(x, (1, 1, 2, 2)), [3, 3], [1, 1], [0, 0], [1, 1]),
     ShapeMismatchError),
    ("max_pool2d rank", lambda x: module.max_pool2d(x, [1, 1], [1, 1], [0, 0], [1, 1]), ShapeMismatchError),
    ("avg_pool2d kernel list", lambda x: module.avg_pool2d(_zeros(x, (1, 1, 4, 4)), [2], [1, 1], [0, 0]),
     ShapeMismatchError),
]  # fmt: skip


@pytest.mark.parametrize(("what", "call", "error"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_with_a_typed_error(what, call, error):
    x = _x()
    before = x.device.snapshot()
    with pytest.raises(error) as raised:
        call(x)
    assert str(raised.value)  # a sentence, not an empty error
    after = x.device.snapshot()
    assert [n.id for n in after.nodes if n.op != "from_floats"] == [
        n.id for n in before.nodes if n.op != "from_floats"
    ]  # refused before any op was registered
