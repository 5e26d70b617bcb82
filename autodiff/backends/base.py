"""The array protocol every backend implements, and the memory accounting they share.

A `Buffer` owns one array of its backend and is counted by the device's `MemoryPool` from the
moment it is created to the moment the last reference to it goes away. Its arithmetic returns new
buffers, so the backward rules in `tensor.py` read like the math while every allocation is counted.
A backend module subclasses `Buffer` (naming its array namespace `xp` and the few operations that
differ) and `Backend` (creating buffers). Nothing else in the engine knows which backend it runs on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, ClassVar

import numpy as np

from ..memory import MemoryPool

Shape = tuple[int, ...]
Array = Any  # numpy.ndarray or mlx.core.array


def _in_float64(ufunc: np.ufunc) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """`ufunc` evaluated in float64 and written, rounded, into `out`. numpy casts chunk by chunk,
    so no float64 copy of the whole array is made (a 512x512 exp: 0.26 ms instead of 1.2 ms)."""
    return lambda values, out: ufunc(values, out=out, dtype=np.float64, casting="unsafe")


def _sigmoid_in_float64(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-x) is inf for x below about -709: then σ(x) is 0, as it should be
        denominator = np.exp(np.negative(values, dtype=np.float64))
    denominator += 1.0
    return np.divide(1.0, denominator, out=out, casting="unsafe")


def _erf_in_float64(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    # numpy has no erf: the standard library's, element by element (exact to the last bit of float64)
    out[...] = np.vectorize(math.erf, otypes=[np.float64])(values)
    return out


# The transcendental functions, computed in float64 and correctly rounded (see `Buffer._rounded`).
ROUNDED = {
    name: _in_float64(getattr(np, name))
    for name in ("exp", "log", "sin", "cos", "tanh", "tan", "sinh", "cosh", "arcsin", "arccos", "arctan", "log1p")
}
ROUNDED["sigmoid"] = _sigmoid_in_float64
ROUNDED["erf"] = _erf_in_float64


class Buffer:
    __slots__ = ("array", "pool", "owned_bytes", "base")
    xp: ClassVar[Any]  # the array namespace: numpy, mlx.core

    def __init__(self, array: Array, pool: MemoryPool, base: Buffer | None = None) -> None:
        self.array = array
        self.pool = pool
        self.base = base  # a view keeps its base alive and owns no bytes of its own
        if base is not None:
            self.owned_bytes = 0
            return
        # counted here, not in a call to the pool: every op's output and every gradient passes through
        nbytes = array.nbytes
        budget = pool.budget
        if budget is not None:
            self.owned_bytes = 0  # what `__del__` gives back if the budget refuses
            budget.take(nbytes)  # may refuse: then nothing is counted
        in_use = pool.bytes_in_use = pool.bytes_in_use + nbytes
        pool.allocations += 1
        if in_use > pool.peak_bytes:
            pool.peak_bytes = in_use
        self.owned_bytes = nbytes
        if pool.watched:
            pool.observer.allocated(self, nbytes)

    def __del__(self) -> None:
        nbytes = self.owned_bytes
        if nbytes:
            pool = self.pool
            if pool.budget is not None:
                pool.budget.give_back(nbytes)
            pool.bytes_in_use -= nbytes
            pool.allocations -= 1
            if pool.watched:
                pool.observer.released(self, nbytes)

    # -- what a backend provides ------------------------------------------------------------
    @property
    def dtype(self) -> str:
        raise NotImplementedError

    def to_numpy(self) -> np.ndarray:
        raise NotImplementedError

    def _new(self, array: Array) -> Buffer:
        """Wrap an op's fresh result."""
        return type(self)(array, self.pool)

    def _view(self, array: Array) -> Buffer:
        """Wrap a result that may share this buffer's memory."""
        return type(self)(array, self.pool, base=self)

    def _host(self) -> np.ndarray:
        """The values as a numpy array (no copy where the backend's memory is the host's)."""
        return self.array

    def _from_host(self, values: np.ndarray) -> Array:
        return values

    def _rounded(self, function: str) -> Buffer:
        """Apply a transcendental `function` (a key of `ROUNDED`) computed in float64 and rounded
        to this dtype: numpy's SIMD float32 kernels and MLX's can be one ulp off (exp(float32(1))
        gives 2.718282, not the 2.7182817 the seed printed); rounding from float64 is correct and
        gives the same bits on every backend."""
        host = self._host()
        return self._new(self._from_host(ROUNDED[function](host, np.empty_like(host))))

    # -- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self.array.shape

    @property
    def allocation(self) -> Buffer:
        """The buffer that owns the memory this one reads (itself unless it is a view)."""
        return self if self.base is None else self.base.allocation

    # -- elementwise arithmetic (numpy-style broadcasting) ------------------------------------------
    # Every rule runs these: each makes its buffer itself, one call fewer than `_new` (a backend that must force
    # evaluation does it in `__init__`).
    def __add__(self, other: Buffer | float) -> Buffer:
        return type(self)(self.array + (other.array if isinstance(other, Buffer) else other), self.pool)

    def __radd__(self, other: float) -> Buffer:
        return type(self)(other + self.array, self.pool)

    def __sub__(self, other: Buffer | float) -> Buffer:
        return type(self)(self.array - (other.array if isinstance(other, Buffer) else other), self.pool)

    def __rsub__(self, other: float) -> Buffer:
        return type(self)(other - self.array, self.pool)

    def __mul__(self, other: Buffer | float) -> Buffer:
        return type(self)(self.array * (other.array if isinstance(other, Buffer) else other), self.pool)

    def __rmul__(self, other: float) -> Buffer:
        return type(self)(other * self.array, self.pool)

    def __truediv__(self, other: Buffer | float) -> Buffer:
        return type(self)(self.array / (other.array if isinstance(other, Buffer) else other), self.pool)

    def __rtruediv__(self, other: float) -> Buffer:
        return type(self)(other / self.array, self.pool)

    def __neg__(self) -> Buffer:
        return type(self)(-self.array, self.pool)

    def __pow__(self, exponent: Buffer | float) -> Buffer:
        return self._new(self.array ** (exponent.array if isinstance(exponent, Buffer) else exponent))

    def __matmul__(self, other: Buffer) -> Buffer:
        return self._new(self.array @ other.array)

    def __gt__(self, other: float) -> Buffer:
        return self._new((self.array > other).astype(self.array.dtype))

    def exp(self) -> Buffer:
        return self._rounded("exp")

    def log(self) -> Buffer:
        return self._rounded("log")

    def sqrt(self) -> Buffer:
        return self._new(self.xp.sqrt(self.array))

    def sin(self) -> Buffer:
        return self._rounded("sin")

    def cos(self) -> Buffer:
        return self._rounded("cos")

    def tanh(self) -> Buffer:
        return self._rounded("tanh")

    def sigmoid(self) -> Buffer:
        return self._rounded("sigmoid")

    def relu(self) -> Buffer:
        return self._new(self.xp.maximum(self.array, 0.0))

    def times(self, function: str, x: Buffer) -> Buffer:
        """`self * function(x)`, `function` a key of `ROUNDED`: a rule's `grad * cos(x)`. A backend may compute it
        without a buffer of its own for `function(x)`, whose values live only while they are multiplied."""
        return self * x._rounded(function)

    def transcendental(self, function: str) -> Buffer:
        """One of `ROUNDED`'s functions (tan, sinh, erf, ...), correctly rounded on every backend."""
        return self._rounded(function)

    def abs(self) -> Buffer:
        return self._new(self.xp.abs(self.array))

    def sign(self) -> Buffer:
        return self._new(self.xp.sign(self.array))

    def clamp(self, low: float | None, high: float | None) -> Buffer:
        array = self.array if low is None else self.xp.maximum(self.array, low)
        return self._new(array if high is None else self.xp.minimum(array, high))

    def inside(self, low: float | None, high: float | None) -> Buffer:
        """1.0 where low <= x <= high (a missing bound is no bound), else 0.0: where a clamp passes its gradient."""
        mask = self.xp.ones(self.array.shape, dtype=self.xp.bool_)
        if low is not None:
            mask = mask & (self.array >= low)
        if high is not None:
            mask = mask & (self.array <= high)
        return self._new(mask.astype(self.array.dtype))

    def compare(self, other: Buffer | float, how: str) -> Buffer:
        """A boolean buffer: `how` is one of "gt", "ge", "lt", "le", "eq"."""
        value = other.array if isinstance(other, Buffer) else other
        array = self.array
        result = {
            "gt": lambda: array > value,
            "ge": lambda: array >= value,
            "lt": lambda: array < value,
            "le": lambda: array <= value,
            "eq": lambda: array == value,
        }[how]()
        return self._new(result)

    def where(self, mask: Buffer, other: Buffer | float) -> Buffer:
        """`other` where `mask` is true, else this buffer's values."""
        value = other.array if isinstance(other, Buffer) else other
        return self._new(self.xp.where(mask.array, value, self.array).astype(self.array.dtype))

    # -- reductions and shapes ----------------------------------------------------------------------
    def sum(self) -> Buffer:
        return self._new(self.xp.reshape(self.xp.sum(self.array), (1,)))

    def sum_dim(self, dim: int) -> Buffer:
        return self._new(self.xp.sum(self.array, axis=dim, keepdims=True))

    def sum_to(self, shape: Shape) -> Buffer:
        """Sum a broadcast gradient back to `shape` (over added and size-1 dimensions)."""
        array = self.array
        extra = len(array.shape) - len(shape)
        if extra:
            array = self.xp.sum(array, axis=tuple(range(extra)))
        stretched = tuple(d for d, n in enumerate(shape) if n == 1 and array.shape[d] != 1)
        if stretched:
            array = self.xp.sum(array, axis=stretched, keepdims=True)
        return self._new(array)

    def extreme_dim(self, dim: int, largest: bool) -> Buffer:
        reduce = self.xp.max if largest else self.xp.min
        return self._new(reduce(self.array, axis=dim, keepdims=True))

    def first_extreme_mask(self, dim: int, largest: bool) -> Buffer:
        """1.0 at the first maximum (or minimum) along `dim`, 0.0 elsewhere: where Burn's max_dim sends
        its gradient (the index its argmax picks)."""
        pick = self.xp.argmax if largest else self.xp.argmin
        index = pick(self.array, axis=dim, keepdims=True)
        positions = self.xp.arange(self.array.shape[dim]).reshape(_along(len(self.array.shape), dim, -1))
        return self._new((positions == index).astype(self.array.dtype))

    def prod_dim(self, dim: int) -> Buffer:
        return self._new(self.xp.prod(self.array, axis=dim, keepdims=True))

    def prod_of_others(self, dim: int) -> Buffer:
        """For each element, the product of the other elements along `dim` (no division: right with zeros).
        The exclusive cumulative products from the left and from the right, multiplied."""
        xp, array = self.xp, self.array
        rank = len(array.shape)
        ones = xp.ones(_replace(array.shape, dim, 1), dtype=array.dtype)
        drop_last = _slice_along(rank, dim, slice(None, -1))
        left = xp.concatenate([ones, xp.cumprod(array, axis=dim)[drop_last]], axis=dim)
        flipped = array[_slice_along(rank, dim, slice(None, None, -1))]
        right = xp.concatenate([ones, xp.cumprod(flipped, axis=dim)[drop_last]], axis=dim)
        return self._new(left * right[_slice_along(rank, dim, slice(None, None, -1))])

    def cumsum(self, dim: int) -> Buffer:
        return self._new(self.xp.cumsum(self.array, axis=dim))

    def reverse_cumsum(self, dim: int) -> Buffer:
        """The sum of every element from each position to the end along `dim` (cumsum's backward)."""
        flip = _slice_along(len(self.array.shape), dim, slice(None, None, -1))
        return self._new(self.xp.cumsum(self.array[flip], axis=dim)[flip])

    def flip(self, dims: tuple[int, ...]) -> Buffer:
        index = tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(len(self.array.shape)))
        return self._new(self.array[index])

    def permute(self, axes: tuple[int, ...]) -> Buffer:
        return self._view(self.xp.transpose(self.array, axes))

    def tile_dim(self, dim: int, times: int) -> Buffer:
        return self._new(self.xp.tile(self.array, _replace((1,) * len(self.array.shape), dim, times)))

    def sum_tiles(self, dim: int, times: int) -> Buffer:
        """Undo `tile_dim` for a gradient: sum the `times` copies along `dim`."""
        shape = self.array.shape
        split = shape[:dim] + (times, shape[dim] // times) + shape[dim + 1 :]
        return self._new(self.xp.sum(self.xp.reshape(self.array, split), axis=dim))

    def softmax(self, dim: int) -> Buffer:
        xp = self.xp
        shifted = xp.exp(self.array - xp.max(self.array, axis=dim, keepdims=True))
        return self._new(shifted / xp.sum(shifted, axis=dim, keepdims=True))

    def log_softmax(self, dim: int) -> Buffer:
        xp = self.xp
        shifted = self.array - xp.max(self.array, axis=dim, keepdims=True)
        return self._new(shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True)))

    def log_sigmoid(self) -> Buffer:
        """log(σ(x)) = min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|."""
        xp = self.xp
        return self._new(xp.minimum(self.array, 0.0) - xp.log1p(xp.exp(-xp.abs(self.array))))

    # -- indexing (an index is a tuple of slices and integer buffers' arrays) ---------------------------
    def index(self, index: tuple) -> Buffer:
        return self._view(self.array[index])

    def assigned(self, index: tuple, values: Buffer | float) -> Buffer:
        """A copy of this buffer with `values` written at `index`."""
        out = self.xp.array(self.array)
        out[index] = values.array if isinstance(values, Buffer) else values
        return self._new(out)

    def placed(self, shape: Shape, index: tuple) -> Buffer:
        """Zeros of `shape` with this buffer written at `index` (the gradient of a slice)."""
        out = self.xp.zeros(shape, dtype=self.array.dtype)
        out[index] = self.array
        return self._new(out)

    def concatenate(self, others: Sequence[Buffer], dim: int) -> Buffer:
        return self._new(self.xp.concatenate([self.array, *(o.array for o in others)], axis=dim))

    def take(self, dim: int, indices: Buffer) -> Buffer:
        return self._new(self.xp.take(self.array, indices.array, axis=dim))

    def take_along(self, dim: int, indices: Buffer) -> Buffer:
        return self._new(self.xp.take_along_axis(self.array, indices.array, axis=dim))

    def added_at(self, index: tuple, values: Buffer) -> Buffer:
        """A copy of this buffer with `values` added at an integer-array `index`, repeated indices adding up."""
        raise NotImplementedError

    def index_grid(self, dim: int, indices: Buffer) -> tuple:
        """The full integer index that `take_along(dim, indices)` reads: `indices` along `dim`, the position
        itself along every other dim (for scattering a gradient back)."""
        shape = indices.array.shape
        rank = len(shape)
        return tuple(
            indices.array if d == dim else self.xp.arange(shape[d]).reshape(_along(rank, d, -1)) for d in range(rank)
        )

    # -- sliding windows (convolution and pooling: `autodiff/module.py`) -----------------------------------
    def windows(self, geometry: Windows, fill: float) -> Buffer:
        """Every window `geometry` reads from this [batch, channels, *size] buffer, padded with `fill`:
        [batch, channels, K, *out_size], K the kernel's positions in row-major order (im2col)."""
        padded = self.xp.pad(self.array, geometry.pad_widths(self.array.shape), constant_values=fill)
        return self._new(self.xp.stack([padded[index] for index in geometry.offsets()], axis=2))

    def windows_added(self, geometry: Windows, shape: Shape) -> Buffer:
        """The adjoint of `windows`: each window's values added back where it read them, into zeros of `shape`
        (what lands in the padding is dropped)."""
        widths = geometry.pad_widths(shape)
        out = self.xp.zeros(tuple(n + a + b for n, (a, b) in zip(shape, widths, strict=True)), dtype=self.array.dtype)
        for k, index in enumerate(geometry.offsets()):  # one offset's positions never overlap
            out[index] = out[index] + self.array[:, :, k]
        return self._new(out[tuple(slice(a, a + n) for n, (a, _) in zip(shape, widths, strict=True))])

    def constant(self, values: np.ndarray) -> Buffer:
        """A new buffer of this backend and dtype holding host `values` an op computed (e.g. pooling's counts)."""
        return self._new(self.xp.array(values, dtype=self.array.dtype))

    def zeros(self, shape: Shape) -> Buffer:
        """A new buffer of zeros of `shape`, of this buffer's dtype."""
        return self._new(self.xp.zeros(shape, dtype=self.array.dtype))

    def only_where(self, mask: Buffer) -> Buffer:
        """This buffer's values where `mask` is true, 0 elsewhere."""
        return self._new(self.xp.where(mask.array, self.array, 0.0).astype(self.array.dtype))

    def expand(self, shape: Shape) -> Buffer:
        """A new buffer of `shape` filled by broadcasting (Burn's `ones(shape) * grad`)."""
        return self._new(self.xp.zeros(shape, dtype=self.array.dtype) + self.array)

    def ones_like(self) -> Buffer:
        return self._new(self.xp.ones_like(self.array))

    def reshape(self, shape: Sequence[int]) -> Buffer:
        return self._view(self.xp.reshape(self.array, tuple(shape)))

    def swap_dims(self, dim1: int, dim2: int) -> Buffer:
        return self._view(self.xp.swapaxes(self.array, dim1, dim2))


