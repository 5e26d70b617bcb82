"""What a program made, recorded for the pictures, in one place for every host (the lessons' programs and labs,
the Training lesson's iteration, the Playground's sandbox, the notebook): a backward with its graph as it was and
every event it caused (`recorded_backward`), and what the program's own statements made, watched while it runs
(`traced_call`): for each node, the statement that made it (its lines) and the name that held it right after (a
variable, an attribute of `self`, or an element of a list either holds).

A trace function (`sys.settrace`) sees each line of the watched code objects; the device numbers its nodes in the
order it makes them, so the nodes made since the last line event of a watched frame are that line's. A node is named
once, by the first statement after which something of the frame holds it: `self.w = [...]` names its leaves `w[0]`,
`w[1]`; a later `params = self.w + [self.b]` renames nothing.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any, TypeVar

from ..device import Device
from ..grads import Gradients
from ..snapshot import GraphSnapshot
from ..structure import parse_python
from ..tensor import Tensor
from ..trace import BackwardRecorder

T = TypeVar("T")
LIST_DEPTH = 2  # `w[0]`, `w[0][1]`: a list of lists of tensors is named this deep, no deeper
LIST_NAMED = 1_000  # elements of one list looked at for names (a list of samples may be long)
COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
Offsets = Callable[[CodeType], "int | None"]  # a watched code object -> what turns its line into a source line


@dataclass(frozen=True)
class Provenance:
    """Where each node of a run came from: the statement that made it (its first and last line in the shown source)
    and the name that held it after that statement (each pass of a loop's `y = ...` names its own `y`)."""

    lines: dict[int, tuple[int, int]]
    names: dict[int, str]


@dataclass(frozen=True)
class RecordedBackward:
    """A backward recorded for a replay: the graph before it, every event it caused, and its gradients."""

    before: GraphSnapshot
    recorder: BackwardRecorder
    grads: Gradients


def recorded_backward(loss: Tensor, before: GraphSnapshot | None = None) -> RecordedBackward:
    """`loss.backward()`, recorded: the device's graph as it was (or `before`, a host's own view of it) and every
    event. A refused backward raises as `backward` does, having recorded nothing."""
    graph = loss.device.snapshot() if before is None else before
    recorder = BackwardRecorder()
    return RecordedBackward(graph, recorder, loss.backward(recorder=recorder))


@functools.lru_cache(maxsize=64)  # a program run again (the same lesson, a Playground example) is read once
def statement_spans(source: str) -> dict[int, tuple[int, int]]:
    """The first line of each simple statement -> its first and last line (a statement may span several lines).
    Shared between the calls that read one source: never written to."""
    compound = (ast.For, ast.While, ast.If, ast.With, ast.FunctionDef, ast.ClassDef, ast.Try)
    return {
        node.lineno: (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(parse_python(source))
        if isinstance(node, ast.stmt) and not isinstance(node, compound)
    }


def held_names(variables: Mapping[str, object], first: int, end: int) -> dict[int, str]:
    """`{node id: name}` for the nodes numbered `first` to `end` (excluded) that `variables` hold: a variable, an
    element of a list or tuple (`w[0]`), or an attribute of `self` (`b`) or an element of one (`w[0]`)."""
    found: dict[int, str] = {}

    def visit(name: str, value: object, depth: int) -> None:
        if isinstance(value, Tensor):
            node = value.node
            if node is not None and first <= int(node.id) < end:
                found.setdefault(int(node.id), name)
        elif depth < LIST_DEPTH and type(value) in (list, tuple):
            for index, element in enumerate(value[:LIST_NAMED]):  # type: ignore[index]
                visit(f"{name}[{index}]", element, depth + 1)

    for name, value in variables.items():
        if name.startswith("_"):
            continue
        if name == "self":
            attributes = getattr(value, "__dict__", None)
            if type(attributes) is dict:
                for attribute, held in list(attributes.items()):
                    if isinstance(attribute, str) and not attribute.startswith("_"):
                        visit(attribute, held, 0)
            continue
        visit(name, value, 0)
    return found


def traced_call(
    offset_of: Offsets, source: str, call: Callable[[], T], ad: Device, into: Provenance | None = None
) -> tuple[T, Provenance]:
    """`call()`, watching each statement of the code objects `offset_of` gives an offset for (their lines plus that
    offset are lines of `source`): the nodes `ad` made while a statement ran are that statement's. The provenance is
    filled as the call runs (`into`, for a caller that reads it meanwhile), and returned."""
    __autodiff_hidden__ = True  # noqa: F841 (a harness, not the program: see `autodiff.structure`)
    spans = statement_spans(source)
    provenance = Provenance({}, {}) if into is None else into
    made, names = provenance.lines, provenance.names
    running: dict[FrameType, int | None] = {}  # each watched frame -> the source line of the statement it runs
    offsets: dict[CodeType, int | None] = {}
    mark = [0]

    def settle(frame: FrameType) -> None:
        created = ad.nodes_created
        line = running.get(frame)
        if line is not None and mark[0] < created:
            span = spans.get(line, (line, line))
            for node_id in range(mark[0], created):
                made[node_id] = span
            for node_id, name in held_names(frame.f_locals, mark[0], created).items():
                names.setdefault(node_id, name)
        mark[0] = created

    def watch(frame: FrameType, event: str, arg: object) -> Any:  # a trace function: itself, or None
        code = frame.f_code
        offset = offsets.get(code, -1)
        if offset == -1:  # a comprehension is part of its line: what it makes is that line's, named by it
            offset = offsets[code] = None if code.co_name in COMPREHENSIONS else offset_of(code)
        if offset is None:
            return None
        if event == "call":
            caller = frame.f_back
            if caller is not None and caller in running:  # what the caller's line made before this call
                settle(caller)
        elif event in ("line", "return"):
            settle(frame)
            running[frame] = frame.f_lineno + offset if event == "line" else None
            if event == "return":
                del running[frame]
        return watch

    previous = sys.gettrace()
    sys.settrace(watch)
    try:
        result = call()
    finally:
        sys.settrace(previous)
        running.clear()  # the frames, and the locals they hold: a tensor kept alive here would change the memory
    return result, provenance
