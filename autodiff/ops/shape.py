"""Shape ops: views where the backend can (no new allocation), their gradients put back in the input's shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph import Op, Rule, per_constant

if TYPE_CHECKING:
    from ..backends.base import Buffer


@per_constant
def reshape(original: tuple[int, ...], target: tuple[int, ...], name: str) -> Op:
    return Op(name, lambda x: x.reshape(target), (Rule("grad reshaped back", lambda g, s: g.reshape(original)),))


@per_constant
def swap_dims(d1: int, d2: int) -> Op:
    rule = Rule("grad with dims swapped back", lambda g, s: g.swap_dims(d1, d2))
    return Op(f"swap_dims({d1}, {d2})", lambda x: x.swap_dims(d1, d2), (rule,))


@per_constant
def permute(axes: tuple[int, ...]) -> Op:
    inverse = tuple(axes.index(d) for d in range(len(axes)))
    rule = Rule("grad permuted back", lambda g, s: g.permute(inverse))
    return Op(f"permute({list(axes)})", lambda x: x.permute(axes), (rule,))


@per_constant
def expand(original: tuple[int, ...], target: tuple[int, ...]) -> Op:
    rule = Rule("grad summed over the expanded dims", lambda g, s: g.sum_to(original))
    return Op(f"expand({list(target)})", lambda x: x.expand(target), (rule,))


@per_constant
def repeat_dim(dim: int, times: int) -> Op:
    rule = Rule(f"grad summed over the {times} copies", lambda g, s: g.sum_tiles(dim, times))
    return Op(f"repeat_dim({dim}, {times})", lambda x: x.tile_dim(dim, times), (rule,))


@per_constant
def flip(axes: tuple[int, ...]) -> Op:
    return Op(f"flip({list(axes)})", lambda x: x.flip(axes), (Rule("grad flipped back", lambda g, s: g.flip(axes)),))


@per_constant
def cat(sizes: tuple[int, ...], dim: int, rank: int) -> Op:
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    parts = [dim_index(rank, dim, slice(a, a + n)) for a, n in zip(starts, sizes, strict=True)]

    def forward(first: Buffer, *rest: Buffer) -> Buffer:
        return first.concatenate(rest, dim)

    rules = tuple(_part_rule(k, part) for k, part in enumerate(parts))
    return Op(f"cat(dim={dim})", forward, rules, tuple(f"x{k}" for k in range(len(sizes))))


def dim_index(rank: int, dim: int, part: slice) -> tuple[slice, ...]:
    return tuple(part if d == dim else slice(None) for d in range(rank))


def _part_rule(k: int, part: tuple[slice, ...]) -> Rule:
    return Rule(f"grad's part {k}", lambda g, s: g.index(part))