@dataclass(frozen=True)
class Windows:
    """Where a kernel's windows lie along each spatial dim of a [batch, channels, *size] tensor: `padding` zeros
    (or `fill`) on both sides, windows every `stride`, a kernel's positions `dilation` apart, `out_size` windows
    (a ceil-mode pool's last window may run past the padding: the input is extended on the right for it)."""

    kernel: Shape
    stride: Shape
    padding: Shape
    dilation: Shape
    out_size: Shape

    def pad_widths(self, shape: Shape) -> tuple[tuple[int, int], ...]:
        """(before, after) per dim of a tensor of `shape`: batch and channels unpadded; after, as far as the last
        window reads."""
        widths = [(0, 0), (0, 0)]
        dims = zip(shape[2:], self.kernel, self.stride, self.padding, self.dilation, self.out_size, strict=True)
        for n, k, s, p, d, o in dims:
            reach = (o - 1) * s + d * (k - 1) + 1  # the padded length the windows read
            widths.append((p, max(p, reach - n - p)))
        return tuple(widths)

    def offsets(self) -> list[tuple[slice, ...]]:
        """For each position of the kernel (row-major), the strided slice of the padded input it reads."""
        per_dim = [
            [slice(i * d, i * d + (o - 1) * s + 1, s) for i in range(k)]
            for k, s, d, o in zip(self.kernel, self.stride, self.dilation, self.out_size, strict=True)
        ]
        return [(slice(None), slice(None), *at) for at in product(*per_dim)]


