"""The numpy backend: eager arrays in host memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .base import ROUNDED, Array, Backend, Buffer, Shape

# float64 values need no rounding: the same float64 kernel, without the cast into a new output array
_FLOAT64 = np.dtype(np.float64)
_IN_FLOAT64 = {
    name: getattr(np, name) for name in ROUNDED if hasattr(np, name) and isinstance(getattr(np, name), np.ufunc)
}


def _transcendental(function: str) -> Callable[[NumpyBuffer], Buffer]:
    """`Buffer._rounded(function)` as a method of its own: the one the rules call on every step, one call fewer."""
    rounded, in_float64 = ROUNDED[function], _IN_FLOAT64.get(function)

    def apply(self: NumpyBuffer) -> Buffer:
        array = self.array
        if in_float64 is not None and array.dtype is _FLOAT64:
            return NumpyBuffer(in_float64(array), self.pool)
        return NumpyBuffer(rounded(array, np.empty_like(array)), self.pool)

    return apply


class NumpyBuffer(Buffer):
    __slots__ = ()
    xp: ClassVar[Any] = np

    exp, log, sin, cos, tanh, sigmoid = map(_transcendental, ("exp", "log", "sin", "cos", "tanh", "sigmoid"))

    @property
    def dtype(self) -> str:
        return self.array.dtype.name

    def to_numpy(self) -> np.ndarray:
        return np.array(self.array, copy=True)

    def _rounded(self, function: str) -> Buffer:
        array = self.array
        if array.dtype is _FLOAT64:
            ufunc = _IN_FLOAT64.get(function)
            if ufunc is not None:
                return NumpyBuffer(ufunc(array), self.pool)
        return NumpyBuffer(ROUNDED[function](array, np.empty_like(array)), self.pool)

    def times(self, function: str, x: Buffer) -> Buffer:
        pool = self.pool
        if pool.watched or pool.budget is not None:  # a timeline or a budget sees every buffer: function(x) is one
            return self * x._rounded(function)
        # function(x) as a bare array: one buffer per rule, not two (a buffer's accounting costs as much as a step's
        # arithmetic on a lesson's small tensors). Its bytes are in use until the product is made: counted in the
        # peak beside the product's, as a buffer's would be
        array = x.array
        in_float64 = _IN_FLOAT64.get(function) if array.dtype is _FLOAT64 else None
        values = in_float64(array) if in_float64 is not None else ROUNDED[function](array, np.empty_like(array))
        product = NumpyBuffer(self.array * values, pool)
        in_use = pool.bytes_in_use + values.nbytes
        if in_use > pool.peak_bytes:
            pool.peak_bytes = in_use
        return product

    def _view(self, array: Array) -> Buffer:
        # numpy copies when a reshape cannot be a view: then it is a new allocation.
        if np.shares_memory(array, self.array):
            return NumpyBuffer(array, self.pool, base=self)
        return self._new(array)

    def sum(self) -> Buffer:
        # numpy's own sum (the same pairwise float32 summation), kept as an array: half the time of sum().reshape(1)
        total = np.add.reduce(self.array, axis=None, keepdims=True)
        return self._new(total if total.ndim == 1 else total.reshape(1))

    def ones_like(self) -> Buffer:
        ones = np.empty(self.array.shape, self.array.dtype)
        ones.fill(1.0)  # a third of np.ones_like's time on the small tensors of a lesson
        return self._new(ones)

    def added_at(self, index: tuple, values: Buffer) -> Buffer:
        out = self.array.copy()
        np.add.at(out, index, values.array)
        return self._new(out)

    def expand(self, shape: Shape) -> Buffer:
        out = np.empty(shape, dtype=self.array.dtype)
        out[...] = self.array
        return self._new(out)


class NumpyBackend(Backend):
    name = "numpy"

    def from_numpy(self, array: np.ndarray) -> Buffer:
        return NumpyBuffer(array, self.pool)  # handed over fresh: no copy
