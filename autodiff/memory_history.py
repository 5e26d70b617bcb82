"""A device's memory history: every buffer allocated and released, what it was, and where the program made it,
written out in the snapshot format of PyTorch's memory_viz (https://pytorch.org/memory_viz).

Off by default. `device.record_memory_history()` makes a `MemoryHistory` the observer of the device's `MemoryPool`
(`observer.py`); until then the pool and the server call the observer that does nothing.

What each buffer is (its *role*) is learned after it is allocated: the server says which node and op made it,
which step saves it for backward, which leaf became a parameter, and the `Gradients` container which buffers
are gradients. memory_viz colours by *category*, with its own names; each role maps to one of them (`CATEGORY`).

Addresses are made up (the engine has none): each buffer gets a fresh range, never reused, and is its own
segment, as a numpy array is its own allocation (no caching allocator). An entry is one allocation or one
release; only the newest `max_entries` are kept, and the snapshot says how many were left out.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

from .observer import Observer
from .structure import is_harness

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .backends.base import Buffer
    from .graph import NodeId, Step

# what a buffer is -> memory_viz's category (its legend's words): parameter, input, activation, gradient,
# temporary and unknown are memory_viz's own names
CATEGORY = {
    "parameter": "parameter",  # a leaf marked with require_grad()
    "input": "input",  # an untracked leaf: data, random, zeros, detach
    "saved": "activation",  # an op's output a step keeps for backward
    "checkpoint": "activation",  # an op's output kept so that balanced checkpointing can recompute from it
    "output": "temporary",  # an op's output nothing keeps for backward: gone with its tensor
    "gradient": "gradient",  # an entry of a `Gradients` container
    "other": "unknown",  # a backward rule's intermediate, an op on a device without autodiff, a recomputation
}
MAX_FRAMES = 32  # innermost Python frames kept per entry
_ALIGN = 512  # addresses are spaced as a CUDA allocator's blocks are
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Frame:
    filename: str
    line: int
    name: str


@dataclass(eq=False)
class Allocation:
    """One buffer's life. `allocated_at` and `released_at` count the history's entries (None: not recorded)."""

    address: int
    size: int
    allocated_at: int | None
    frames: tuple[Frame, ...]
    role: str = "other"
    node: int | None = None  # the node whose tensor it is (an op's output, a leaf) or whose gradient it is
    op: str | None = None
    saved_by: list[tuple[int, str]] = field(default_factory=list)  # (node, op) of each step that saved it
    released_at: int | None = None
    release_frames: tuple[Frame, ...] = ()

    @property
    def category(self) -> str:
        return CATEGORY[self.role]

    @property
    def program_frame(self) -> Frame | None:
        """The innermost frame outside the engine: the program's line that made this buffer."""
        return next((f for f in self.frames if not f.filename.startswith(_PACKAGE)), None)

    def describe(self, called: Mapping[int, str] | None = None) -> str:
        """What it is, in words: `NodeId(5) · exp output, saved by NodeId(6) · mul for backward`. With `called` (what
        a picture calls each node), its names instead: `h (mul) output, saved by loss for backward`, `exp(x) output`
        (an expression says its op), `x: a parameter` (a leaf's op only says how it was made)."""

        def node(i: int, op: str | None) -> str:
            name = None if called is None else called.get(i)
            if name is None:
                return f"NodeId({i})" + (f" · {op}" if op else "")
            return f"{name} ({op})" if op and re.fullmatch(r"[^\W\d]\w*", name) else name  # a variable: `h (mul)`

        leaf = self.role in ("parameter", "input") and called is not None
        made = node(self.node, None if leaf else self.op) if self.node is not None else "a buffer"
        what = {
            "parameter": f"{made}: a parameter (a leaf marked with require_grad)",
            "input": f"{made}: an input (an untracked leaf)",
            "saved": f"{made} output",
            "checkpoint": f"{made} output, kept as a checkpoint to recompute from",
            "output": f"{made} output, not kept for backward",
            "gradient": f"the gradient of {made}",
            "other": "a buffer the engine did not attribute (a backward rule's intermediate, a recomputation, "
            "an op without autodiff)",
        }[self.role]
        if self.saved_by:
            named = called or {}  # a named step needs no op: `saved by loss`
            steps = ", ".join(node(i, None if i in named else op) for i, op in self.saved_by[:3])
            more = len(self.saved_by) - 3
            what += f", saved by {steps}" + (f" and {more} more steps" if more > 0 else "") + " for backward"
        return what


