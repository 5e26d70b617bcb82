"""Numbers and tensors as people read them."""

from __future__ import annotations

import numpy as np

from autodiff.trace import TensorPreview

MAX_VALUES = 8


def format_number(value: float) -> str:
    return f"{value:.4g}"


def format_values(values: np.ndarray | None) -> str:
    """A short, readable rendering of a tensor's values (nested brackets kept for small ones)."""
    if values is None:
        return "—"
    if isinstance(values, TensorPreview):  # a large value that came back from a worker: its first values
        flat = ", ".join(format_number(v) for v in values.first[:MAX_VALUES])
        return f"[{flat}, …] ({values.size:,} values)"
    array = np.asarray(values)
    if array.size > MAX_VALUES:
        flat = ", ".join(format_number(v) for v in array.ravel()[:MAX_VALUES])
        return f"[{flat}, …] ({array.size:,} values)"
    return np.array2string(array, separator=", ", formatter={"float_kind": format_number})


def format_bytes(nbytes: int) -> str:
    if nbytes >= 2**20:
        return f"{nbytes / 2**20:.1f} MiB"
    if nbytes >= 2**10:
        return f"{nbytes / 2**10:.1f} KiB"
    return f"{nbytes} B"


def format_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
