"""Burn's indexing ops. `slice`, `slice_assign` and Python's indexing (`index_of`) are built once per ranges; the
others are built per call, since their rules hold that call's indices or mask."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph import Op, Rule, per_constant

if TYPE_CHECKING:
    from ..backends.base import Buffer


@per_constant
def slice_of(shape: tuple[int, ...], ranges: tuple[tuple[int, int], ...]) -> Op:
    index = tuple(slice(a, b) for a, b in ranges)
    rule = Rule("grad placed in zeros of the input's shape", lambda g, s: g.placed(shape, index))
    return Op(f"slice({ranges_text(ranges)})", lambda x: x.index(index), (rule,))


@per_constant
def index_of(shape: tuple[int, ...], ranges: tuple[tuple[int, int], ...], kept: tuple[int, ...], text: str) -> Op:
    """Python's `x[text]` as one node: Burn's `slice` to `ranges` (one per dim), then a reshape to `kept` (the dims
    an integer removed; [1] when none is left). Its rule reshapes the gradient back and places it in zeros of
    `shape`, as the two ops' rules would one after the other."""
    index = tuple(slice(a, b) for a, b in ranges)
    part = tuple(b - a for a, b in ranges)
    rule = Rule("grad placed in zeros of the input's shape", lambda g, s: g.reshape(part).placed(shape, index))
    return Op(f"index[{text}]", lambda x: x.index(index).reshape(kept), (rule,))


@per_constant
def slice_assign(ranges: tuple[tuple[int, int], ...]) -> Op:
    index = tuple(slice(a, b) for a, b in ranges)
    return Op(
        f"slice_assign({ranges_text(ranges)})",
        lambda x, v: x.assigned(index, v),
        (
            Rule("grad, zero in the assigned part", lambda g, s: g.assigned(index, 0.0)),
            Rule("grad in the assigned part", lambda g, s: g.index(index)),
        ),
        ("x", "values"),
    )


def select(dim: int, index: Buffer, shape: tuple[int, ...]) -> Op:
    at = (slice(None),) * dim + (index.array,)
    rule = Rule("grad added at the indices", lambda g, s: g.zeros(shape).added_at(at, g))
    return Op(f"select(dim={dim})", lambda x: x.take(dim, index), (rule,))


def gather(dim: int, index: Buffer, shape: tuple[int, ...], at: tuple) -> Op:
    rule = Rule("grad added at the indices", lambda g, s: g.zeros(shape).added_at(at, g))
    return Op(f"gather(dim={dim})", lambda x: x.take_along(dim, index), (rule,))


def scatter(dim: int, index: Buffer, at: tuple) -> Op:
    return Op(
        f"scatter(dim={dim})",
        lambda a, b: a.added_at(at, b),
        (Rule("grad", lambda g, s: g), Rule("grad at the indices", lambda g, s: g.take_along(dim, index))),
        ("x", "values"),
    )


def mask_fill(mask: Buffer, value: float) -> Op:
    rule = Rule("grad, zero where the mask is true", lambda g, s: g.where(mask, 0.0))
    return Op(f"mask_fill({value:g})", lambda x: x.where(mask, value), (rule,))


def mask_where(mask: Buffer) -> Op:
    return Op(
        "mask_where",
        lambda a, b: a.where(mask, b),
        (
            Rule("grad where the mask is false", lambda g, s: g.where(mask, 0.0)),
            Rule("grad where the mask is true", lambda g, s: g.only_where(mask)),
        ),
        ("x", "source"),
    )


def ranges_text(ranges: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"{a}..{b}" for a, b in ranges)