@dataclass(frozen=True)
class MemoryEvent:
    action: str  # "alloc" or "free"
    allocation: Allocation
    time_us: int  # microseconds since the recording started


class MemoryHistory(Observer):
    """The recording a `MemoryPool` feeds while it is its observer (see the module's docstring)."""

    def __init__(self, max_entries: int, bytes_in_use: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}.")
        self.max_entries = max_entries
        self.events: deque[MemoryEvent] = deque(maxlen=max_entries)
        self.recorded = 0  # entries ever recorded; the newest `max_entries` are kept
        self.bytes_before = bytes_in_use  # held when recording started, by buffers it never saw allocated
        self._live: dict[int, Allocation] = {}  # id(buffer) -> its allocation, while the buffer lives
        self._next_address = _ALIGN
        self._start = time.perf_counter_ns()
        self._known: dict[tuple[str, int, str], Frame] = {}  # each frame once: a loop's entries share theirs

    @property
    def dropped(self) -> int:
        """Entries left out because only the newest `max_entries` are kept."""
        return self.recorded - len(self.events)

    @property
    def live(self) -> list[Allocation]:
        return sorted(self._live.values(), key=lambda a: a.address)

    # -- what the pool reports ------------------------------------------------------------------------
    def allocated(self, owner: object, nbytes: int) -> None:
        allocation = Allocation(self._address(nbytes), nbytes, self.recorded, self._frames())
        self._live[id(owner)] = allocation
        self._record("alloc", allocation)

    def released(self, owner: object, nbytes: int) -> None:
        allocation = self._live.pop(id(owner), None)
        if allocation is None:  # allocated before the recording started
            allocation = Allocation(self._address(nbytes), nbytes, None, ())
            self.bytes_before -= nbytes
        allocation.released_at = self.recorded
        allocation.release_frames = self._frames()
        self._record("free", allocation)

    # -- what the server and the gradients container say a buffer is -------------------------------------
    def registered(self, buffer: Buffer, step: Step, checkpoints: dict[NodeId, Buffer]) -> None:
        """An op's output and its step: the output, what the step saves, what it checkpoints."""
        node = step.node
        output = self._of(buffer)
        if output is not None and output.node is None:
            output.node, output.op, output.role = int(node.id), step.op, "output"
        for saved in {id(b.allocation): b for b in step.saved.values()}.values():
            allocation = self._of(saved)
            if allocation is not None:
                allocation.saved_by.append((int(node.id), step.op))
                if allocation.role == "output":
                    allocation.role = "saved"
        for parent in node.parents:
            kept = checkpoints.get(parent.id)
            allocation = None if kept is None else self._of(kept)
            if allocation is not None and allocation.role in ("output", "saved"):
                allocation.role = "checkpoint"

    def leaf(self, buffer: Buffer, node_id: NodeId, op: str) -> None:
        allocation = self._of(buffer)
        if allocation is not None and allocation.node is None:
            allocation.node, allocation.op, allocation.role = int(node_id), op, "input"

    def parameter(self, node_id: NodeId) -> None:
        """require_grad() on a leaf: its buffer is a parameter from now on."""
        for allocation in self._live.values():
            if allocation.node == node_id and allocation.role == "input":
                allocation.role = "parameter"

    def gradient(self, buffer: Buffer, node_id: NodeId) -> None:
        allocation = self._of(buffer)
        if allocation is not None and allocation.role == "other":
            allocation.node, allocation.role = int(node_id), "gradient"

    # -- memory_viz's format ---------------------------------------------------------------------------
    def snapshot(self, bytes_in_use: int) -> dict[str, Any]:
        """A plain dict in memory_viz's snapshot format (only dict, list, int, str, None: its viewer unpickles
        it in JavaScript). `bytes_in_use` is the device's, to account for buffers allocated before recording."""
        trace: list[dict[str, Any]] = []
        for event in self.events:
            a = event.allocation
            entry = {"addr": a.address, "size": a.size, "stream": 0, "time_us": event.time_us, "category": a.category}
            if event.action == "alloc":
                frames = _viz_frames(a, a.frames)
                trace.append({"action": "segment_alloc", **entry, "frames": frames})
                trace.append({"action": "alloc", **entry, "frames": frames})
            else:
                frames = _viz_frames(a, a.release_frames)
                for action in ("free_requested", "free_completed", "segment_free"):
                    trace.append({"action": action, **entry, "frames": frames})
        # memory_viz's viewer fails when categories are given and none is "unknown": this entry (a snapshot
        # was taken, an action of its format) always carries one
        trace.append(
            {
                "action": "snapshot",
                "addr": 0,
                "size": 0,
                "stream": 0,
                "frames": [],
                "category": "unknown",
                "time_us": self._now(),
            }
        )
        segments = [_segment(a.address, a.size, _viz_frames(a, a.frames)) for a in self.live]
        unseen = bytes_in_use - sum(a.size for a in self._live.values())
        if unseen > 0:  # buffers allocated before recording started, still held: one block, its frames unknown
            segments.append(_segment(self._next_address, unseen, []))
        return {
            "segments": segments,
            "device_traces": [trace],
            "autodiff_history": {
                "max_entries": self.max_entries,
                "entries_recorded": self.recorded,
                "entries_dropped": self.dropped,
                "note": (
                    f"only the newest {self.max_entries:,} of {self.recorded:,} entries are kept"
                    if self.dropped
                    else "every entry since the recording started is kept"
                ),
            },
        }

    # -- helpers ----------------------------------------------------------------------------------
    def _of(self, buffer: Buffer) -> Allocation | None:
        return self._live.get(id(buffer.allocation))

    def _address(self, nbytes: int) -> int:
        address = self._next_address
        self._next_address += -(-max(nbytes, 1) // _ALIGN) * _ALIGN
        return address

    def _record(self, action: str, allocation: Allocation) -> None:
        self.events.append(MemoryEvent(action, allocation, self._now()))
        self.recorded += 1

    def _frames(self) -> tuple[Frame, ...]:
        """The Python stack of the allocation or release, innermost first, from the buffer that asked."""
        frames: list[Frame] = []
        known = self._known
        try:
            frame: FrameType | None = sys._getframe(3)  # past this, the history's hook and the pool
        except ValueError:  # a buffer freed with no Python frame left (the interpreter shutting down)
            frame = None
        while frame is not None and len(frames) < MAX_FRAMES:
            if is_harness(frame):  # what ran the program, not the program: its frames and the callers' are not shown
                break
            code = frame.f_code
            key = (code.co_filename, frame.f_lineno or 0, code.co_name)
            found = known.get(key)
            if found is None:
                found = known[key] = Frame(*key)
            frames.append(found)
            frame = frame.f_back
        return tuple(frames)

    def _now(self) -> int:
        return (time.perf_counter_ns() - self._start) // 1000


def _viz_frames(allocation: Allocation, frames: tuple[Frame, ...]) -> list[dict[str, Any]]:
    """memory_viz's frames, innermost first, after one that says what the buffer is (its viewer shows frames
    on hover, so a student sees the node there too)."""
    what = {
        "filename": "autodiff",
        "line": allocation.node if allocation.node is not None else 0,
        "name": allocation.describe(),
    }
    return [what, *({"filename": f.filename, "line": f.line, "name": f.name} for f in frames)]


def _segment(address: int, size: int, frames: list[dict[str, Any]]) -> dict[str, Any]:
    block = {"size": size, "requested_size": size, "state": "active_allocated", "frames": frames}
    return {
        "device": 0,
        "address": address,
        "total_size": size,
        "allocated_size": size,
        "active_size": size,
        "requested_size": size,
        "stream": 0,
        "segment_type": "large",
        "blocks": [block],
    }
