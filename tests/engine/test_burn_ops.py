"""Burn's own autodiff tests of its ops, ported with Burn's inputs, expected values and tolerance.

Each case names its file in crates/burn-backend-tests/tests/autodiff/ and its `#[test]` function (tracel-ai/burn,
0.22.0-pre), and runs twice, as Burn runs its suite: on the plain autodiff device and under balanced
checkpointing. Tensors are float32, as Burn's `FloatElem` in its test backend. `Tolerance::default()` is
Burn's `balanced()`: |a - b| < max(1e-5, 0.005 * max(|a|, |b|)); `permissive()` is 0.01 and 0.01; `assert_eq`
is exact. What could not be ported, and why, is in docs/burn-tests.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

from autodiff import Device, Tensor, activation, loss

DEFAULT, PERMISSIVE, EXACT = (0.005, 1e-5), (0.01, 0.01), (0.0, 0.0)


class Port(NamedTuple):
    file: str
    test: str
    inputs: list  # the leaves' data, each a require_grad() leaf unless listed in `untracked`
    program: Callable[..., Tensor]  # (device, *leaves) -> the tensor backward runs from
    expected: list  # the expected gradient of each leaf, in order (None: not asserted)
    tolerance: tuple[float, float] = DEFAULT
    untracked: tuple[int, ...] = ()


A = [[0.0, 1.0], [3.0, 4.0]]
B = [[6.0, 7.0], [9.0, 10.0]]
C = [[1.0, 7.0], [-2.0, -3.0]]
D = [[4.0, -7.0], [2.0, 3.0]]
M = [[0.5, 1.0], [1.5, 2.0]]
SMALL_A = [[0.0, 0.1], [0.3, 0.4]]
SMALL_B = [[0.2, 0.3], [0.5, 0.6]]
G = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def unary_sandwich(op: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    """The pattern most of Burn's unary tests use: (t1 @ op(t2)) @ t2."""
    return lambda d, t1, t2: (t1 @ op(t2)) @ t2


def ints(d: Device, data: list) -> object:
    return Tensor.from_ints(data, d)


