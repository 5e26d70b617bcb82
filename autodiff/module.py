"""Convolution and pooling, as in `burn::tensor::module`: each an `Op` with its forward and backward.

All four read their input through sliding windows (`Buffer.windows`, im2col): a window's K values become a
dim of their own, so a convolution is one matmul with the weight, a max pool a `max_dim` and an average pool a
`sum_dim`. Each backward sends the gradient back through the windows (`Buffer.windows_added`, their adjoint).
They are compute-bound, as Burn's are: kept, not recomputed, under balanced checkpointing.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .backends.base import Windows
from .errors import DTypeError, ShapeMismatchError
from .graph import Op, Rule, per_constant
from .ops import run_op
from .tensor import Tensor

if TYPE_CHECKING:
    from .backends.base import Buffer, Shape


@dataclass(frozen=True)
class ConvOptions:
    """Burn's `ConvOptions::new(stride, padding, dilation, groups)`: one stride, padding and dilation per spatial
    dim (e.g. `ConvOptions([1, 1], [1, 1], [1, 1], 1)` for conv2d); `groups` splits the channels into groups that
    are convolved separately."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]
    groups: int

    def __post_init__(self) -> None:
        # stored as tuples, so that options are hashable and an op is built once per options
        object.__setattr__(self, "stride", _sizes(self.stride, "ConvOptions' stride", 1))
        object.__setattr__(self, "padding", _sizes(self.padding, "ConvOptions' padding", 0))
        object.__setattr__(self, "dilation", _sizes(self.dilation, "ConvOptions' dilation", 1))
        object.__setattr__(self, "groups", _sizes([self.groups], "ConvOptions' groups", 1)[0])


# -- convolution ---------------------------------------------------------------------------------------------
def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x [batch, channels_in, length], weight [channels_out, channels_in / groups, kernel], bias [channels_out]
    or None: [batch, channels_out, length_out]."""
    return _conv("conv1d", 1, x, weight, bias, options)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x [batch, channels_in, height, width], weight [channels_out, channels_in / groups, kernel_height,
    kernel_width], bias [channels_out] or None: [batch, channels_out, height_out, width_out]."""
    return _conv("conv2d", 2, x, weight, bias, options)


