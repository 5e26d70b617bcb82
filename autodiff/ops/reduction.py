"""Reductions, as in Burn: `sum` and `mean` give shape [1], the `*_dim` ones keep the dim with size 1. They are
compute-bound: kept, not recomputed, under balanced checkpointing."""

from __future__ import annotations

import math

from ..graph import Op, Rule, per_constant
from .base import unary


@per_constant
def sum_all(shape: tuple[int, ...]) -> Op:
    return Op("sum", lambda x: x.sum(), (Rule("ones(shape) * grad", lambda g, s: g.expand(shape)),), compute_bound=True)


@per_constant
def mean_all(shape: tuple[int, ...]) -> Op:
    n = math.prod(shape)
    rule = Rule(f"ones(shape) * grad / {n}", lambda g, s: (g / n).expand(shape))
    return Op("mean", lambda x: x.sum() / n, (rule,), compute_bound=True)


@per_constant
def sum_dim(shape: tuple[int, ...], dim: int) -> Op:
    rule = Rule("grad expanded along dim", lambda g, s: g.expand(shape))
    return Op(f"sum_dim({dim})", lambda x: x.sum_dim(dim), (rule,), compute_bound=True)


@per_constant
def mean_dim(shape: tuple[int, ...], dim: int) -> Op:
    n = shape[dim]
    rule = Rule(f"grad / {n} expanded along dim", lambda g, s: (g / n).expand(shape))
    return Op(f"mean_dim({dim})", lambda x: x.sum_dim(dim) / n, (rule,), compute_bound=True)


@per_constant
def extreme_dim(dim: int, largest: bool) -> Op:
    which = "max" if largest else "min"
    op = unary(
        f"{which}_dim({dim})",
        lambda x: x.extreme_dim(dim, largest),
        f"grad at the first arg{which} along dim",
        lambda g, s: g * s["x"].first_extreme_mask(dim, largest),
    )
    op.compute_bound = True
    return op


@per_constant
def prod_dim(dim: int) -> Op:
    op = unary(
        f"prod_dim({dim})",
        lambda x: x.prod_dim(dim),
        "grad * product of the others along dim",
        lambda g, s: g * s["x"].prod_of_others(dim),
    )
    op.compute_bound = True
    return op


@per_constant
def cumsum(dim: int) -> Op:
    rule = Rule("cumsum of grad from the end", lambda g, s: g.reverse_cumsum(dim))
    return Op(f"cumsum({dim})", lambda x: x.cumsum(dim), (rule,), compute_bound=True)
