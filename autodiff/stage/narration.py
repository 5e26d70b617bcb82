"""One plain sentence per event of a recorded backward, in the lesson's words: the caption under the player and
the live region a screen reader speaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autodiff import NodeSnapshot
from autodiff.printing import format_array
from autodiff.stage.naming import graph_names, name_or_id
from autodiff.trace import (
    BackwardFinished,
    Event,
    GradientConsumed,
    GradientRegistered,
    Recomputed,
    SavedStateFreed,
    StepStarted,
    SweepFreed,
    TapeBuilt,
)

from .format import Exact, compact, format_bytes

MAX_LISTED = 6  # a longer list of names or orders is summarised


def short_names(nodes: Iterable[NodeSnapshot], names: Mapping[int, str]) -> dict[int, str]:
    """What a sentence calls each node: its variable, else its expression (`x·3`)."""
    return graph_names(nodes, names).called


def _listed(items: list[str]) -> str:
    if len(items) <= MAX_LISTED:
        return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1] if items else "nothing"
    return f"{', '.join(items[:3])} and {len(items) - 3} more"


def _steps(count: int) -> str:
    return f"{count} step" + ("" if count == 1 else "s")


def describe(event: Event, called: dict[int, str], exact: Exact = format_array) -> str:
    """The sentence for `event`; `called` names nodes (see `short_names`), `exact` writes a small value's numbers."""
    n = lambda i: name_or_id(called, i)  # noqa: E731
    if isinstance(event, TapeBuilt):
        orders = [k for k, bucket in enumerate(event.buckets) if bucket]
        total = sum(len(b) for b in event.buckets)
        if len(orders) <= MAX_LISTED:
            sizes = "; ".join(f"order {k}: {_steps(len(event.buckets[k]))}" for k in reversed(orders))
        else:
            sizes = f"orders {orders[-1]} down to {orders[0]}"
        return (
            f"backward() builds the tape: the {_steps(total)} reachable from {n(event.root)}, bucketed by order "
            f"({sizes}). Buckets run from the highest order down."
        )
    if isinstance(event, StepStarted):
        return f"The step of {n(event.node_id)} runs ({event.op}, order {event.order})."
    if isinstance(event, Recomputed):
        return (
            f"Checkpointing: {n(event.node_id)} kept a recipe, not its output, so it is recomputed now from its "
            "kept ancestors."
        )
    if isinstance(event, GradientRegistered):
        value = compact(event.value, exact)
        if event.source is None:
            return f"backward() seeds {n(event.node_id)} with ones of its shape: {value}."
        if event.accumulated:
            return (
                f"{n(event.source)} sends {value} to {n(event.node_id)}: added to its entry, which is now "
                f"{compact(event.total, exact)}."
            )
        return f"{n(event.source)} sends {value} to {n(event.node_id)}: a new entry in the container."
    if isinstance(event, GradientConsumed):
        if event.kept:
            return (
                f"{n(event.node_id)} is a leaf that asked for its gradient (Burn's Grad): its step takes its "
                "gradient, and the container keeps it."
            )
        return f"The step of {n(event.node_id)} consumes its gradient: the entry leaves the container."
    if isinstance(event, SavedStateFreed):
        if not event.saved_bytes:
            return f"The step of {n(event.node_id)} is done: consumed, it can never run again."
        if event.bytes_released:
            return (
                f"The step of {n(event.node_id)} is done: the {format_bytes(event.saved_bytes)} it saved are "
                f"dropped, and the device gets back {format_bytes(event.bytes_released)}."
            )
        return (
            f"The step of {n(event.node_id)} is done: it drops the {format_bytes(event.saved_bytes)} it saved, "
            "but a live tensor still uses them, so the device keeps them."
        )
    if isinstance(event, SweepFreed):
        if not event.node_ids:
            return "The cleanup finds no abandoned step to free."
        given = f", and the device gets back {format_bytes(event.bytes_released)}" if event.bytes_released else ""
        return f"The cleanup frees {_steps(len(event.node_ids))} that no live tensor needs{given}."
    assert isinstance(event, BackwardFinished)
    kept = [n(i) for i in event.gradient_ids]
    held = event.memory
    return (
        f"Backward is finished. The container holds the gradients of {_listed(kept)}. The device holds "
        f"{format_bytes(held.bytes_in_use)} in {held.allocations} buffer{'' if held.allocations == 1 else 's'}."
        if kept
        else f"Backward is finished. The container is empty. The device holds {format_bytes(held.bytes_in_use)}."
    )
