"""A student's own training points: read from pasted CSV rows (`x, y, class`), written back as CSV, and kept in a
link as TensorFlow Playground keeps its state (small data only). Every refusal is a sentence that names the row.
No Streamlit here."""

from __future__ import annotations

import base64
import math
import struct

import numpy as np

from .training import MAX_POINTS

CSV_CHARS = MAX_POINTS * 40  # pasted rows: room for MAX_POINTS rows such as `-12.345678, 31.5, 1` and a header
LINK_POINTS = 200  # at most this many points travel in a link (about 1,400 characters)
LINK_SCALE = 1000  # a point's coordinates are kept in a link to 1/1000
LINK_LIMIT = 32.767  # the largest coordinate a link keeps (a signed 16-bit number of thousandths)
_POINT = struct.Struct("<hhB")  # x and y in thousandths, then the class


class DataError(ValueError):
    """Points that cannot be used, with the sentence that says why (and which row)."""


def parse_csv(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Points and classes from rows of `x, y, class` (class 0 or 1). Blank lines and a header row are skipped. Text
    past `CSV_CHARS` is refused before it is split (the page's box stops typing there too)."""
    if len(text) > CSV_CHARS:
        raise DataError(
            f"The rows are {len(text):,} characters long; at most {CSV_CHARS:,} are read. Remove some rows."
        )
    rows = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if rows and not any(_is_number(cell) for cell in rows[0][1].split(",")):
        rows = rows[1:]  # a header such as "x, y, class": no number in it (any other first row is read, or named)
    if len(rows) > MAX_POINTS:
        raise DataError(f"There are {len(rows)} rows: this lesson trains on at most {MAX_POINTS}. Remove some rows.")
    points, labels = [], []
    for number, line in rows:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3:
            raise DataError(f"Row {number} ({line[:40]!r}) has {len(cells)} values: write x, y and the class.")
        if not (_is_number(cells[0]) and _is_number(cells[1])):
            raise DataError(f"Row {number} ({line[:40]!r}): x and y must be numbers, such as 0.5 or -1.2.")
        x, y = float(cells[0]), float(cells[1])
        if abs(x) > LINK_LIMIT or abs(y) > LINK_LIMIT:
            raise DataError(f"Row {number} ({line[:40]!r}): x and y must lie between -{LINK_LIMIT} and {LINK_LIMIT}.")
        if cells[2] not in ("0", "1"):
            raise DataError(f"Row {number} ({line[:40]!r}): the class must be 0 or 1.")
        points.append((x, y))
        labels.append(int(cells[2]))
    if not points:
        raise DataError("There are no rows to read: paste rows such as 0.5, -1.2, 1 (x, y, class).")
    return np.array(points, dtype=np.float32), np.array(labels, dtype=np.int64)


def to_csv(points: np.ndarray, labels: np.ndarray) -> str:
    """The points as CSV rows with a header, as `parse_csv` reads them."""
    return "x, y, class\n" + "".join(f"{x:.4g}, {y:.4g}, {c}\n" for (x, y), c in zip(points, labels, strict=True))


def to_link(points: np.ndarray, labels: np.ndarray) -> str:
    """The points as a short text for a link's `data` parameter (each coordinate to 1/1000)."""
    if len(points) > LINK_POINTS:
        raise DataError(
            f"{len(points)} points are too many for a link (at most {LINK_POINTS}): download them as CSV instead."
        )
    packed = b"".join(
        _POINT.pack(round(float(x) * LINK_SCALE), round(float(y) * LINK_SCALE), int(c))
        for (x, y), c in zip(np.clip(points, -LINK_LIMIT, LINK_LIMIT), labels, strict=True)
    )
    return base64.urlsafe_b64encode(packed).decode().rstrip("=")


def from_link(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The points a link's `data` parameter carries."""
    if len(text) > math.ceil(LINK_POINTS * _POINT.size * 4 / 3):
        raise DataError(f"The link's data is longer than {LINK_POINTS} points: it was not read.")
    try:
        packed = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except ValueError:
        raise DataError("The link's data is damaged (it is not the text this page writes): it was not read.") from None
    if len(packed) % _POINT.size:
        raise DataError("The link's data is cut short (copy the whole link): it was not read.")
    rows = [_POINT.unpack_from(packed, k) for k in range(0, len(packed), _POINT.size)]
    if any(c not in (0, 1) for _, _, c in rows):
        raise DataError("The link's data has a class other than 0 or 1: it was not read.")
    points = np.array([(x / LINK_SCALE, y / LINK_SCALE) for x, y, _ in rows], dtype=np.float32).reshape(-1, 2)
    return points, np.array([c for _, _, c in rows], dtype=np.int64)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
