"""The MLX backend (Metal on Apple silicon, `mlx[cpu]` on Linux).

MLX is lazy: an expression is a graph until something evaluates it. This backend evaluates every
op's result at once (`mx.eval` when a buffer is made), as Burn's backends execute each op, so a buffer the
engine counts is a buffer MLX has really allocated, and memory figures mean what they say.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mlx.core as mx
import numpy as np

from ..memory import MemoryPool
from .base import Array, Backend, Buffer

# floats for tensors; int64 and bool for the indices and masks of indexing ops
_DTYPES = {"float32": mx.float32, "float64": mx.float64, "int64": mx.int64, "bool": mx.bool_}


class MlxBuffer(Buffer):
    __slots__ = ()
    xp: ClassVar[Any] = mx

    @property
    def dtype(self) -> str:
        return str(self.array.dtype).rsplit(".", 1)[-1]

    def to_numpy(self) -> np.ndarray:
        return np.array(self.array, copy=True)

    def __init__(self, array: Array, pool: MemoryPool, base: Buffer | None = None) -> None:
        if base is None:
            mx.eval(array)  # a result is computed when it is made, so its bytes are real
        super().__init__(array, pool, base)

    def added_at(self, index: tuple, values: Buffer) -> Buffer:
        return self._new(self.array.at[index].add(values.array))

    # MLX's kernels can be one ulp off (exp(2) gives 7.3890557, not 7.389056) and its float64 exp
    # has float32 precision: transcendental functions run in numpy's float64 on the host.
    def _host(self) -> np.ndarray:
        return np.array(self.array)

    def _from_host(self, values: np.ndarray) -> Array:
        return mx.array(values)


class MlxBackend(Backend):
    name = "mlx"

    def from_numpy(self, array: np.ndarray) -> Buffer:
        result = mx.array(array, dtype=_DTYPES[array.dtype.name])
        mx.eval(result)
        return MlxBuffer(result, self.pool)

    def memory_counters(self) -> dict[str, int]:
        # Process-wide: every MLX array of every device in this process counts.
        return {"active": mx.get_active_memory(), "peak": mx.get_peak_memory()}
