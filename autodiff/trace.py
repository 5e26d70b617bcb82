"""Typed events of one backward pass, so a UI can replay it step by step.

Backward tells an `Observer` (`observer.py`) what happens, hook by hook; the default one does nothing, so a
backward nobody watches pays a call per hook and nothing else. Pass a `BackwardRecorder` to
`backward(recorder=...)` to keep the events. Values are copied to numpy when recorded, so the trace
stays valid after the engine frees or reuses its buffers. Each event declares its `kind`, the name a reader
matches on (the stage's contract in autodiff/stage/events.py): renaming a class is then a visible change, not a
silent one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from .graph import NodeId
from .memory import MemoryUsage
from .observer import Observer

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .graph import Step
    from .memory import MemoryPool


@dataclass(frozen=True)
class TensorPreview:
    """A large recorded value kept as its shape and first values only (for example, a trace that crossed a
    process boundary). Readers show it like an array: the values they have, and how many there were."""

    shape: tuple[int, ...]
    first: np.ndarray

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@dataclass(frozen=True, eq=False)
class TapeBuilt:
    kind: ClassVar[Literal["TapeBuilt"]] = "TapeBuilt"
    root: NodeId
    buckets: tuple[tuple[NodeId, ...], ...]  # buckets[order]: the steps of that order, in tape order


@dataclass(frozen=True, eq=False)
class StepStarted:
    kind: ClassVar[Literal["StepStarted"]] = "StepStarted"
    node_id: NodeId
    op: str
    order: int
    parents: tuple[NodeId, ...]
    rules: tuple[str, ...]  # the backward rule sent to each parent, aligned with parents


@dataclass(frozen=True, eq=False)
class GradientRegistered:
    kind: ClassVar[Literal["GradientRegistered"]] = "GradientRegistered"
    node_id: NodeId
    source: NodeId | None  # the step that sent it; None for the ones that seed the root
    value: np.ndarray | TensorPreview  # what was sent
    total: np.ndarray | TensorPreview  # the entry after registration (value plus what was there)
    accumulated: bool  # True when it was added to an existing entry


@dataclass(frozen=True, eq=False)
class GradientConsumed:
    kind: ClassVar[Literal["GradientConsumed"]] = "GradientConsumed"
    node_id: NodeId
    kept: bool  # True for a `Grad` leaf (entry stays), False for `GradInBackward` (removed)


@dataclass(frozen=True, eq=False)
class Recomputed:
    kind: ClassVar[Literal["Recomputed"]] = "Recomputed"
    node_id: NodeId  # balanced checkpointing: this node's output was recomputed from saved ancestors
    op: str


@dataclass(frozen=True, eq=False)
class SavedStateFreed:
    kind: ClassVar[Literal["SavedStateFreed"]] = "SavedStateFreed"
    node_id: NodeId
    saved_bytes: int  # what the step held
    bytes_released: int  # what the device got back (less when a live tensor shares the buffer)
    memory_after: MemoryUsage  # the device after this step: the memory curve within a backward


@dataclass(frozen=True, eq=False)
class SweepFreed:
    kind: ClassVar[Literal["SweepFreed"]] = "SweepFreed"
    node_ids: tuple[NodeId, ...]  # steps freed without running: abandoned or unreachable
    bytes_released: int


@dataclass(frozen=True, eq=False)
class BackwardFinished:
    kind: ClassVar[Literal["BackwardFinished"]] = "BackwardFinished"
    memory: MemoryUsage
    gradient_ids: tuple[NodeId, ...]
    peak_bytes: int = 0  # the most the device held during this backward


Event = (
    TapeBuilt
    | StepStarted
    | Recomputed
    | GradientRegistered
    | GradientConsumed
    | SavedStateFreed
    | SweepFreed
    | BackwardFinished
)


class BackwardRecorder(Observer):
    """Collects the events of one backward, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.bytes_recorded = 0  # bytes of the value copies the events hold (not counted by the device)
        self._saved_bytes = 0  # what the running step holds, measured when it starts

    def record(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, GradientRegistered):
            self.bytes_recorded += sum(v.nbytes for v in (event.value, event.total) if isinstance(v, np.ndarray))

    # -- the hooks -----------------------------------------------------------------------------------
    def tape_built(self, root: NodeId, tape: list[list[Step]]) -> None:
        # ids as a person reads them (the server counts with plain ints)
        self.record(TapeBuilt(NodeId(root), tuple(tuple(NodeId(s.node.id) for s in bucket) for bucket in tape)))

    def step_started(self, step: Step) -> None:
        self._saved_bytes = step.saved_bytes
        parents = tuple(NodeId(p.id) for p in step.node.parents)
        rules = tuple(r.text for r in step.rules)
        self.record(StepStarted(NodeId(step.node.id), step.op, step.node.order, parents, rules))

    def recomputed(self, node_id: NodeId, op: str) -> None:
        self.record(Recomputed(NodeId(node_id), op))

    def gradient_registered(self, node_id: NodeId, source: NodeId | None, grad: Buffer, total: Buffer) -> None:
        accumulated = total is not grad
        sender = None if source is None else NodeId(source)
        self.record(GradientRegistered(NodeId(node_id), sender, grad.to_numpy(), total.to_numpy(), accumulated))

    def gradient_consumed(self, node_id: NodeId, kept: bool) -> None:
        self.record(GradientConsumed(NodeId(node_id), kept))

    def saved_state_freed(self, step: Step, bytes_before: int, pool: MemoryPool) -> None:
        released = bytes_before - pool.bytes_in_use
        self.record(SavedStateFreed(NodeId(step.node.id), self._saved_bytes, released, pool.usage()))

    def swept(self, node_ids: tuple[NodeId, ...], bytes_released: int) -> None:
        self.record(SweepFreed(tuple(map(NodeId, node_ids)), bytes_released))

    def backward_finished(self, pool: MemoryPool, gradient_ids: tuple[NodeId, ...]) -> None:
        self.record(BackwardFinished(pool.usage(), gradient_ids, pool.peak_bytes))

    def container_after(self, index: int) -> dict[NodeId, np.ndarray | TensorPreview]:
        """The `Gradients` entries after events[0..index] (inclusive) have happened."""
        container: dict[NodeId, np.ndarray | TensorPreview] = {}
        for event in self.events[: index + 1]:
            if isinstance(event, GradientRegistered):
                container[event.node_id] = event.total
            elif isinstance(event, GradientConsumed) and not event.kept:
                container.pop(event.node_id, None)
        return container

    def to_json(self, max_values: int | None = None) -> str:
        """The events as JSON. With `max_values`, a larger tensor is written as its shape and its
        first `max_values` values (so exporting a big program's trace stays small)."""
        return json.dumps([_event_to_dict(e, max_values) for e in self.events], indent=1)

    def export_json(self, total_values: int = 2_000_000) -> str:
        """The events as JSON for a download, at most about `total_values` numbers in all: each tensor
        gets an equal share (at least 8 values), so even a long trace downloads small."""
        tensors = 2 * sum(isinstance(e, GradientRegistered) for e in self.events) + 1
        return self.to_json(max_values=max(8, min(4096, total_values // tensors)))


def _event_to_dict(event: Event, max_values: int | None) -> dict[str, object]:
    out: dict[str, object] = {"event": event.kind}
    for field in fields(event):
        out[field.name] = _plain(getattr(event, field.name), max_values)
    return out


def _plain(value: object, max_values: int | None = None) -> object:
    if isinstance(value, np.ndarray):
        if max_values is not None and value.size > max_values:
            return {"shape": list(value.shape), "first_values": value.ravel()[:max_values].tolist()}
        return value.tolist()
    if isinstance(value, TensorPreview):
        return {"shape": list(value.shape), "first_values": value.first[:max_values].tolist()}
    if isinstance(value, MemoryUsage):
        return {"bytes_in_use": value.bytes_in_use, "allocations": value.allocations}
    if isinstance(value, tuple):
        return [_plain(v, max_values) for v in value]
    if isinstance(value, NodeId):
        return int(value)
    return value