# fmt: skip below: a table, one ported test per row with Burn's values
PORTS = [
    Port("abs.rs", "should_diff_abs", [[[0.0, -1.0], [3.0, 4.0]], [[6.0, 7.0], [9.0, -10.0]]],
         unary_sandwich(Tensor.abs), [[[71.0, 107.0], [71.0, 107.0]], [[84.0, 42.0], [90.0, 54.0]]]),
    Port("abs.rs", "should_diff_abs_no_nans", [[[6.0, 7.0], [9.0, -10.0]], [[0.0, -1.0], [3.0, 4.0]]],
         lambda d, t1, t2: t1 @ t2.abs(), [[[1.0, 7.0], [1.0, 7.0]], [[0.0, -15.0], [-3.0, -3.0]]]),
    Port("trig.rs", "should_diff_cos", [A, B], unary_sandwich(Tensor.cos),
         [[[26.8063, -27.7870], [26.8063, -27.7870]], [[9.222064, -39.123375], [-28.721354, 49.748356]]]),
    Port("trig.rs", "should_diff_sin", [A, B], unary_sandwich(Tensor.sin),
         [[[8.8500, -4.9790], [8.8500, -4.9790]], [[38.668987, 44.194775], [-59.97261, -80.46094]]]),
    Port("trig.rs", "should_diff_tanh", [A, B], unary_sandwich(Tensor.tanh),
         [[[32.0, 32.0], [32.0, 32.0]], [[8.00092, 8.000153], [8.000003, 7.999995]]]),
    Port("trig.rs", "should_diff_cosh", [A, M], unary_sandwich(Tensor.cosh),
         [[[7.092221, 16.696301], [7.092221, 16.696301]], [[17.489855, 27.484539], [39.409813, 86.910278]]]),
    Port("trig.rs", "should_diff_sinh", [A, M], unary_sandwich(Tensor.sinh),
         [[[4.894847, 15.887931], [4.894847, 15.887931]], [[17.284000, 28.412029], [39.302979, 87.498329]]]),
    Port("trig.rs", "should_diff_tan", [A, [[0.5, 1.0], [0.3, 0.8]]], unary_sandwich(Tensor.tan),
         [[[2.532602, 1.596607], [2.532602, 1.596607]], [[9.028598, 14.489801], [18.038082, 21.151270]]]),
    Port("trig.rs", "should_diff_asin", [SMALL_A, SMALL_B], unary_sandwich(Tensor.asin),
         [[[0.435841, 0.969651], [0.435841, 0.969651]], [[0.475300, 0.668141], [0.701834, 1.100658]]]),
    Port("trig.rs", "should_diff_acos", [SMALL_A, SMALL_B], unary_sandwich(Tensor.acos),
         [[[2.077433, 1.543624], [2.077433, 1.543624]], [[0.781337, 0.588496], [0.554804, 0.155979]]]),
    Port("trig.rs", "should_diff_atan", [A, M], unary_sandwich(Tensor.atan),
         [[[3.444365, 5.349211], [3.444365, 5.349211]], [[9.904911, 11.554912], [10.199631, 11.391938]]]),
    Port("pow.rs", "should_diff_powf_scalar", [A, B], unary_sandwich(lambda t: t.powf_scalar(0.4)),
         [[[68.0, 79.0328], [68.0, 79.0328]], [[23.5081, 25.2779], [26.0502, 28.6383]]]),
    Port("pow.rs", "should_diff_powf", [[2.0, 7.0], [4.0, 2.0]], lambda d, a, b: a.powf(b),
         [[32.0, 14.0], [11.09035, 95.34960]]),
    Port("pow.rs", "should_diff_powf_with_untracked_lhs", [[2.0, 7.0], [4.0, 2.0]], lambda d, a, b: a.powf(b),
         [None, [11.09035, 95.34960]], untracked=(0,)),
    Port("pow.rs", "should_diff_powf_with_untracked_rhs", [[2.0, 7.0], [4.0, 2.0]], lambda d, a, b: a.powf(b),
         [[32.0, 14.0], None], untracked=(1,)),
    Port("recip.rs", "should_diff_recip", [[2.0, 5.0, 0.4]], lambda d, x: x.recip(), [[-0.25, -0.04, -6.25]]),
    Port("sign.rs", "should_diff_sign", [[-2.0, -1.0, 0.0, 1.0, 2.0]], lambda d, x: x.sign().sum(),
         [[0.0, 0.0, 0.0, 0.0, 0.0]], EXACT),
    Port("erf.rs", "should_diff_erf", [A, B], unary_sandwich(Tensor.erf),
         [[[32.0, 32.0], [32.0, 32.0]], [[8.0, 8.0], [8.0, 8.0]]]),
    Port("log1p.rs", "should_diff_log1p", [A, B], unary_sandwich(Tensor.log1p),
         [[[64.80622101, 75.49362183], [64.80622101, 75.49362183]],
          [[22.92208481, 24.47565651], [24.72780228, 26.86416626]]]),
    Port("log.rs", "should_diff_log", [A, B], unary_sandwich(Tensor.log),
         [[[60.2652, 72.3130], [60.2652, 72.3130]], [[22.8614, 24.5043], [24.5729, 26.8507]]]),
    Port("neg.rs", "should_diff_neg", [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]]],
         lambda d, t1, t2: -(t1 @ -t2), [[[11.0, 5.0], [11.0, 5.0]], [[3.0, 3.0], [10.0, 10.0]]], EXACT),
    Port("gelu.rs", "should_diff_gelu", [[[0.0, 1.0], [-3.0, 4.0]], [[6.0, -0.5], [9.0, 10.0]]],
         lambda d, t1, t2: t1 @ (t1 @ activation.gelu(t2)),
         [[[1.46281, 1.46281], [48.22866, 153.46280]], [[-15.0000, -1.98757], [17.0000, 17.0000]]], PERMISSIVE),
    Port("log_sigmoid.rs", "should_diff_log_sigmoid", [[[0.8762, -0.1423], [-300.0, 200.0]]],
         lambda d, x: activation.log_sigmoid(x), [[[0.293966, 0.535515], [1.000000, 0.000000]]]),
    Port("softmax.rs", "test_softmax_grad", [A, B], lambda d, t1, t2: activation.softmax(t1 @ t2, 1) @ t2,
         [[[1.179665, 1.179661], [0.005462, 0.005463]], [[0.253469, 0.286237], [0.528630, 2.931664]]], (0.05, 0.5)),
    Port("softmax.rs", "test_log_softmax_grad", [A, B], lambda d, t1, t2: activation.log_softmax(t1 @ t2, 1) @ t2,
         [[[-4.3939, -4.3939], [-12.9709, -12.9709]], [[30.5984, -47.2267], [55.9631, -56.5914]]], PERMISSIVE),
    Port("softmax.rs", "test_quiet_softmax_grad", [A, B], lambda d, t1, t2: activation.softmax(t1 @ t2, 1) @ t2,
         [[[1.179665, 1.179661], [0.005462, 0.005463]], [[0.253469, 0.286237], [0.528630, 2.931664]]], (0.5, 0.2)),
    Port("cross_entropy.rs", "test_cross_entropy_loss_grad", [A, B, [[0.8, 0.2], [0.9, 0.1]]],
         lambda d, t1, t2, targets: loss.cross_entropy_with_logits(t1 @ t2, targets),
         [[[0.26553, 0.26553], [0.44954, 0.44954]], [[-1.34863, 1.34863], [-2.06371, 2.06371]], None], PERMISSIVE),
    Port("maxmin.rs", "should_diff_max_dim", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).max_dim(1),
         [[[50.0, 34.0], [40.0, -10.0]], [[8.0, 10.0], [56.0, 15.0]]]),
    Port("maxmin.rs", "should_diff_min_dim", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).min_dim(1),
         [[[-42.0, 38.0], [-34.0, -24.0]], [[10.0, 8.0], [15.0, 56.0]]]),
    Port("maxmin.rs", "should_diff_min_dim_3d_dim1", [[C], [D]], lambda d, t1, t2: (t1 * t2).min_dim(1),
         [[[[0.0, -7.0], [2.0, 0.0]]], [[[0.0, 7.0], [-2.0, -0.0]]]]),
    Port("aggregation.rs", "should_diff_mean", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).mean().unsqueeze(2),
         [[[3.5, 9.5], [3.5, 9.5]], [[-0.75, -0.75], [3.0, 3.0]]]),
    Port("aggregation.rs", "should_diff_sum_1", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).sum().unsqueeze(2),
         [[[14.0, 38.0], [14.0, 38.0]], [[-3.0, -3.0], [12.0, 12.0]]]),
    Port("aggregation.rs", "should_diff_sum_2", [A, B], lambda d, t1, t2: ((t1 @ t2).sum_dim(1) * (t1 @ t2)).sum(),
         [[[494.0, 722.0], [2990.0, 4370.0]], [[690.0, 690.0], [958.0, 958.0]]]),
    Port("aggregation.rs", "should_diff_mean_dim", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).mean_dim(1),
         [[[4.0, 36.0], [3.0, -17.0]], [[9.0, 9.0], [35.5, 35.5]]]),
    Port("aggregation.rs", "should_diff_sum_dim", [C, D], lambda d, t1, t2: t1 * (t1 @ t2).sum_dim(1),
         [[[8.0, 72.0], [6.0, -34.0]], [[18.0, 18.0], [71.0, 71.0]]]),
    Port("aggregation.rs", "should_diff_prod", [[2.0, 3.0, 4.0]], lambda d, x: x.prod(), [[12.0, 8.0, 6.0]]),
    Port("aggregation.rs", "should_diff_prod_with_negatives", [[2.0, -3.0, 4.0]], lambda d, x: x.prod(),
         [[-12.0, 8.0, -6.0]]),
    Port("aggregation.rs", "should_diff_prod_dim", [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]],
         lambda d, x: x.prod_dim(1).sum(), [[[6.0, 3.0, 2.0], [30.0, 24.0, 20.0]]]),
    Port("aggregation.rs", "should_diff_prod_dim_with_negatives", [[[1.0, -2.0, 3.0], [-4.0, 5.0, 6.0]]],
         lambda d, x: x.prod_dim(0).sum(), [[[-4.0, 5.0, 6.0], [1.0, -2.0, 3.0]]]),
    # #[ignore]d in Burn ("produces NaN due to division by zero"); this engine's prod passes them
    Port("aggregation.rs", "should_diff_prod_single_zero", [[2.0, 0.0, 3.0, 4.0]], lambda d, x: x.prod(),
         [[0.0, 24.0, 0.0, 0.0]]),
    Port("aggregation.rs", "should_diff_prod_multiple_zeros", [[2.0, 0.0, 3.0, 0.0, 5.0]], lambda d, x: x.prod(),
         [[0.0, 0.0, 0.0, 0.0, 0.0]]),
    Port("cumsum.rs", "should_diff_cumsum_dim0", [C, D], lambda d, t1, t2: (t1 * (t1 @ t2).cumsum(0)).sum(),
         [[[-14.0, 24.0], [17.0, 6.0]], [[3.0, 10.0], [-1.0, 37.0]]]),
    Port("cumsum.rs", "should_diff_cumsum_dim1", [C, D], lambda d, t1, t2: (t1 * (t1 @ t2).cumsum(1)).sum(),
         [[[1.0, 69.0], [-13.0, -28.0]], [[18.0, 13.0], [71.0, 58.0]]]),
    Port("cumsum.rs", "should_diff_cumsum_complex", [A, B], lambda d, t1, t2: ((t1 @ t2).cumsum(1) * (t1 @ t2)).sum(),
         [[[371.0, 542.0], [2246.0, 3281.0]], [[507.0, 528.0], [704.0, 733.0]]]),
    Port("permute.rs", "should_diff_permute", [[[[1.0, 7.0], [2.0, 3.0]]], [[[1.0, 7.0], [3.2, 2.0], [3.0, 3.0]]]],
         lambda d, t1, t2: t1 @ t2.permute([0, 2, 1]),
         [[[[7.2, 12.0], [7.2, 12.0]]], [[[3.0, 10.0], [3.0, 10.0], [3.0, 10.0]]]]),
    Port("expand.rs", "should_diff_expand", [[4.0, 7.0, 2.0, 3.0], [2.0, 4.5, 7.0, 3.0]],
         lambda d, t1, t2: (t2.unsqueeze(2) * t1.expand([4, 4])).sum(),
         [[8.0, 18.0, 28.0, 12.0], [16.0, 28.0, 8.0, 12.0]], EXACT),
    Port("repeat_dim.rs", "should_diff_repeat", [C, [[4.0], [2.0]]], lambda d, t1, t2: t1 @ t2.repeat_dim(1, 3),
         [None, [[-3.0], [12.0]]], EXACT),
    Port("repeat_dim.rs", "should_diff_repeat_multi_dim", [C, [[4.0, 2.0], [2.0, 4.0]]],
         lambda d, t1, t2: t1 @ t2.repeat_dim(1, 3), [None, [[-3.0, -3.0], [12.0, 12.0]]], EXACT),
    Port("flip.rs", "should_diff_flip", [[[[1.0, 7.0], [2.0, 3.0]]], [[[3.0, 2.0, 7.0], [3.0, 3.2, 1.0]]]],
         lambda d, t1, t2: t1 @ t2.flip([1, 2]),
         [[[[7.2, 12.0], [7.2, 12.0]]], [[[10.0, 10.0, 10.0], [3.0, 3.0, 3.0]]]]),
    Port("reshape.rs", "should_diff_reshape", [[[1.0, 7.0], [2.0, 3.0]], [4.0, 7.0, 2.0, 3.0]],
         lambda d, t1, t2: t1 @ t2.reshape([2, 2]), [[[11.0, 5.0], [11.0, 5.0]], [3.0, 3.0, 10.0, 10.0]], EXACT),
    Port("transpose.rs", "should_diff_transpose", [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]]],
         lambda d, t1, t2: (t1 @ t2.transpose()).transpose(), [[[6.0, 10.0], [6.0, 10.0]], [[3.0, 10.0], [3.0, 10.0]]]),
    Port("transpose.rs", "should_diff_swap_dims",
         [[[[0.0, 1.0], [3.0, 4.0]], [[6.0, 7.0], [9.0, 10.0]]],
          [[[1.0, 4.0], [2.0, 5.0]], [[7.0, 10.0], [8.0, 11.0]]]],
         lambda d, t1, t2: (t1 @ t2.swap_dims(0, 2)) @ t2.swap_dims(1, 2),
         [[[[66.0, 78.0], [66.0, 78.0]], [[270.0, 306.0], [270.0, 306.0]]],
          [[[22.0, 286.0], [28.0, 316.0]], [[172.0, 652.0], [190.0, 694.0]]]]),
    Port("select.rs", "test_select_grad", [G], lambda d, t: (t @ t.transpose()) @ t.select(0, ints(d, [1, 0])),
         [[[109.0, 148.0, 187.0], [37.0, 58.0, 79.0]]], EXACT),
    Port("gather_scatter.rs", "test_gather_grad", [G],
         lambda d, t: (t @ t.transpose()) @ t.gather(1, ints(d, [[2, 1, 0, 1, 2], [1, 0, 2, 1, 0]])),
         [[[94.0, 150.0, 187.0], [242.0, 305.0, 304.0]]], EXACT),
    Port("gather_scatter.rs", "test_scatter_grad", [G, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]],
         lambda d, t, v: (t @ t.transpose()) @ t.scatter(1, ints(d, [[2, 1, 0], [2, 0, 1]]), v),
         [[[127.0, 181.0, 235.0], [226.0, 316.0, 406.0]], [[19.0, 19.0, 19.0], [64.0, 64.0, 64.0]]], EXACT),
    Port("gather_scatter.rs", "test_scatter_add_grad_partial_indices",
         [[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]], [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], [[4.0, 5.0, 6.0]]],
         lambda d, t1, t2, v: (t1 * t2).scatter(1, ints(d, [[2, 1, 0]]), v),
         [[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], None, [[1.0, 1.0, 1.0]]], EXACT),
    Port("mask.rs", "should_diff_mask_fill", [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]]],
         lambda d, t1, t2: (t1 @ t2).mask_fill(Tensor.from_bools([[True, False], [False, True]], d), 2.0),
         [[[7.0, 3.0], [4.0, 2.0]], [[2.0, 1.0], [3.0, 7.0]]], EXACT),
    Port("mask.rs", "should_diff_mask_where",
         [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]], [[8.8, 9.8], [10.8, 11.8]]],
         lambda d, t1, t2, t3: ((t1 @ t2) @ t3).mask_where(Tensor.from_bools([[True, False], [False, True]], d), t3),
         [[[121.8, 55.0], [110.8, 50.0]], [[27.4, 33.4], [95.0, 115.0]], [[15.0, 18.0], [23.0, 29.0]]]),
    Port("slice.rs", "should_diff_matmul_with_slice", [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0, 100.0], [2.0, 3.0, 15.0]]],
         lambda d, t1, t2: t1 @ t2.slice([(0, 2), (0, 2)]),
         [[[11.0, 5.0], [11.0, 5.0]], [[3.0, 3.0, 0.0], [10.0, 10.0, 0.0]]], EXACT),
    # Burn slices every other row and column with a step (s![0..;2, 0..2], s![0..2, 0..;2]); the engine refuses steps
    # and picks the same rows and columns with select, as its refusal says
    Port("slice.rs", "should_diff_matmul_with_slice_stepped",
         [[[1.0, 7.0], [100.0, 100.0], [2.0, 3.0], [100.0, 100.0]],
          [[4.0, 100.0, 7.0, 100.0], [2.0, 100.0, 3.0, 15.0]]],
         lambda d, t1, t2: t1.select(0, ints(d, [0, 2]))[:, :2] @ t2.select(1, ints(d, [0, 2])),
         [[[11.0, 5.0], [0.0, 0.0], [11.0, 5.0], [0.0, 0.0]], [[3.0, 0.0, 3.0, 0.0], [10.0, 0.0, 10.0, 0.0]]], EXACT),
    Port("slice_assign.rs", "should_diff_matmul_with_slice_assign", [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]],
         [[9.0]]], lambda d, t1, t2, t3: (t1 @ t2).slice_assign([(0, 1), (0, 1)], t3) @ t1,
         [[[58.0, 38.0], [118.0, 82.0]], [[16.0, 15.0], [24.0, 50.0]], None], EXACT),
    Port("slice_assign.rs", "should_diff_matmul_with_slice_assign_complex",
         [[[1.0, 7.0], [2.0, 3.0]], [[4.0, 7.0], [2.0, 3.0]], [[9.0]]],
         lambda d, t1, t2, t3: (t1 @ t2).slice_assign([(0, 1), (0, 1)], t2.slice([(0, 1), (0, 1)]) * t3) @ t1,
         [[[85.0, 65.0], [118.0, 82.0]], [[88.0, 15.0], [24.0, 50.0]], [[32.0]]], EXACT),
]  # fmt: skip