@per_constant
def _conv_op(name: str, x_shape: Shape, w_shape: Shape, with_bias: bool, geometry: Windows, groups: int) -> Op:
    batch, channels, out_channels = x_shape[0], x_shape[1], w_shape[0]
    out_size = geometry.out_size
    # one matmul per group: weight [groups, out/groups, in/groups * K] @ windows [batch, groups, in/groups * K, P]
    grouped_w = (groups, out_channels // groups, math.prod(w_shape[1:]))
    grouped_windows = (batch, groups, grouped_w[2], math.prod(out_size))
    grouped_out = (batch, groups, grouped_w[1], grouped_windows[3])
    out_shape = (batch, out_channels, *out_size)
    bias_shape = (out_channels,) + (1,) * len(out_size)

    def forward(x: Buffer, w: Buffer, b: Buffer | None = None) -> Buffer:
        out = (w.reshape(grouped_w) @ x.windows(geometry, 0.0).reshape(grouped_windows)).reshape(out_shape)
        return out if b is None else out + b.reshape(bias_shape)

    def x_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
        windows = s["weight"].reshape(grouped_w).swap_dims(-1, -2) @ g.reshape(grouped_out)
        return windows.reshape((batch, channels, -1, *out_size)).windows_added(geometry, x_shape)

    def weight_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
        windows = s["x"].windows(geometry, 0.0).reshape(grouped_windows)
        per_example = g.reshape(grouped_out) @ windows.swap_dims(-1, -2)
        return per_example.sum_to(grouped_w).reshape(w_shape)

    rules = (
        Rule("weightᵀ @ grad, added back where each window read x", x_rule, ("weight",)),
        Rule("grad @ windows(x)ᵀ, summed over the batch", weight_rule, ("x",)),
        Rule("grad summed over the batch and positions", lambda g, s: g.sum_to(bias_shape).reshape((out_channels,))),
    )
    names = ("x", "weight", "bias")
    return Op(name, forward, rules[: 2 + with_bias], names[: 2 + with_bias], compute_bound=True)


def _conv(name: str, dims: int, x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    _check_input(name, x)
    for what, tensor in (("weight", weight), ("bias", bias)):
        if tensor is None and what == "bias":
            continue
        if not isinstance(tensor, Tensor):
            raise DTypeError(f"{name}'s {what} must be a float Tensor, not {type(tensor).__name__}.")
        x._operands(tensor, broadcast=False)  # the same device and dtype
    geometry = _conv_windows(name, dims, x.shape, weight.shape, options)
    out_channels = weight.shape[0]
    if bias is not None and bias.shape != (out_channels,):
        raise ShapeMismatchError(
            f"{name}'s bias has shape {bias.dims()}; it needs one value per output channel, [{out_channels}]."
        )
    op = _conv_op(name, x.shape, weight.shape, bias is not None, geometry, options.groups)
    return run_op(op, (x, weight) if bias is None else (x, weight, bias))


def calculate_conv_output_shape(x_shape: Sequence[int], weight_shape: Sequence[int], options: ConvOptions) -> Shape:
    """The shape conv1d or conv2d gives for these shapes, [batch, channels_out, *size_out], checked as the op checks
    them, without computing anything (Burn's `calculate_conv_output_shape`)."""
    dims = len(weight_shape) - 2
    name = f"conv{dims}d" if dims in (1, 2) else "conv"
    geometry = _conv_windows(name, dims, tuple(x_shape), tuple(weight_shape), options)
    return (x_shape[0], weight_shape[0], *geometry.out_size)


# -- pooling ---------------------------------------------------------------------------------------------------
def max_pool2d(
    x: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool = False,
) -> Tensor:
    """The largest value of each window of x [batch, channels, height, width]; the gradient goes to the first
    largest element of each window (row by row), as PyTorch's and Burn's indices pick it."""
    _check_input("max_pool2d", x)
    geometry = _pool_windows("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    return run_op(_max_pool_op(x.shape, geometry), (x,))


@per_constant
def _max_pool_op(x_shape: Shape, geometry: Windows) -> Op:
    out_shape = x_shape[:2] + geometry.out_size
    one_per_window = x_shape[:2] + (1,) + geometry.out_size

    def x_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
        firsts = s["x"].windows(geometry, -math.inf).first_extreme_mask(2, largest=True)
        return (firsts * g.reshape(one_per_window)).windows_added(geometry, x_shape)

    return Op(
        f"max_pool2d({_kernel_text(geometry)})",
        lambda x: x.windows(geometry, -math.inf).extreme_dim(2, largest=True).reshape(out_shape),
        (Rule("grad at each window's first maximum", x_rule, ("x",)),),
        compute_bound=True,
    )


def avg_pool2d(
    x: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    count_include_pad: bool = True,
    ceil_mode: bool = False,
) -> Tensor:
    """The mean of each window of x [batch, channels, height, width]: with `count_include_pad`, padding counts as
    zeros in the mean; without, only the input's own values are counted."""
    if not isinstance(count_include_pad, bool):
        raise ShapeMismatchError(f"avg_pool2d's count_include_pad is True or False, got {count_include_pad!r}.")
    _check_input("avg_pool2d", x)
    geometry = _pool_windows("avg_pool2d", x.shape, kernel_size, stride, padding, [1, 1], ceil_mode)
    return run_op(_avg_pool_op(x.shape, geometry, count_include_pad), (x,))


@per_constant
def _avg_pool_op(x_shape: Shape, geometry: Windows, count_include_pad: bool) -> Op:
    out_shape = x_shape[:2] + geometry.out_size
    windows_shape = x_shape[:2] + (math.prod(geometry.kernel),) + geometry.out_size
    counts = _window_counts(x_shape[2:], geometry, count_include_pad)

    def forward(x: Buffer) -> Buffer:
        return x.windows(geometry, 0.0).sum_dim(2).reshape(out_shape) / x.constant(counts)

    def x_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
        shared = (g / g.constant(counts)).reshape(windows_shape[:2] + (1,) + geometry.out_size)
        return shared.expand(windows_shape).windows_added(geometry, x_shape)

    return Op(
        f"avg_pool2d({_kernel_text(geometry)})",
        forward,
        (Rule("grad / count, shared by each window's inputs", x_rule),),
        compute_bound=True,
    )


def _window_counts(size: Shape, geometry: Windows, count_include_pad: bool) -> np.ndarray:
    """How many values each window averages: the positions inside the padded input (never those a ceil-mode
    window runs past it), or only the input's own. A window is a box, so its count is a product over dims."""
    per_dim: list[np.ndarray] = []
    for n, k, s, p, o in zip(size, geometry.kernel, geometry.stride, geometry.padding, geometry.out_size, strict=True):
        starts = np.arange(o) * s
        low, high = (0, n + 2 * p) if count_include_pad else (p, p + n)
        per_dim.append(np.minimum(starts + k, high) - np.maximum(starts, low))
    return np.multiply.outer(*per_dim).astype(np.float64)


# -- checks and geometry ---------------------------------------------------------------------------------------
def _check_input(name: str, x: object) -> None:
    if not isinstance(x, Tensor):
        raise DTypeError(f"{name} takes a float Tensor as its input, not {type(x).__name__}.")


def _check_rank(name: str, what: str, shape: Shape, dims: int) -> None:
    if len(shape) != dims + 2:
        layout = {
            ("input", 1): "[batch, channels, length]",
            ("input", 2): "[batch, channels, height, width]",
            ("weight", 1): "[channels_out, channels_in / groups, kernel]",
            ("weight", 2): "[channels_out, channels_in / groups, kernel_height, kernel_width]",
        }.get((what, dims), f"{dims + 2} dims")
        article = "an" if what == "input" else "a"
        raise ShapeMismatchError(f"{name} takes {article} {what} of shape {layout}; this one has shape {list(shape)}.")


def _conv_windows(name: str, dims: int, x_shape: Shape, w_shape: Shape, options: ConvOptions) -> Windows:
    _check_rank(name, "input", x_shape, dims)
    _check_rank(name, "weight", w_shape, dims)
    if (
        not isinstance(options, ConvOptions)
        or len(options.stride) != dims
        or len(options.padding) != dims
        or len(options.dilation) != dims
    ):
        raise ShapeMismatchError(
            f"{name} takes ConvOptions with {dims} value(s) each for stride, padding and dilation, e.g. "
            f"ConvOptions({[1] * dims}, {[0] * dims}, {[1] * dims}, 1)."
        )
    out_channels, group_channels = w_shape[0], w_shape[1]
    if x_shape[1] != group_channels * options.groups:
        raise ShapeMismatchError(
            f"{name}: the input has {x_shape[1]} channels, but the weight {list(w_shape)} with {options.groups} "
            f"group(s) takes {group_channels * options.groups} (its dim 1 times the groups)."
        )
    if out_channels % options.groups:
        raise ShapeMismatchError(
            f"{name}: the weight's {out_channels} output channels do not split into {options.groups} groups."
        )
    return _windows(name, x_shape, w_shape[2:], options.stride, options.padding, options.dilation, False)


def calculate_pool_output_shape(
    x_shape: Sequence[int],
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool = False,
) -> Shape:
    """The shape max_pool2d or avg_pool2d (dilation [1, 1]) gives, [batch, channels, *size_out], checked as the op
    checks it, without computing anything (Burn's `calculate_pool_output_shape`)."""
    geometry = _pool_windows("pooling", tuple(x_shape), kernel_size, stride, padding, dilation, ceil_mode)
    return (x_shape[0], x_shape[1], *geometry.out_size)


def _pool_windows(
    name: str,
    x_shape: Shape,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> Windows:
    _check_rank(name, "input", x_shape, 2)
    if not isinstance(ceil_mode, bool):
        raise ShapeMismatchError(f"{name}'s ceil_mode is True or False, got {ceil_mode!r}.")
    kernel = _sizes(kernel_size, f"{name}'s kernel_size", 1, 2)
    pads = _sizes(padding, f"{name}'s padding", 0, 2)
    if any(p > k // 2 for p, k in zip(pads, kernel, strict=True)):
        raise ShapeMismatchError(
            f"{name}'s padding {list(pads)} is more than half its kernel {list(kernel)}: a window could then hold "
            "only padding."
        )
    strides, dilations = _sizes(stride, f"{name}'s stride", 1, 2), _sizes(dilation, f"{name}'s dilation", 1, 2)
    return _windows(name, x_shape, kernel, strides, pads, dilations, ceil_mode)


def _windows(
    name: str,
    x_shape: Shape,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> Windows:
    """The windows' geometry, with Burn's output size (`calculate_pool_output_size`); a ceil-mode window that
    would start in the right padding is dropped, as PyTorch drops it."""
    out_size = []
    for n, k, s, p, d in zip(x_shape[2:], kernel, stride, padding, dilation, strict=True):
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise ShapeMismatchError(
                f"{name}'s kernel {list(kernel)} (dilation {list(dilation)}) is larger than the padded input: "
                f"size {list(x_shape[2:])} with padding {list(padding)}."
            )
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out_size.append(o)
    return Windows(tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), tuple(out_size))


def _sizes(values: object, what: str, least: int, count: int | None = None) -> tuple[int, ...]:
    example = "[2, 2]" if count == 2 else "[1]"
    if not isinstance(values, (list, tuple)) or not values or (count is not None and len(values) != count):
        raise ShapeMismatchError(f"{what} takes a list of {count or 'one or more'} whole numbers, e.g. {example}.")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and int(v) >= least for v in values):
        raise ShapeMismatchError(f"{what} takes whole numbers of at least {least}, got {list(values)}.")
    return tuple(int(v) for v in values)


def _kernel_text(geometry: Windows) -> str:
    return "x".join(map(str, geometry.kernel))
