"""Typed errors of the engine.

Every message is a sentence a student can act on. Each error is raised *before* the
engine changes any state, so the device stays usable after it.
"""

from __future__ import annotations

from typing import Any

EXCERPT_CHARS = 80  # how much of a value a message may quote: user data is never repeated whole


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """`repr(value)` cut to about `limit` characters, for quoting user data in a message. Nested lists are
    cut while they are written, so quoting a huge value costs no more than quoting a short one."""
    text = _short_repr(value, limit + 1)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short_repr(value: Any, limit: int, depth: int = 0) -> str:
    if isinstance(value, list | tuple):
        opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
        if depth > 16:  # a list nested a thousand deep is quoted without recursing that far
            return opening + "…" + closing
        parts, used = [], 1
        for item in value:
            if used > limit:
                break
            part = _short_repr(item, limit - used, depth + 1)
            parts.append(part)
            used += len(part) + 2
        return opening + ", ".join(parts) + closing
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit])
    return text[: limit + 1]


class AutodiffError(Exception):
    """Base class of every error the engine raises on purpose."""


class ShapeMismatchError(AutodiffError, ValueError):
    """Shapes that cannot be combined (broadcasting, matmul, reshape, dims)."""


class IndexOutOfBoundsError(AutodiffError, IndexError):
    """An index or a range outside a tensor's dimension (slice, select, gather, scatter)."""


class DTypeError(AutodiffError, TypeError):
    """Data that is not a float, or tensors of two different float types."""


class NonFiniteError(AutodiffError, ValueError):
    """NaN or infinity given as input data."""


class DeviceMismatchError(AutodiffError):
    """Tensors from two different devices used in one operation."""


class UntrackedBackwardError(AutodiffError):
    """backward() called on a tensor that is not part of any tracked graph."""


class NonLeafRequireGradError(AutodiffError):
    """require_grad() called on the output of an operation."""


class UnsupportedOperationError(AutodiffError, TypeError):
    """An operand or argument the engine does not support."""


class BackendUnavailableError(AutodiffError):
    """A backend that cannot be used on this machine."""


class MemoryBudgetError(AutodiffError, MemoryError):
    """An allocation would take a memory budget past its limit (see `autodiff.memory.memory_budget`)."""


class TapeConsumedError(AutodiffError, RuntimeError):
    """backward() would pass through a step that an earlier backward already consumed."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        super().__init__(
            f"Cannot run backward: graph tape has already been consumed at NodeId({int(node_id)}). "
            "Burn does not support retain_graph. Combine losses before backward or recompute the "
            "forward pass. Use detach() only to intentionally sever gradients through the previous "
            "computation."
        )
