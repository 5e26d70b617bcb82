"""What a Playground run may use and what it gives back: its `Limits`, its `RunResult` (output, error, graph,
the replay of its last backward, memory per loop iteration, the statement that made each node) and the
`PlaygroundError` a refusal or a Python error becomes. Plain data: the sandbox fills it in a worker process,
`playground.plain` carries it to the server."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from autodiff import BackwardRecorder, GraphSnapshot
from autodiff.memory import MemoryUsage


@dataclass(frozen=True)
class Limits:
    """What one run may use. Values a classroom laptop serves comfortably for many students at once."""

    program_chars: int = 4_000
    call_depth: int = 200  # functions calling functions (a recursion), counted from the program's first line
    elements_per_tensor: int = 1_048_576  # 1024 × 1024
    bytes_held: int = 64 * 2**20
    nodes: int = 5_000
    seconds: float = 5.0
    string_chars: int = 500  # a printed line may be four times this long
    print_lines: int = 500
    process_bytes: int = 512 * 2**20  # the whole run's memory, lists and strings too: its worker's RLIMIT_AS


SECONDS_ENV = "PLAYGROUND_SECONDS"  # a server's own time limit for one run, from 1 to 60 s (its operator's choice)


def served_limits(env: dict[str, str] | None = None) -> tuple[Limits, str | None]:
    """This server's limits: the defaults, with the time a run may take set by $PLAYGROUND_SECONDS where its
    operator chose one (a busy shared machine may want more). Anything but a number of seconds from 1 to 60 keeps the
    default, and the sentence that says so comes second."""
    raw = (os.environ if env is None else env).get(SECONDS_ENV, "").strip()
    if not raw:
        return Limits(), None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 1 <= seconds <= 60:
        limits = Limits()
        refused = f"This server's {SECONDS_ENV} is {raw[:20]!r}, not 1 to 60 seconds"
        return limits, f"{refused}: a run may take {limits.seconds:g} s, the default."
    return Limits(seconds=seconds), None


ERROR_CHARS = 2_000  # an error's message (and its hint) is cut to this: it may quote what the program made


def cut(text: str, limit: int = ERROR_CHARS) -> str:
    """`text` cut to `limit` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def source_lines(source: str) -> list[str]:
    """The program's lines as Python numbers them (U+2028 and form feeds are not line breaks to Python)."""
    return re.split(r"\r\n|\r|\n", source)


class PlaygroundError(Exception):
    """A refusal or an error in the student's program, with where it happened and what to do."""

    internal = False  # True only for a bug in the interpreter itself (the fuzz tests look for it)

    def __init__(self, message: str, line: int | None = None, column: int | None = None, hint: str = "") -> None:
        message, hint = cut(message), cut(hint)  # bounded where it is made
        self.message, self.line, self.column, self.hint = message, line, column, hint
        where = f"Line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message + (f" Hint: {hint}" if hint else ""))


@dataclass
class BackwardRun:
    """One backward the program ran, recorded for the replay."""

    before: GraphSnapshot
    recorder: BackwardRecorder
    names: dict[int, str]


@dataclass
class RunResult:
    output: list[str] = field(default_factory=list)
    error: PlaygroundError | None = None
    snapshot: GraphSnapshot | None = None
    names: dict[int, str] = field(default_factory=dict)
    backward: BackwardRun | None = None  # the last backward
    memory: list[tuple[int, MemoryUsage]] = field(default_factory=list)  # after each loop iteration
    lines: dict[int, tuple[int, int]] = field(default_factory=dict)  # NodeId -> the statement that made it (its lines)
    reply_bytes: int = 0  # the size of the worker's reply: what holding this result costs a session
