"""Numbers as the seed prints them: each float in the shortest form that reads back as the same value of its
dtype (Rust's `{:?}`: `5.4365635`, `14.778112`, `5.0`), nested in brackets like the tensor."""

from __future__ import annotations

import numpy as np


def format_float(value: float, dtype: str | np.dtype = "float32") -> str:
    """`5.4365635` for float32 `exp(1) * 2`, `5.0` for five: shortest round-trip, never more digits."""
    return str(np.dtype(dtype).type(value))


def format_array(array: np.ndarray) -> str:
    """`[5.0, 7.0]`, `[[1.0, 2.0], [3.0, 4.0]]`: every value in its shortest round-trip form, on one line."""
    array = np.asarray(array)
    scalar = array.dtype.type if array.dtype.kind == "f" else np.float32
    if array.ndim == 0:
        return str(scalar(array))

    def nested(a: np.ndarray) -> str:
        if a.ndim == 1:
            return "[" + ", ".join(str(scalar(v)) for v in a.tolist()) + "]"
        return "[" + ", ".join(nested(row) for row in a) + "]"

    return nested(array)
