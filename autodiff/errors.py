"""Typed errors of the engine.

Every message is a sentence a student can act on. Each error is raised *before* the
engine changes any state, so the device stays usable after it.
"""

from __future__ import annotations


class AutodiffError(Exception):
    """Base class of every error the engine raises on purpose."""


class ShapeMismatchError(AutodiffError, ValueError):
    """Shapes that cannot be combined (broadcasting, matmul, reshape, dims)."""


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
