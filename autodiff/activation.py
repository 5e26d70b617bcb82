"""Activation functions, as in `burn::tensor::activation`: each an `Op` with its forward and backward.

Burn builds softmax and log_softmax from other ops; here each is one op with its closed-form backward, so a
graph shows one node and backward recomputes no exponential. They reduce along a dim, so they are kept (not
recomputed) under balanced checkpointing, as Burn's reductions are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .graph import Op, Rule, per_constant
from .ops import run_op
from .tensor import Tensor

if TYPE_CHECKING:
    from .backends.base import Buffer

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@per_constant
def _softmax(dim: int) -> Op:
    return Op(
        f"softmax(dim={dim})",
        lambda x: x.softmax(dim),
        (Rule("y * (grad - sum(grad * y, dim))", lambda g, s: s["y"] * (g - (g * s["y"]).sum_dim(dim)), ("y",)),),
        compute_bound=True,
    )


def softmax(tensor: Tensor, dim: int) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed from x - max(x) so that no exponential overflows."""
    return run_op(_softmax(tensor._dim(dim)), (tensor,))


@per_constant
def _log_softmax(dim: int) -> Op:
    return Op(
        f"log_softmax(dim={dim})",
        lambda x: x.log_softmax(dim),
        (Rule("grad - exp(y) * sum(grad, dim)", lambda g, s: g - s["y"].exp() * g.sum_dim(dim), ("y",)),),
        compute_bound=True,
    )


def log_softmax(tensor: Tensor, dim: int) -> Tensor:
    """x - log(sum(exp(x))) along `dim`, stable for large x."""
    return run_op(_log_softmax(tensor._dim(dim)), (tensor,))


def _gelu_forward(x: Buffer) -> Buffer:
    return x * ((x / _SQRT_2).transcendental("erf") + 1.0) * 0.5


def _gelu_rule(g: Buffer, x: Buffer) -> Buffer:
    cdf = ((x / _SQRT_2).transcendental("erf") + 1.0) * 0.5
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


_GELU = Op("gelu", _gelu_forward, (Rule("grad * (Φ(x) + x φ(x))", lambda g, s: _gelu_rule(g, s["x"]), ("x",)),))


def gelu(tensor: Tensor) -> Tensor:
    """x Φ(x), Φ the standard normal's distribution function (the exact GELU, with erf, as Burn's)."""
    return run_op(_GELU, (tensor,))


_LOG_SIGMOID = Op(
    "log_sigmoid",
    lambda x: x.log_sigmoid(),
    (Rule("grad * σ(-x)", lambda g, s: g * (-s["x"]).sigmoid(), ("x",)),),
)


def log_sigmoid(tensor: Tensor) -> Tensor:
    """log(σ(x)), without overflow for large |x|."""
    return run_op(_LOG_SIGMOID, (tensor,))


def relu(tensor: Tensor) -> Tensor:
    return tensor.relu()


def sigmoid(tensor: Tensor) -> Tensor:
    return tensor.sigmoid()
