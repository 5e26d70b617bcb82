"""Every op from Burn's list, written twice: on this engine and in PyTorch, on the same random inputs.

`tests/engine/make_torch_reference.py` runs the PyTorch side in float64 and stores what it gives in
`torch_reference.json`; `test_ops.py` compares the engine to those values (and to PyTorch itself where torch
is installed), so the suite needs no PyTorch to run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodiff import Tensor, activation, loss, module
from autodiff.module import ConvOptions


@dataclass(frozen=True)
class Case:
    name: str
    engine: Callable[..., Tensor]
    torch: Callable[..., Any]  # (torch module, *tensors) -> tensor
    inputs: tuple[tuple[tuple[int, ...], float, float], ...]  # per input: shape, low, high (uniform)


def _ints(x: Tensor, values: list) -> Any:
    return Tensor.from_ints(values, x.device)


def _index_case(text: str, key: Any, shape: tuple[int, ...]) -> Case:
    """Python's `x[text]` on a tensor of `shape`; PyTorch indexes as numpy does, and where it gives a rank-0 tensor
    the engine gives shape [1] (Burn has no rank-0 tensor)."""
    return Case(
        f"index x[{text}] {len(shape)}-D",
        lambda x: x[key],
        lambda t, x: _rank_at_least_1(x[key]),
        ((shape, -2.0, 2.0),),
    )


def _rank_at_least_1(out: Any) -> Any:
    return out.reshape(1) if out.dim() == 0 else out


GATHER_INDEX = [[0, 2, 2, 1], [3, 0, 0, 0], [1, 1, 3, 2]]
SELECT_INDEX = [2, 0, 2]
MASK = [[True, False, True, False], [False, False, True, True], [True, True, False, False]]
X = ((3, 4), -2.0, 2.0)
UNIT = ((3, 4), -0.9, 0.9)
POSITIVE = ((3, 4), 0.5, 2.0)

CASES = [
    Case("abs", lambda x: x.abs(), lambda t, x: x.abs(), (X,)),
    Case("powf", lambda a, b: a.powf(b), lambda t, a, b: a.pow(b), (POSITIVE, X)),
    Case("tan", lambda x: x.tan(), lambda t, x: x.tan(), (((3, 4), -1.2, 1.2),)),
    Case("sinh", lambda x: x.sinh(), lambda t, x: x.sinh(), (X,)),
    Case("cosh", lambda x: x.cosh(), lambda t, x: x.cosh(), (X,)),
    Case("tanh", lambda x: x.tanh(), lambda t, x: x.tanh(), (X,)),
    Case("asin", lambda x: x.asin(), lambda t, x: x.asin(), (UNIT,)),
    Case("acos", lambda x: x.acos(), lambda t, x: x.acos(), (UNIT,)),
    Case("atan", lambda x: x.atan(), lambda t, x: x.atan(), (X,)),
    Case("erf", lambda x: x.erf(), lambda t, x: x.erf(), (X,)),
    Case("log1p", lambda x: x.log1p(), lambda t, x: x.log1p(), (((3, 4), -0.5, 3.0),)),
    Case("recip", lambda x: x.recip(), lambda t, x: x.reciprocal(), (POSITIVE,)),
    Case("sign", lambda x: x.sign() * x, lambda t, x: x.sign() * x, (X,)),
    Case("clamp", lambda x: x.clamp(-1.0, 0.5), lambda t, x: x.clamp(-1.0, 0.5), (X,)),
    Case("clamp_min", lambda x: x.clamp_min(-0.5), lambda t, x: x.clamp_min(-0.5), (X,)),
    Case("clamp_max", lambda x: x.clamp_max(0.5), lambda t, x: x.clamp_max(0.5), (X,)),
    Case("max_dim", lambda x: x.max_dim(1), lambda t, x: x.amax(1, keepdim=True), (X,)),
    Case("min_dim", lambda x: x.min_dim(0), lambda t, x: x.amin(0, keepdim=True), (X,)),
    Case("max", lambda x: x.max(), lambda t, x: x.max().reshape(1), (X,)),
    Case("min", lambda x: x.min(), lambda t, x: x.min().reshape(1), (X,)),
    Case("prod", lambda x: x.prod(), lambda t, x: x.prod().reshape(1), (X,)),
    Case("prod_dim", lambda x: x.prod_dim(1), lambda t, x: x.prod(1, keepdim=True), (X,)),
    Case("cumsum", lambda x: x.cumsum(1), lambda t, x: x.cumsum(1), (X,)),
    Case("permute", lambda x: x.permute([2, 0, 1]), lambda t, x: x.permute(2, 0, 1), (((2, 3, 4), -2.0, 2.0),)),
    Case("expand", lambda x: x.expand([2, 3, 4]) * 1.5, lambda t, x: x.expand(2, 3, 4) * 1.5, (((3, 1), -2.0, 2.0),)),
    Case("repeat_dim", lambda x: x.repeat_dim(1, 3), lambda t, x: x.repeat(1, 3), (X,)),
    Case("flip", lambda x: x.flip([0, 1]), lambda t, x: x.flip(0, 1), (X,)),
    Case("unsqueeze_dim", lambda x: x.unsqueeze_dim(1), lambda t, x: x.unsqueeze(1), (X,)),
    Case("squeeze", lambda x: x.squeeze(1), lambda t, x: x.squeeze(1), (((3, 1, 4), -2.0, 2.0),)),
    Case("softmax", lambda x: activation.softmax(x, 1), lambda t, x: t.softmax(x, 1), (X,)),
    Case("log_softmax", lambda x: activation.log_softmax(x, 0), lambda t, x: t.log_softmax(x, 0), (X,)),
    Case("gelu", lambda x: activation.gelu(x), lambda t, x: t.nn.functional.gelu(x), (X,)),
    Case("log_sigmoid", lambda x: activation.log_sigmoid(x), lambda t, x: t.nn.functional.logsigmoid(x), (X,)),
    Case("relu", lambda x: activation.relu(x), lambda t, x: t.relu(x), (X,)),
    Case("sigmoid", lambda x: activation.sigmoid(x), lambda t, x: t.sigmoid(x), (X,)),
    Case(
        "cross_entropy_with_logits",
        lambda x, p: loss.cross_entropy_with_logits(x, activation.softmax(p, 1)),
        lambda t, x, p: -(t.log_softmax(x, 1) * t.softmax(p, 1)).sum(1).mean().reshape(1),
        (X, X),
    ),
    Case("slice", lambda x: x.slice([(1, 3), (0, 2)]), lambda t, x: x[1:3, 0:2], (X,)),
    Case(
        "slice_assign",
        lambda x, v: x.slice_assign([(0, 2), (1, 3)], v),
        lambda t, x, v: _torch_slice_assign(t, x, v),
        (X, ((2, 2), -2.0, 2.0)),
    ),
    *(
        _index_case(text, key, shape)
        for shape in ((3, 4), (2, 3, 4))
        for text, key in (
            ("0", 0),
            ("1:3", np.s_[1:3]),
            (":, 0", np.s_[:, 0]),
            ("..., -1", np.s_[..., -1]),
            ("-1", -1),
            ("0, 1", np.s_[0, 1]),
            ("1:, :-1", np.s_[1:, :-1]),
        )
    ),
    *(_index_case(text, key, (5,)) for text, key in (("0", 0), ("1:3", np.s_[1:3]), ("-1", -1))),
    Case("cat", lambda a, b, c: Tensor.cat([a, b, c], 0), lambda t, a, b, c: t.cat([a, b, c], 0), (X, X, X)),
    Case(
        "select",
        lambda x: x.select(1, _ints(x, SELECT_INDEX)),
        lambda t, x: x.index_select(1, t.tensor(SELECT_INDEX)),
        (X,),
    ),
    Case(
        "gather",
        lambda x: x.gather(1, _ints(x, GATHER_INDEX)),
        lambda t, x: x.gather(1, t.tensor(GATHER_INDEX)),
        (X,),
    ),
    Case(
        "scatter",
        lambda x, v: x.scatter(1, _ints(x, GATHER_INDEX), v),
        lambda t, x, v: x.scatter_add(1, t.tensor(GATHER_INDEX), v),
        (X, X),
    ),
    Case(
        "mask_fill",
        lambda x: x.mask_fill(Tensor.from_bools(MASK, x.device), 0.25),
        lambda t, x: x.masked_fill(t.tensor(MASK), 0.25),
        (X,),
    ),
    Case(
        "mask_where",
        lambda x, s: x.mask_where(Tensor.from_bools(MASK, x.device), s),
        lambda t, x, s: t.where(t.tensor(MASK), s, x),
        (X, X),
    ),
    Case(
        "conv1d",
        lambda x, w, b: module.conv1d(x, w, b, ConvOptions([2], [1], [2], 2)),
        lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
        (((2, 4, 9), -2.0, 2.0), ((6, 2, 3), -1.0, 1.0), ((6,), -1.0, 1.0)),
    ),
    Case(
        "conv2d",
        lambda x, w, b: module.conv2d(x, w, b, ConvOptions([2, 1], [1, 0], [1, 2], 1)),
        lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
        (((2, 3, 6, 5), -2.0, 2.0), ((4, 3, 3, 2), -1.0, 1.0), ((4,), -1.0, 1.0)),
    ),
    Case(
        "conv2d_groups_no_bias",
        lambda x, w: module.conv2d(x, w, None, ConvOptions([1, 2], [1, 1], [1, 1], 2)),
        lambda t, x, w: t.nn.functional.conv2d(x, w, None, stride=(1, 2), padding=1, groups=2),
        (((1, 4, 5, 5), -2.0, 2.0), ((6, 2, 2, 3), -1.0, 1.0)),
    ),
    Case(
        "max_pool2d",
        lambda x: module.max_pool2d(x, [3, 2], [2, 1], [1, 1], [1, 2]),
        lambda t, x: t.nn.functional.max_pool2d(x, (3, 2), (2, 1), (1, 1), (1, 2)),
        (((2, 3, 6, 7), -2.0, 2.0),),
    ),
    Case(
        "max_pool2d_ceil_mode",
        lambda x: module.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1], True),
        lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1, 1, ceil_mode=True),
        (((1, 2, 6, 6), -2.0, 2.0),),
    ),
    Case(
        "avg_pool2d",
        lambda x: module.avg_pool2d(x, [3, 2], [2, 1], [1, 1]),
        lambda t, x: t.nn.functional.avg_pool2d(x, (3, 2), (2, 1), (1, 1)),
        (((2, 3, 6, 7), -2.0, 2.0),),
    ),
    Case(
        "avg_pool2d_without_pad_ceil_mode",
        lambda x: module.avg_pool2d(x, [3, 3], [2, 2], [1, 1], False, True),
        lambda t, x: t.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (((1, 2, 7, 6), -2.0, 2.0),),
    ),
]


def _torch_slice_assign(t: Any, x: Any, v: Any) -> Any:
    out = x.clone()
    out[0:2, 1:3] = v
    return out


def random_inputs(case: Case, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=shape) for shape, low, high in case.inputs]


def weights_for(shape: tuple[int, ...]) -> np.ndarray:
    """The upstream gradient: random, so a rule right only for ones fails."""
    return np.random.default_rng(7).uniform(0.5, 1.5, size=shape)
