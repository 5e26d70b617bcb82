"""Exact, deterministic accounting of the buffers a device holds.

What counts as an allocation: every array a backend operation creates (an op's output, a
gradient, a sum of two gradients, the ones that seed a backward). Views share the buffer of the
array they look at and count nothing: `reshape` (when no copy is needed), `swap_dims`,
`transpose`, `detach()`, `without_autodiff()`, and reading a gradient out of `Gradients`.
A buffer is freed the moment the last reference to it goes away (CPython's reference counting
makes that moment exact), so `in_use` is always the sum of the bytes of the live buffers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import MemoryBudgetError

if TYPE_CHECKING:
    from .memory_history import MemoryHistory

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
    """A cap on the bytes held by every pool created under it (an app gives each visitor one)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


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
    """The live-buffer counter of one device (shared by its autodiff device)."""

    __slots__ = ("bytes_in_use", "allocations", "peak_bytes", "budget", "history")

    def __init__(self) -> None:
        self.bytes_in_use = 0
        self.allocations = 0
        self.peak_bytes = 0
        self.budget = _BUDGET.get()
        self.history: MemoryHistory | None = None  # set while the device records its memory history

    def allocate(self, nbytes: int, owner: object = None) -> None:
        """`owner` (the buffer) is only told to a memory history, which tells buffers apart by it."""
        budget = self.budget
        if budget is not None:
            if budget.used + nbytes > budget.limit:
                raise MemoryBudgetError(
                    f"This would take the memory of your session past {budget.limit / MIB:,.0f} MiB "
                    f"({budget.used / MIB:,.1f} MiB is in use). Run a backward (it frees abandoned graphs), "
                    "start an experiment over, or use smaller sizes."
                )
            budget.used += nbytes
        self.bytes_in_use += nbytes
        self.allocations += 1
        if self.bytes_in_use > self.peak_bytes:
            self.peak_bytes = self.bytes_in_use
        if self.history is not None:
            self.history.allocated(owner, nbytes)

    def release(self, nbytes: int, owner: object = None) -> None:
        if self.budget is not None:
            self.budget.used -= nbytes
        self.bytes_in_use -= nbytes
        self.allocations -= 1
        if self.history is not None:
            self.history.released(owner, nbytes)

    def reset_peak(self) -> None:
        self.peak_bytes = self.bytes_in_use

    def usage(self) -> MemoryUsage:
        return MemoryUsage(self.bytes_in_use, self.allocations)
