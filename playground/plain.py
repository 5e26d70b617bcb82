"""Results of a Playground run as plain data: what crosses back from a worker process.

A worker runs code a visitor typed, so the server never unpickles what it sends. A result is encoded
to JSON here (numbers, strings, lists, dicts), and decoded in the server into a fixed set of the
engine's plain record types (snapshots, trace events, memory figures): nothing else can be built from
it. A tensor larger than `WHOLE_VALUES` values travels as its shape and its first values (a reply that
would be too large is written again with every tensor as a preview). Text is bounded on both sides: the
worker writes at most `ERROR_CHARS` of an error and the server reads no more.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import json
import re
from typing import Any

import numpy as np

from autodiff import BackwardRecorder, GraphSnapshot, MemoryUsage, NodeId, NodeSnapshot, NodeStatus, Requirement, trace
from autodiff.snapshot import ValueSummary
from autodiff.structure import GroupFrame
from autodiff.trace import TensorPreview

from .results import ERROR_CHARS, BackwardRun, Limits, PlaygroundError, RunResult, cut

WHOLE_VALUES = 4096  # a tensor up to this many values is sent whole (exercises check them)
PREVIEW_ONLY = 16  # ... unless the reply is too large: then only tensors this small go whole
PREVIEW_VALUES = 64  # a larger one as its shape and this many first values (the page shows 8)
OUTPUT_LINES = Limits().print_lines  # what the server reads of a program's output
LINE_CHARS = Limits().string_chars * 4
DTYPES = ("float32", "float64")


RECORDS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        GraphSnapshot,
        NodeSnapshot,
        MemoryUsage,
        trace.TapeBuilt,
        trace.StepStarted,
        trace.GradientRegistered,
        trace.GradientConsumed,
        trace.Recomputed,
        trace.SavedStateFreed,
        trace.SweepFreed,
        trace.BackwardFinished,
        ValueSummary,
        GroupFrame,
    )
}
ENUMS: dict[str, type[enum.Enum]] = {"Requirement": Requirement, "NodeStatus": NodeStatus}


class PlainDataError(ValueError):
    """Data from a worker that is not a result this module writes."""


def encode(value: Any, whole_values: int = WHOLE_VALUES, frames: dict[GroupFrame, int] | None = None) -> Any:
    """`value` as JSON-ready data, typed records tagged with their class name; tensors above `whole_values`
    values as previews. A `GroupFrame` is written whole once, then by its number (`frames`, in the order written):
    every node of a call shares its frames, and a deep program's keys are long."""
    if frames is None:
        frames = {}
    if isinstance(value, GroupFrame):
        if value in frames:
            return {"$": "frame", "i": frames[value]}
        frames[value] = len(frames)
        return {"$": "GroupFrame", "kind": value.kind, "name": value.name, "key": value.key}
    if isinstance(value, NodeId):
        return {"$": "NodeId", "v": int(value)}
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, enum.Enum):
        return {"$": type(value).__name__, "v": value.name}
    if isinstance(value, TensorPreview):
        return {"$": "preview", "shape": list(value.shape), **_packed(value.first)}
    if isinstance(value, np.ndarray):
        if value.size > whole_values:
            return {"$": "preview", "shape": list(value.shape), **_packed(value.ravel()[:PREVIEW_VALUES])}
        return {"$": "array", "shape": list(value.shape), **_packed(value)}
    if isinstance(value, tuple | list):
        return [encode(v, whole_values, frames) for v in value]
    if isinstance(value, dict):
        items = [[encode(k, whole_values, frames), encode(v, whole_values, frames)] for k, v in value.items()]
        return {"$": "dict", "items": items}
    if dataclasses.is_dataclass(value) and type(value).__name__ in RECORDS:
        fields = {f.name: encode(getattr(value, f.name), whole_values, frames) for f in dataclasses.fields(value)}
        return {"$": type(value).__name__, **fields}
    raise TypeError(f"cannot send a {type(value).__name__} across the process boundary")


def dumps(value: Any, whole_values: int = WHOLE_VALUES) -> bytes:
    return json.dumps(encode(value, whole_values), allow_nan=True, separators=(",", ":")).encode("utf-8")


def loads(data: bytes) -> Any:
    try:
        return decode(json.loads(data.decode("utf-8")), [])
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, binascii.Error) as error:
        raise PlainDataError(f"a worker sent data that is not a run result ({type(error).__name__})") from None


