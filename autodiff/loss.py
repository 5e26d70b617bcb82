"""Loss functions, as in `burn::tensor::loss`: built from ops that each have their own backward."""

from __future__ import annotations

from .activation import log_softmax
from .errors import ShapeMismatchError
from .tensor import Tensor


def cross_entropy_with_logits(logits: Tensor, target_probs: Tensor) -> Tensor:
    """The mean over rows of -sum(target_probs * log_softmax(logits)) along the last dim, shape [1] (Burn's
    `cross_entropy_with_logits`: the targets are probabilities, one row per example)."""
    if logits.shape != target_probs.shape:
        raise ShapeMismatchError(
            f"The logits have shape {logits.dims()} and the targets {target_probs.dims()}: they must match "
            "(one probability per class)."
        )
    return -(log_softmax(logits, -1) * target_probs).sum_dim(-1).mean()