DEVICES = {"autodiff": {}, "balanced": {"checkpointing": "balanced"}}


def burn_approx_eq(actual: np.ndarray, expected: list, tolerance: tuple[float, float]) -> None:
    """Burn's `assert_approx_eq`: equal, or |a - b| < max(absolute, relative * max(|a|, |b|)) element-wise."""
    relative, absolute = tolerance
    expected_array = np.asarray(expected, dtype=np.float32)
    assert actual.shape == expected_array.shape, f"shape {actual.shape} != {expected_array.shape}"
    a, b = actual.astype(np.float64), expected_array.astype(np.float64)
    close = (a == b) | (np.abs(a - b) < np.maximum(absolute, relative * np.maximum(np.abs(a), np.abs(b))))
    assert close.all(), f"got {actual.tolist()}, Burn expects {expected}"


@pytest.mark.parametrize("mode", list(DEVICES))
@pytest.mark.parametrize(
    "port", [pytest.param(p, marks=pytest.mark.burn(p.file, p.test), id=f"{p.file}::{p.test}") for p in PORTS]
)
def test_burn(port: Port, mode: str):
    device = Device.numpy().autodiff(**DEVICES[mode])
    leaves = [Tensor.from_floats(data, device) for data in port.inputs]
    leaves = [t if k in port.untracked else t.require_grad() for k, t in enumerate(leaves)]
    grads = port.program(device, *leaves).backward()
    for leaf, expected in zip(leaves, port.expected, strict=True):
        if expected is not None:
            burn_approx_eq(leaf.grad(grads).numpy(), expected, port.tolerance)