def decode(value: Any, frames: list[GroupFrame]) -> Any:
    """What `encode` wrote, read in the same order (`frames`: the GroupFrames read so far, by number)."""
    if isinstance(value, list):
        return tuple(decode(v, frames) for v in value)
    if not isinstance(value, dict):
        if isinstance(value, bool | int | float | str) or value is None:
            return value
        raise PlainDataError("unexpected value")
    tag = value["$"]
    if tag == "frame":
        number = _int(value["i"])
        if not 0 <= number < len(frames):
            raise PlainDataError("a frame that was not written before")
        return frames[number]
    if tag == "NodeId":
        return NodeId(_int(value["v"]))
    if tag in ENUMS:
        return ENUMS[tag][value["v"]]
    if tag in ("array", "preview"):
        shape = tuple(_int(d) for d in value["shape"])
        if value["dtype"] not in DTYPES:
            raise PlainDataError("unexpected dtype")
        values = np.frombuffer(
            base64.b64decode(value["b64"], validate=True), dtype=np.dtype(value["dtype"]).newbyteorder("<")
        )
        if tag == "preview":
            return TensorPreview(shape, values.astype(values.dtype.newbyteorder("=")))
        return values.astype(values.dtype.newbyteorder("=")).reshape(shape)
    if tag == "dict":
        return {decode(k, frames): decode(v, frames) for k, v in value["items"]}
    cls = RECORDS[tag]
    names = [f.name for f in dataclasses.fields(cls)]
    record = cls(**{name: decode(value[name], frames) for name in names})
    if isinstance(record, GroupFrame):
        frames.append(record)
    return record


def _packed(array: np.ndarray) -> dict[str, str]:
    """Values as base64 of little-endian floats: compact, and quick to write and read."""
    dtype = "float64" if array.dtype == np.float64 else "float32"
    data = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()
    return {"dtype": dtype, "b64": base64.b64encode(data).decode("ascii")}


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise PlainDataError("expected a whole number")
    return value


def result_to_plain(result: RunResult) -> dict[str, Any]:
    """What a worker sends back: a run's output, error, graph, last backward and memory series."""
    error = result.error
    backward = result.backward
    return {
        "output": [clean_text(line[:LINE_CHARS]) for line in result.output[:OUTPUT_LINES]],
        "error": None
        if error is None
        else {
            "message": clean_text(cut(error.message)),
            "line": error.line,
            "column": error.column,
            "hint": clean_text(cut(error.hint)),
        },
        "snapshot": result.snapshot,
        "names": result.names,
        "backward": None
        if backward is None
        else {"before": backward.before, "events": backward.recorder.events, "names": backward.names},
        "memory": [[count, usage] for count, usage in result.memory],
        "lines": [[node_id, first, last] for node_id, (first, last) in result.lines.items()],
    }


def result_from_plain(data: Any) -> RunResult:
    """The server's copy of a worker's result, built from decoded plain data only."""
    if not isinstance(data, dict):
        raise PlainDataError("a run result must be a mapping")
    error = data["error"]
    backward = data["backward"]
    recorder = BackwardRecorder()
    if backward is not None:
        recorder.events = list(backward["events"])
    return RunResult(
        output=[_text(line, LINE_CHARS) for line in data["output"][:OUTPUT_LINES]],
        error=None
        if error is None
        else PlaygroundError(
            _text(error["message"], ERROR_CHARS),
            _position(error["line"]),
            _position(error["column"]),
            _text(error["hint"], ERROR_CHARS),
        ),
        snapshot=data["snapshot"],
        names={_int(k): _identifier(v) for k, v in data["names"].items()},
        backward=None
        if backward is None
        else BackwardRun(backward["before"], recorder, {_int(k): _identifier(v) for k, v in backward["names"].items()}),
        memory=[(int(count), usage) for count, usage in data["memory"]],
        lines={_int(node_id): (_int(first), _int(last)) for node_id, first, last in data["lines"]},
    )


def clean_text(text: str) -> str:
    """`text` with lone surrogates (which no page can encode) replaced by U+FFFD."""
    return text.encode("utf-16", errors="surrogatepass").decode("utf-16", errors="replace")


def _position(value: Any) -> int | None:
    return None if value is None else _int(value)


# a node's name: `w`, `w[0]` (what `held_names` gives), or the expression a swept node is remembered by (`shared·2`)
NAME = re.compile(r"[^\x00-\x1f\x7f<>&\"'`\\]{1,100}")


def _identifier(value: Any) -> str:
    """A node's name: drawn in graphs and tables, so at most 100 characters and nothing that reads as markup."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise PlainDataError("expected a variable name")
    return value


def _text(value: Any, limit: int) -> str:
    """Text from a worker, at most `limit` characters (a longer one is cut, as the worker would have)."""
    if not isinstance(value, str):
        raise PlainDataError("expected text")
    return cut(value, limit)
