"""Numbers as the seed prints them: each float in the shortest form that reads back as the same value of its
dtype (Rust's `{:?}`: `5.4365635`, `14.778112`, `5.0`), nested in brackets like the tensor."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def format_float(value: float, dtype: str | np.dtype = "float32") -> str:
    """`5.4365635` for float32 `exp(1) * 2`, `5.0` for five: shortest round-trip, never more digits."""
    return str(np.dtype(dtype).type(value))


# float32 values' shortest text by value: a replay formats the same numbers many times (each node, card and event)
_FLOAT32_TEXT: dict[float, str] = {}
_FLOAT32_KEPT = 65_536


def _float32_text(value: float) -> str:
    if value == 0.0:  # 0.0 and -0.0 are one key of a dict
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = _FLOAT32_TEXT.get(value)
    if text is None:
        if len(_FLOAT32_TEXT) >= _FLOAT32_KEPT:
            _FLOAT32_TEXT.clear()
        text = _FLOAT32_TEXT[value] = str(np.float32(value))
    return text


def format_array(array: np.ndarray) -> str:
    """`[5.0, 7.0]`, `[[1.0, 2.0], [3.0, 4.0]]`: every value in its shortest round-trip form, on one line. A float64
    is Python's own `repr` (numpy's shortest form of a float64 is the same text); a float32 numpy's, read once per
    value."""
    array = np.asarray(array)
    text: Callable[[float], str]
    if array.dtype == np.float64:
        text = repr
    elif array.dtype == np.float32 or array.dtype.kind != "f":
        text = _float32_text
        if array.dtype != np.float32:
            array = array.astype(np.float32)
    else:  # another float width: numpy's own shortest form
        scalar = array.dtype.type
        return _nested(array.tolist(), lambda v: str(scalar(v))) if array.ndim else str(scalar(array))
    if array.ndim == 0:
        return text(float(array))
    return _nested(array.tolist(), text)


def _nested(values: list, text: Callable[[float], str]) -> str:
    if values and isinstance(values[0], list):
        return "[" + ", ".join(_nested(row, text) for row in values) + "]"
    return "[" + ", ".join(map(text, values)) + "]"
