"""Numbers and tensors as people read them: values as the seed prints them (`autodiff.printing`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, TypedDict

import numpy as np

from autodiff.printing import format_array, format_float
from autodiff.snapshot import WHOLE_VALUE, ValueSummary
from autodiff.trace import TensorPreview

MAX_VALUES = 16  # a value with more numbers is written as its first ones and how many there are
WHOLE = WHOLE_VALUE  # a value with at most this many numbers is written whole (a student can check it by hand)

Exact = Callable[[np.ndarray], str]  # an array's every number, as `format_array` writes them
Contents = tuple[np.dtype, tuple[int, ...], bytes]  # what tells two arrays apart: equal ones are written once
_FLOAT32 = np.dtype(np.float32)


class ArrayTexts:
    """`format_array` that writes each array of numbers once, for one payload: a replay writes one recorded gradient
    in its event, its caption, the cards of the steps that send and receive it and its node's sum, and a big graph's
    gradients repeat a few values (a 5,000-node replay's 11,000 are some 1,000 different ones). An array is found by
    its identity (it is held here, so no other array takes that identity meanwhile), else by its contents."""

    def __init__(self) -> None:
        self._by_identity: dict[int, tuple[np.ndarray, str]] = {}
        self._by_contents: dict[Contents, str] = {}
        self._numbers: dict[Contents, TensorNumbers | None] = {}
        self._checkable: dict[Contents, list[float] | None] = {}

    def __call__(self, array: np.ndarray) -> str:
        known = self._by_identity.get(id(array))
        if known is not None:
            return known[1]
        contents = _contents(array)
        text = self._by_contents.get(contents)
        if text is None:
            text = self._by_contents[contents] = format_array(array)
        self._by_identity[id(array)] = (array, text)
        return text

    def numbers(self, values: object) -> TensorNumbers | None:
        """`tensor_range(values)`, one for each different array of the payload: equal gradients share it, and the
        payload's signature pickles a shared one once."""
        if not isinstance(values, np.ndarray) or not 0 < values.size <= WHOLE:  # a large one's bytes cost its min
            return tensor_range(values)
        contents = _contents(values)
        if contents not in self._numbers:
            self._numbers[contents] = tensor_range(values)
        return self._numbers[contents]

    def checkable(self, values: np.ndarray | TensorPreview) -> list[float] | None:
        """`checkable_numbers(values)`, worked out once for each different array of the payload (and shared, as
        `numbers` is)."""
        if not isinstance(values, np.ndarray) or values.size > WHOLE:
            return None
        contents = _contents(values)
        if contents not in self._checkable:
            self._checkable[contents] = checkable_numbers(values)
        return self._checkable[contents]


def _contents(array: np.ndarray) -> Contents:
    return (array.dtype, array.shape, array.tobytes())


def format_number(value: float) -> str:
    """A measurement (an error, a ratio): four significant digits are all it means."""
    return f"{value:.4g}"


def format_values(values: np.ndarray | TensorPreview | ValueSummary | None, exact: Exact = format_array) -> str:
    """A tensor's values as the seed prints them (`[5.4365635, 14.778112]`, written by `exact`); a large one as its
    first values and how many there are, or as its shape and min / mean / max."""
    if values is None:
        return "—"
    if isinstance(values, ValueSummary):
        return (
            f"{format_shape(values.shape)}: min {format_float(values.minimum)}, mean {format_float(values.mean)}, "
            f"max {format_float(values.maximum)}"
        )
    if isinstance(values, TensorPreview):  # a large value that came back from a worker: its first values
        flat = ", ".join(format_float(v, values.first.dtype) for v in values.first[:MAX_VALUES])
        return f"[{flat}, …] ({values.size:,} values)"
    array = np.asarray(values)
    if array.size > MAX_VALUES:
        flat = ", ".join(format_float(v, array.dtype) for v in array.ravel()[:MAX_VALUES])
        return f"[{flat}, …] ({array.size:,} values)"
    return exact(array)


def format_bytes(nbytes: int) -> str:
    if nbytes >= 2**20:
        return f"{nbytes / 2**20:.1f} MiB"
    if nbytes >= 2**10:
        return f"{nbytes / 2**10:.1f} KiB"
    return f"{nbytes} B"


def format_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def compact(values: np.ndarray | TensorPreview | ValueSummary | None, exact: Exact = format_array) -> str:
    """A value short enough for a node: whole when it has a few numbers (written by `exact`), else its shape and
    range."""
    if values is None:
        return "—"
    if isinstance(values, ValueSummary):
        if values.minimum == values.maximum:
            return f"{format_shape(values.shape)}, all {_short(values.minimum)}"
        return f"{format_shape(values.shape)} from {_short(values.minimum)} to {_short(values.maximum)}"
    if isinstance(values, TensorPreview):
        return f"{format_shape(values.shape)}, {values.size:,} values"
    array = np.asarray(values)
    if array.size <= WHOLE:
        return format_values(array, exact)
    low, high = float(array.min()), float(array.max())
    if low == high:
        return f"{format_shape(array.shape)}, all {_short(low)}"
    return f"{format_shape(array.shape)} from {_short(low)} to {_short(high)}"


BRIEF_ABOVE = 4  # on the picture, a value with more numbers shows each to four significant digits
SIGNIFICANT = 4  # a number said short has this many significant digits at most


def brief(values: np.ndarray | TensorPreview | ValueSummary | None, exact: Exact = format_array) -> str:
    """A value as a node or an edge of the picture says it: `compact`, but a tensor of 5 to 16 numbers with four
    significant digits each (`[[0.8506, 0.637], …]`), so its box stays small. The card and the container keep every
    digit."""
    if isinstance(values, np.ndarray) and BRIEF_ABOVE < values.size <= WHOLE:
        return _nested(np.asarray(values, dtype=np.float64).tolist())
    return compact(values, exact)


class TensorRange(TypedDict):
    """A tensor of more than four numbers as a folded view says it: its shape, its least and its greatest number."""

    shape: list[int]
    low: float
    high: float


# The numbers of a tensor a text writes, sent beside the text: four or fewer nested as the tensor is (`[[0.18561745,
# 2.0]]`, a scalar bare), more as its TensorRange. Each is the number the text writes (the engine prints float32's
# shortest form: `0.18561745` travels as that, never as its double's 17 digits), so its JSON text is the text's own
# and costs the wire little beside it. The stage writes a folded view's words from these (js/model/dot.mjs
# `spokenShort`), never from the text: more than four numbers as a shape and range, fewer number by number, each to
# four significant digits.
TensorNumbers = TensorRange | float | list[Any]


def tensor_range(values: object) -> TensorNumbers | None:
    """The numbers of a tensor `brief` and `compact` write, as they write them: a small one's every number
    (`format_array`'s, four at most), a larger one's least and greatest (`compact` writes more than 16 as float32
    prints them, as does a value that came back from a worker as its summary). None for a small one whose every number
    the engine prints with four significant digits or fewer (a folded view says its text as it is: `[[2.0, 0.5]]`), an
    empty one, a preview (its text writes no number of it), or one with a number that is not finite (JSON has no NaN;
    the stage then says its text as it is)."""
    if isinstance(values, ValueSummary):
        low, high = values.minimum, values.maximum
        if not (math.isfinite(low) and math.isfinite(high)):
            return None
        return {"shape": list(values.shape), "low": _printed(low), "high": _printed(high)}
    if not isinstance(values, np.ndarray) or not values.size:
        return None
    if values.size <= BRIEF_ABOVE:  # most of a replay's values: a few Python floats cost less than numpy's min
        return _said_short(values)
    low, high = float(values.min()), float(values.max())
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if values.size > WHOLE or values.dtype != np.float64:  # `compact` writes a large one's as float32 prints them
        dtype = values.dtype if values.size <= WHOLE else _FLOAT32
        low, high = _printed(low, dtype), _printed(high, dtype)
    return {"shape": list(values.shape), "low": low, "high": high}


def _said_short(values: np.ndarray) -> float | list[Any] | None:
    """Four numbers or fewer, nested as the tensor, each as `format_array` writes it (a float64 as its own repr):
    None when none has more than four significant digits to say short, or one is not finite."""
    numbers = values.ravel().tolist()
    char = values.dtype.char  # a character, not a dtype: comparing dtypes costs a replay's thousands of values
    if char == "f":  # float32, nearly every value of a replay: each number's words read once
        said = list(map(_float32_said, numbers))
    else:
        write = repr if char == "d" else partial(format_float, dtype=_kind(values.dtype))
        said = [_said(write(v)) if math.isfinite(v) else None for v in numbers]
    if None in said or not any(long for _, long in said):  # type: ignore[misc]
        return None
    printed = [number for number, _ in said]  # type: ignore[misc]
    shape = values.shape
    if len(shape) <= 1:
        return printed if shape else printed[0]
    if len(shape) == 2:  # a replay's values are mostly rows: nested without numpy
        return [printed[k * shape[1] : (k + 1) * shape[1]] for k in range(shape[0])]
    return np.array(printed).reshape(shape).tolist()


_FLOAT32_SAID: dict[float, tuple[float, bool]] = {}  # by value: a replay's values repeat


def _float32_said(value: float) -> tuple[float, bool] | None:
    """A float32 as the number the engine prints, and whether it prints more than four significant digits; None
    when it is not finite."""
    said = _FLOAT32_SAID.get(value)
    if said is None:
        if not math.isfinite(value):
            return None
        if len(_FLOAT32_SAID) >= 65_536:
            _FLOAT32_SAID.clear()
        said = _said(format_float(value))
        if value:  # 0.0 and -0.0 are one key of a dict (both short: never sent alone)
            _FLOAT32_SAID[value] = said
    return said


def printed_numbers(values: np.ndarray) -> list[float]:
    """Every number of `values`, flat, each as the engine prints it (`0.18561745` for a float32, never its double's
    17 digits): an exercise checks answers against them, and a folded part's sums add them in float32 again."""
    numbers = values.ravel().tolist()
    if values.dtype.char != "f":
        return [float(v) for v in numbers]
    return [said[0] if (said := _float32_said(v)) is not None else v for v in numbers]


def checkable_numbers(values: np.ndarray | TensorPreview) -> list[float] | None:
    """Every number of a value small enough to predict by hand (an exercise checks answers against them), as
    `printed_numbers` says them. None for a larger one, or one with a number that is not finite: JSON has no NaN (the
    browser's parse refused the whole stage of a program that took log(0)); that step is then not asked, and a folded
    part says its text as it is."""
    if isinstance(values, TensorPreview) or values.size > WHOLE:
        return None
    numbers = printed_numbers(np.asarray(values))
    return numbers if all(map(math.isfinite, numbers)) else None


def _said(text: str) -> tuple[float, bool]:
    return float(text), _significant(text) > SIGNIFICANT


def _significant(text: str) -> int:
    """How many significant digits a number's text writes (`0.03280` 4, `1.3061234e-05` 8)."""
    return len(text.partition("e")[0].replace("-", "").replace(".", "").lstrip("0"))


def _kind(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind == "f" else _FLOAT32  # an integer array's numbers are written as float32


def _printed(value: float, dtype: np.dtype = _FLOAT32) -> float:
    """`value` as the number the engine prints it (`format_float`: a float32's shortest round-trip form, another
    float width's own): its JSON text is that text."""
    return float(format_float(value, _kind(dtype)))


def _nested(values: object) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v) for v in values) + "]"
    return four_digits(float(values))  # type: ignore[arg-type]


def four_digits(value: float) -> str:
    """`value` to four significant digits: `0.8506`, `0.5`, and `11.00` for 10.996227, never `11`, which reads as
    a whole number print would not show. Trailing zeros go only where the value is that number (in float32)."""
    text = f"{value:.4g}"
    if np.float32(float(text)) == np.float32(value):
        return text
    return f"{value:#.4g}"


def _short(value: float) -> str:  # a summary statistic, as float32 prints it
    return format_float(value)
