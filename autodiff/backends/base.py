"""The array protocol every backend implements, and the memory accounting they share.

A `Buffer` owns one array of its backend and is counted by the device's `MemoryPool` from the
moment it is created to the moment the last reference to it goes away. Its arithmetic returns new
buffers, so the backward rules in `tensor.py` read like the math while every allocation is counted.
A backend module subclasses `Buffer` (naming its array namespace `xp` and the few operations that
differ) and `Backend` (creating buffers). Nothing else in the engine knows which backend it runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    denominator = np.exp(np.negative(values, dtype=np.float64))
    denominator += 1.0
    return np.divide(1.0, denominator, out=out, casting="unsafe")


# The transcendental functions, computed in float64 and correctly rounded (see `Buffer._rounded`).
ROUNDED = {name: _in_float64(getattr(np, name)) for name in ("exp", "log", "sin", "cos", "tanh")}
ROUNDED["sigmoid"] = _sigmoid_in_float64


class Buffer:
    __slots__ = ("array", "pool", "owned_bytes", "base")
    xp: ClassVar[Any]  # the array namespace: numpy, mlx.core

    def __init__(self, array: Array, pool: MemoryPool, base: Buffer | None = None) -> None:
        self.array = array
        self.pool = pool
        self.base = base  # a view keeps its base alive and owns no bytes of its own
        self.owned_bytes = 0
        if base is None:
            nbytes = array.nbytes
            pool.allocate(nbytes)  # may refuse (a memory budget): then nothing is counted
            self.owned_bytes = nbytes

    def __del__(self) -> None:
        if self.owned_bytes:
            self.pool.release(self.owned_bytes)

    # -- what a backend provides ------------------------------------------------------------
    @property
    def dtype(self) -> str:
        raise NotImplementedError

    def to_numpy(self) -> np.ndarray:
        raise NotImplementedError

    def _new(self, array: Array) -> Buffer:
        """Wrap an op's fresh result (a backend may force its evaluation here)."""
        return type(self)(array, self.pool)

    def _view(self, array: Array) -> Buffer:
        """Wrap a result that may share this buffer's memory."""
        return type(self)(array, self.pool, base=self)

    def _host(self) -> np.ndarray:
        """The values as a numpy array (no copy where the backend's memory is the host's)."""
        return self.array

    def _from_host(self, values: np.ndarray) -> Array:
        return values

    def _rounded(self, function: str) -> Array:
        """Apply a transcendental `function` (a key of `ROUNDED`) computed in float64 and rounded
        to this dtype: numpy's SIMD float32 kernels and MLX's can be one ulp off (exp(float32(1))
        gives 2.718282, not the 2.7182817 the seed printed); rounding from float64 is correct and
        gives the same bits on every backend."""
        host = self._host()
        return self._from_host(ROUNDED[function](host, np.empty_like(host)))

    # -- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self.array.shape

    @property
    def allocation(self) -> Buffer:
        """The buffer that owns the memory this one reads (itself unless it is a view)."""
        return self if self.base is None else self.base.allocation

    # -- elementwise arithmetic (numpy-style broadcasting) ------------------------------------------
    def __add__(self, other: Buffer | float) -> Buffer:
        return self._new(self.array + (other.array if isinstance(other, Buffer) else other))

    def __radd__(self, other: float) -> Buffer:
        return self._new(other + self.array)

    def __sub__(self, other: Buffer | float) -> Buffer:
        return self._new(self.array - (other.array if isinstance(other, Buffer) else other))

    def __rsub__(self, other: float) -> Buffer:
        return self._new(other - self.array)

    def __mul__(self, other: Buffer | float) -> Buffer:
        return self._new(self.array * (other.array if isinstance(other, Buffer) else other))

    def __rmul__(self, other: float) -> Buffer:
        return self._new(other * self.array)

    def __truediv__(self, other: Buffer | float) -> Buffer:
        return self._new(self.array / (other.array if isinstance(other, Buffer) else other))

    def __rtruediv__(self, other: float) -> Buffer:
        return self._new(other / self.array)

    def __neg__(self) -> Buffer:
        return self._new(-self.array)

    def __pow__(self, exponent: float) -> Buffer:
        return self._new(self.array**exponent)

    def __matmul__(self, other: Buffer) -> Buffer:
        return self._new(self.array @ other.array)

    def __gt__(self, other: float) -> Buffer:
        return self._new((self.array > other).astype(self.array.dtype))

    def exp(self) -> Buffer:
        return self._new(self._rounded("exp"))

    def log(self) -> Buffer:
        return self._new(self._rounded("log"))

    def sqrt(self) -> Buffer:
        return self._new(self.xp.sqrt(self.array))

    def sin(self) -> Buffer:
        return self._new(self._rounded("sin"))

    def cos(self) -> Buffer:
        return self._new(self._rounded("cos"))

    def tanh(self) -> Buffer:
        return self._new(self._rounded("tanh"))

    def sigmoid(self) -> Buffer:
        return self._new(self._rounded("sigmoid"))

    def relu(self) -> Buffer:
        return self._new(self.xp.maximum(self.array, 0.0))

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

    def expand(self, shape: Shape) -> Buffer:
        """A new buffer of `shape` filled by broadcasting (Burn's `ones(shape) * grad`)."""
        return self._new(self.xp.zeros(shape, dtype=self.array.dtype) + self.array)

    def ones_like(self) -> Buffer:
        return self._new(self.xp.ones_like(self.array))

    def reshape(self, shape: Sequence[int]) -> Buffer:
        return self._view(self.xp.reshape(self.array, tuple(shape)))

    def swap_dims(self, dim1: int, dim2: int) -> Buffer:
        return self._view(self.xp.swapaxes(self.array, dim1, dim2))


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
