"""The checks on what a program passes to an op: numbers, dtypes, shapes, dims. Each failure is a typed error
with a sentence that says what to write instead."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from .errors import DTypeError, NonFiniteError, ShapeMismatchError, UnsupportedOperationError, excerpt

FLOAT_DTYPES = ("float32", "float64")


def is_scalar(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def scalar(value: object) -> float:
    if type(value) is not float and not is_scalar(value):
        raise UnsupportedOperationError(
            f"Cannot combine a tensor with a value of type {type(value).__name__}; use a number or a Tensor."
        )
    c = float(value)  # type: ignore[arg-type]
    if not math.isfinite(c):
        raise NonFiniteError(f"The number {c} is not finite; use a finite number.")
    return c


def check_dtype(dtype: str) -> str:
    if dtype not in FLOAT_DTYPES:
        raise DTypeError(f"Unsupported dtype {excerpt(dtype)}: use 'float32' (the default) or 'float64'.")
    return dtype


def check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    if (
        not isinstance(shape, (list, tuple))
        or not shape
        or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and int(d) > 0 for d in shape)
    ):
        raise ShapeMismatchError(f"A shape is a non-empty list of positive sizes, e.g. [2, 3]; got {excerpt(shape)}.")
    return tuple(int(d) for d in shape)


def reshaped(shape: tuple[int, ...], target: list[int]) -> tuple[int, ...]:
    """The shape `reshape(target)` gives (one -1 is inferred), or a clear error."""
    size = math.prod(shape)
    known = math.prod(d for d in target if d != -1)
    if target.count(-1) == 1 and known > 0 and size % known == 0:
        target = [size // known if d == -1 else d for d in target]
    if any(d <= 0 for d in target) or math.prod(target) != size:
        raise ShapeMismatchError(
            f"Cannot reshape a tensor of shape {list(shape)} ({size} values) into {excerpt(target)}."
        )
    return tuple(target)


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...], what: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeMismatchError(
            f"Shapes {list(a)} and {list(b)} do not match for {what}: each dimension must be equal, "
            "or 1 in one of them (broadcasting)."
        ) from None


def index(value: object, what: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ShapeMismatchError(f"{what} takes whole numbers, got {excerpt(value)}.")
    return int(value)


def int_list(values: object, what: str, example: str) -> list[int]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ShapeMismatchError(f"{what} takes a list of dims, e.g. {example}.")
    return [index(v, what) for v in values]


def values_array(data: object, kind: str, accept: str, example: str) -> np.ndarray:
    """Nested lists of integers or booleans as an array of at least one dim, or a clear error."""
    try:
        array = np.array(data)
    except ValueError:
        raise ShapeMismatchError("The nested lists are ragged: every row must have the same length.") from None
    if array.size == 0 or array.dtype.kind not in accept:
        raise DTypeError(f"{kind} needs (nested) lists of {example}, got {excerpt(data)}.")
    return array.reshape(array.shape or (1,))
