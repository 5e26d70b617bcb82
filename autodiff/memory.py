"""Exact, deterministic accounting of the buffers a device holds.

What counts as an allocation: every array a backend operation creates (an op's output, a
gradient, a sum of two gradients, the ones that seed a backward). Views share the buffer of the
array they look at and count nothing: `reshape` (when no copy is needed), `swap_dims`,
`transpose`, `detach()`, `without_autodiff()`, and reading a gradient out of `Gradients`.
A buffer is freed the moment the last reference to it goes away (CPython's reference counting
makes that moment exact), so `in_use` is always the sum of the bytes of the live buffers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import MemoryBudgetError
from .observer import NO_OBSERVER, Observer

MIB = 1024 * 1024


@dataclass(frozen=True)
class MemoryUsage:
    """Bytes held by the live buffers of a device, and how many buffers that is."""

    bytes_in_use: int
    allocations: int

    @property
    def mib(self) -> float:
        return self.bytes_in_use / MIB

    def __str__(self) -> str:
        # The seed's format: `in_use=   1.0 MiB allocs=2`.
        return f"in_use={self.mib:6.1f} MiB allocs={self.allocations}"


class MemoryBudget:
    """A cap on the bytes held by every pool created under it (an app gives each visitor one). A budget may have a
    `parent` that every byte also counts against (an app's budget for the whole server, shared by its visitors'
    sessions): an allocation past either is refused, in words that say which."""

    __slots__ = ("limit", "used", "parent", "_lock")

    def __init__(self, limit: int, parent: MemoryBudget | None = None) -> None:
        self.limit = limit
        self.used = 0
        self.parent = parent
        self._lock = threading.Lock()  # a parent is charged from many sessions' threads at once

    def take(self, nbytes: int) -> None:
        """Count `nbytes` against this budget and its parent, or raise `MemoryBudgetError` and count nothing."""
        if self.used + nbytes > self.limit:
            raise MemoryBudgetError(
                f"This would take the memory of your session past {self.limit / MIB:,.0f} MiB "
                f"({self.used / MIB:,.1f} MiB is in use). Run a backward (it frees abandoned graphs), "
                "start an experiment over, or use smaller sizes."
            )
        parent = self.parent
        if parent is not None:
            with parent._lock:
                if parent.used + nbytes > parent.limit:
                    raise MemoryBudgetError(
                        f"The server's memory for experiments is in use by other sessions right now "
                        f"({parent.used / MIB:,.0f} of {parent.limit / MIB:,.0f} MiB). Your work is kept: try "
                        "again in a minute, or use smaller sizes."
                    )
                parent.used += nbytes
        self.used += nbytes

    def give_back(self, nbytes: int) -> None:
        self.used -= nbytes
        parent = self.parent
        if parent is not None:
            with parent._lock:
                parent.used -= nbytes


_BUDGET: ContextVar[MemoryBudget | None] = ContextVar("autodiff_memory_budget", default=None)


@contextmanager
def memory_budget(budget: MemoryBudget) -> Iterator[MemoryBudget]:
    """Devices created inside this block count their buffers against `budget`, for their whole life: an
    allocation past its limit raises `MemoryBudgetError` before it is counted."""
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


class MemoryPool:
    """The live-buffer counter of one device (shared by its autodiff device). Each `Buffer` counts itself
    in when it is made and out when its last reference goes (`backends/base.py`), and tells the observer."""

    __slots__ = ("bytes_in_use", "allocations", "peak_bytes", "budget", "watched", "_observer")

    def __init__(self) -> None:
        self.bytes_in_use = 0
        self.allocations = 0
        self.peak_bytes = 0
        self.budget = _BUDGET.get()
        self.observer = NO_OBSERVER  # a memory history while the device records one

    @property
    def observer(self) -> Observer:
        return self._observer

    @observer.setter
    def observer(self, observer: Observer) -> None:
        self._observer = observer
        # read by every buffer made and freed: a flag costs less than a call to hooks that do nothing
        self.watched = observer is not NO_OBSERVER

    def reset_peak(self) -> None:
        self.peak_bytes = self.bytes_in_use

    def usage(self) -> MemoryUsage:
        return MemoryUsage(self.bytes_in_use, self.allocations)