def _replace(shape: Shape, dim: int, size: int) -> Shape:
    return shape[:dim] + (size,) + shape[dim + 1 :]


def _along(rank: int, dim: int, size: int) -> Shape:
    """The shape of a vector laid along `dim` of a rank-`rank` array (1 everywhere else)."""
    return _replace((1,) * rank, dim, size)


def _slice_along(rank: int, dim: int, part: slice) -> tuple[slice, ...]:
    return tuple(part if d == dim else slice(None) for d in range(rank))


class Backend:
    """Creates the buffers of one device; owns that device's memory pool and random generator.
    Random values come from numpy's generator on every backend, so a seed gives the same tensors
    whatever the backend (parity tests rely on it)."""

    name: ClassVar[str]

    def __init__(self, seed: int | None = None) -> None:
        self.pool = MemoryPool()
        self.rng = np.random.default_rng(seed)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        """A buffer holding `array`, a fresh array the caller hands over (no one else may keep it)."""
        raise NotImplementedError

    def full(self, shape: Shape, value: float, dtype: str) -> Buffer:
        return self.from_numpy(np.full(shape, value, dtype=dtype))

    def uniform(self, shape: Shape, low: float, high: float, dtype: str) -> Buffer:
        array = self.rng.random(shape, dtype=np.dtype(dtype))
        if (low, high) != (0.0, 1.0):
            array = array * (high - low) + low
        return self.from_numpy(array)

    def normal(self, shape: Shape, mean: float, std: float, dtype: str) -> Buffer:
        array = self.rng.standard_normal(shape, dtype=np.dtype(dtype))
        if (mean, std) != (0.0, 1.0):
            array = array * std + mean
        return self.from_numpy(array)

    def memory_counters(self) -> dict[str, int]:
        """The backend's own memory counters, if it has any (shown beside the engine's accounting)."""
        return {}
