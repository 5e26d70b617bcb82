"""What a recorded backward looks like after its first k events: derived from the trace alone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autodiff.trace import (
    BackwardFinished,
    BackwardRecorder,
    Event,
    GradientConsumed,
    GradientRegistered,
    Recomputed,
    SavedStateFreed,
    StepStarted,
    SweepFreed,
    TapeBuilt,
)
from course.naming import node_name

from .format import format_bytes, format_values


@dataclass(frozen=True)
class Flow:
    source: int
    target: int
    value: np.ndarray
    accumulated: bool


@dataclass(frozen=True)
class ReplayState:
    index: int
    event: Event
    current: StepStarted | None  # the step running at this event (None between steps)
    upstream: np.ndarray | None  # the gradient the current step consumed
    flows: tuple[Flow, ...]  # what the current step has sent to its parents so far
    consumed: frozenset[int]  # steps that ran and freed their saved state
    swept: frozenset[int]  # steps freed by the sweep without running
    container: dict[int, np.ndarray]  # the Gradients entries after this event


def replay_state(recorder: BackwardRecorder, index: int) -> ReplayState:
    events = recorder.events
    index = max(0, min(index, len(events) - 1))
    current: StepStarted | None = None
    started = -1  # where the current step started
    flows: list[Flow] = []
    consumed: set[int] = set()
    swept: set[int] = set()
    for k, event in enumerate(events[: index + 1]):
        if isinstance(event, StepStarted):
            current, started, flows = event, k, []
        elif isinstance(event, GradientRegistered):
            if current is not None and event.source == current.node_id:
                flows.append(Flow(event.source, event.node_id, event.value, event.accumulated))
        elif isinstance(event, SavedStateFreed):
            consumed.add(event.node_id)
        elif isinstance(event, SweepFreed | BackwardFinished):
            current, flows = None, []
            if isinstance(event, SweepFreed):
                swept.update(event.node_ids)
    # the gradient the current step consumed: its node's entry just before the step started
    upstream = None if current is None else recorder.container_after(started - 1).get(current.node_id)
    return ReplayState(
        index,
        events[index],
        current,
        upstream,
        tuple(flows),
        frozenset(consumed),
        frozenset(swept),
        recorder.container_after(index),
    )


def describe(event: Event, names: dict[int, str]) -> str:
    """One plain sentence per event, for the player's caption."""
    n = lambda i: node_name(i, names)  # noqa: E731
    if isinstance(event, TapeBuilt):
        sizes = ", ".join(f"order {k}: {len(b)}" for k, b in enumerate(event.buckets) if b)
        return (
            f"The tape is built from the steps reachable from {n(event.root)} and bucketed by order ({sizes}). "
            "Buckets run from the highest order down."
        )
    if isinstance(event, StepStarted):
        return f"Step {n(event.node_id)} ({event.op}, order {event.order}) starts."
    if isinstance(event, Recomputed):
        return (
            f"Checkpointing: {n(event.node_id)} ({event.op}) kept a recipe, not its output; it is recomputed "
            "now from the nearest kept ancestors."
        )
    if isinstance(event, GradientRegistered):
        if event.source is None:
            return f"Backward seeds {n(event.node_id)} with ones of its shape: {format_values(event.value)}."
        verb = "added to the existing entry (accumulation)" if event.accumulated else "registered"
        return f"{n(event.source)} sends {format_values(event.value)} to {n(event.node_id)}: {verb}."
    if isinstance(event, GradientConsumed):
        if event.kept:
            return f"{n(event.node_id)} is a Grad leaf: its gradient is consumed but kept in the container."
        return f"{n(event.node_id)} is GradInBackward: its step consumes its gradient and removes it."
    if isinstance(event, SavedStateFreed):
        released = format_bytes(event.bytes_released)
        return (
            f"Step {n(event.node_id)} is done and consumed: its saved state ({format_bytes(event.saved_bytes)}) "
            f"is dropped; the device gets back {released}."
        )
    if isinstance(event, SweepFreed):
        if not event.node_ids:
            return "The sweep finds no abandoned step to free."
        return (
            f"The sweep frees {len(event.node_ids)} step(s) no live tensor depends on, "
            f"returning {format_bytes(event.bytes_released)}."
        )
    return f"Backward finished. The device holds {event.memory}; gradients left for: " + (
        ", ".join(n(i) for i in event.gradient_ids) or "nothing"
    )
