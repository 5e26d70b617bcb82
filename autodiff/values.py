"""Integer and boolean values on a device, for the indices and masks of indexing ops (Burn's `Int` and `Bool`
tensors, only as far as those ops need them): never tracked, no arithmetic."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from .backends.base import Buffer
    from .device import Device

REPR_VALUES = 64  # a repr shows every value up to this many, else only the shape


class _Values:
    __slots__ = ("data", "device")

    def __init__(self, data: Buffer, device: Device) -> None:
        self.data = data
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def dims(self) -> list[int]:
        return list(self.data.shape)

    def numpy(self) -> np.ndarray:
        return self.data.to_numpy()

    def tolist(self) -> list:
        return self.data.to_numpy().tolist()

    def __repr__(self) -> str:
        if self.data.array.size <= REPR_VALUES:
            return f"{type(self).__name__}({self.tolist()})"
        return f"{type(self).__name__}(shape={self.dims()})"


class IntTensor(_Values):
    """Indices (int64): made by `Tensor.from_ints`, read by `select`, `gather` and `scatter`."""

    __slots__ = ()


class BoolTensor(_Values):
    """A mask: made by `Tensor.from_bools` or a comparison (`x.greater_elem(0.0)`), read by `mask_fill` and
    `mask_where`."""

    __slots__ = ()

    def bool_not(self) -> BoolTensor:
        return BoolTensor(self.data.compare(0.0, "eq"), self.device)
