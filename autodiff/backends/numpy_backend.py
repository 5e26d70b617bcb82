"""The numpy backend: buffers are numpy arrays, counted by the device's memory pool."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..memory import MemoryPool

Shape = tuple[int, ...]


def _rounded(fn: Callable[[np.ndarray], np.ndarray], array: np.ndarray) -> np.ndarray:
    """Apply a transcendental function in float64 and round back.

    numpy's SIMD float32 kernels can be one ulp off (np.exp(float32(1)) gives 2.718282, not
    2.7182817); computing in float64 gives the correctly rounded float32 the seed printed."""
    if array.dtype == np.float32:
        return fn(array.astype(np.float64)).astype(np.float32)
    return fn(array)


class NumpyBuffer:
    """One numpy array owned by a device. Arithmetic returns new buffers, so the backward
    rules in `tensor.py` read like the math while every allocation is counted."""

    __slots__ = ("array", "pool", "owned_bytes", "base")

    def __init__(self, array: np.ndarray, pool: MemoryPool, base: NumpyBuffer | None = None) -> None:
        self.array = array
        self.pool = pool
        # A view keeps its base alive and owns no bytes of its own.
        self.base = base
        if base is None:
            self.owned_bytes = array.nbytes
            pool.allocate(self.owned_bytes)
        else:
            self.owned_bytes = 0

    def __del__(self) -> None:
        if self.base is None:
            self.pool.release(self.owned_bytes)

    # -- metadata ---------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self.array.shape

    @property
    def dtype(self) -> str:
        return self.array.dtype.name

    @property
    def allocation(self) -> NumpyBuffer:
        """The buffer that owns the memory this one reads (itself unless it is a view)."""
        return self if self.base is None else self.base.allocation

    def to_numpy(self) -> np.ndarray:
        return np.array(self.array, copy=True)

    # -- helpers ----------------------------------------------------------------------
    def _new(self, array: np.ndarray) -> NumpyBuffer:
        return NumpyBuffer(array, self.pool)

    def same_dtype(self, other: NumpyBuffer) -> bool:
        return self.array.dtype == other.array.dtype

    def _view(self, array: np.ndarray) -> NumpyBuffer:
        if np.shares_memory(array, self.array):
            return NumpyBuffer(array, self.pool, base=self)
        return self._new(array)

    @staticmethod
    def _raw(other: NumpyBuffer | float) -> np.ndarray | float:
        return other.array if isinstance(other, NumpyBuffer) else other

    # -- elementwise arithmetic (numpy broadcasting) -----------------------------------
    def __add__(self, other: NumpyBuffer | float) -> NumpyBuffer:
        return self._new(self.array + self._raw(other))

    def __radd__(self, other: float) -> NumpyBuffer:
        return self._new(other + self.array)

    def __sub__(self, other: NumpyBuffer | float) -> NumpyBuffer:
        return self._new(self.array - self._raw(other))

    def __rsub__(self, other: float) -> NumpyBuffer:
        return self._new(other - self.array)

    def __mul__(self, other: NumpyBuffer | float) -> NumpyBuffer:
        return self._new(self.array * self._raw(other))

    def __rmul__(self, other: float) -> NumpyBuffer:
        return self._new(other * self.array)

    def __truediv__(self, other: NumpyBuffer | float) -> NumpyBuffer:
        return self._new(self.array / self._raw(other))

    def __rtruediv__(self, other: float) -> NumpyBuffer:
        return self._new(other / self.array)

    def __neg__(self) -> NumpyBuffer:
        return self._new(-self.array)

    def __pow__(self, exponent: float) -> NumpyBuffer:
        return self._new(self.array**exponent)

    def __matmul__(self, other: NumpyBuffer) -> NumpyBuffer:
        return self._new(self.array @ other.array)

    def __gt__(self, other: float) -> NumpyBuffer:
        return self._new((self.array > other).astype(self.array.dtype))

    def exp(self) -> NumpyBuffer:
        return self._new(_rounded(np.exp, self.array))

    def log(self) -> NumpyBuffer:
        return self._new(_rounded(np.log, self.array))

    def sqrt(self) -> NumpyBuffer:
        return self._new(np.sqrt(self.array))

    def sin(self) -> NumpyBuffer:
        return self._new(_rounded(np.sin, self.array))

    def cos(self) -> NumpyBuffer:
        return self._new(_rounded(np.cos, self.array))

    def tanh(self) -> NumpyBuffer:
        return self._new(_rounded(np.tanh, self.array))

    def sigmoid(self) -> NumpyBuffer:
        return self._new(_rounded(lambda a: 1.0 / (1.0 + np.exp(-a)), self.array))

    def relu(self) -> NumpyBuffer:
        return self._new(np.maximum(self.array, 0))

    # -- reductions and shapes ----------------------------------------------------------
    def sum(self) -> NumpyBuffer:
        return self._new(self.array.sum(dtype=self.array.dtype).reshape(1))

    def sum_dim(self, dim: int) -> NumpyBuffer:
        return self._new(self.array.sum(axis=dim, keepdims=True))

    def sum_to(self, shape: Shape) -> NumpyBuffer:
        """Sum a broadcast gradient back to `shape` (over added and size-1 dimensions)."""
        array = self.array
        extra = array.ndim - len(shape)
        if extra:
            array = array.sum(axis=tuple(range(extra)))
        stretched = tuple(d for d, n in enumerate(shape) if n == 1 and array.shape[d] != 1)
        if stretched:
            array = array.sum(axis=stretched, keepdims=True)
        return self._new(np.ascontiguousarray(array))

    def expand(self, shape: Shape) -> NumpyBuffer:
        """A new buffer of `shape` filled by broadcasting (Burn's `ones(shape) * grad`)."""
        out = np.empty(shape, dtype=self.array.dtype)
        out[...] = self.array
        return self._new(out)

    def ones_like(self) -> NumpyBuffer:
        return self._new(np.ones_like(self.array))

    def reshape(self, shape: Sequence[int]) -> NumpyBuffer:
        return self._view(self.array.reshape(shape))

    def swap_dims(self, dim1: int, dim2: int) -> NumpyBuffer:
        return self._view(np.swapaxes(self.array, dim1, dim2))


class NumpyBackend:
    """Creates buffers for one device; owns that device's memory pool and random generator."""

    name = "numpy"
    buffer_type = NumpyBuffer

    def __init__(self, seed: int | None = None) -> None:
        self.pool = MemoryPool()
        self.rng = np.random.default_rng(seed)

    def from_numpy(self, array: np.ndarray) -> NumpyBuffer:
        return NumpyBuffer(np.array(array, copy=True), self.pool)

    def full(self, shape: Shape, value: float, dtype: str) -> NumpyBuffer:
        return NumpyBuffer(np.full(shape, value, dtype=dtype), self.pool)

    def uniform(self, shape: Shape, low: float, high: float, dtype: str) -> NumpyBuffer:
        array = self.rng.random(shape, dtype=np.dtype(dtype))
        if (low, high) != (0.0, 1.0):
            array *= high - low
            array += low
        return NumpyBuffer(array, self.pool)

    def normal(self, shape: Shape, mean: float, std: float, dtype: str) -> NumpyBuffer:
        array = self.rng.standard_normal(shape, dtype=np.dtype(dtype))
        if (mean, std) != (0.0, 1.0):
            array *= std
            array += mean
        return NumpyBuffer(array, self.pool)
