"""The stage's events: one TypedDict per kind of trace event, the contract with the browser's stage.

Each is tagged by `kind`, the trace event's declared `kind` (autodiff/trace.py), and mirrored in
js/model/contract.mjs by a JSDoc typedef of the same name; tests/app/test_stage_contract.py checks both sides and the
trace's classes agree.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

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

from .format import ArrayTexts, TensorNumbers, brief, format_shape, format_values
from .narration import describe


class TapeBuiltEvent(TypedDict):
    kind: Literal["TapeBuilt"]
    text: str  # the sentence the caption and the live region say
    nodes: list[int]  # the steps on the tape


class StepStartedEvent(TypedDict):
    kind: Literal["StepStarted"]
    text: str
    node: int
    op: str
    order: int
    parents: list[int]
    rules: list[str]


class RecomputedEvent(TypedDict):
    kind: Literal["Recomputed"]
    text: str
    node: int


class GradientRegisteredEvent(TypedDict):
    kind: Literal["GradientRegistered"]
    text: str
    node: int
    source: int | None  # the step that sent it
    edge: str | None  # the element of the edge it travels along
    value: str  # what was sent, as the picture says it (`brief`)
    value_range: TensorNumbers | None  # its numbers for a folded view's summary (format.tensor_range)
    total: str  # the entry afterwards, as the picture says it
    total_range: TensorNumbers | None
    total_full: str  # the same, as the container table shows it
    shape: str
    accumulated: bool
    numbers: list[float] | None  # what was sent, every number, when a student can check it


class GradientConsumedEvent(TypedDict):
    kind: Literal["GradientConsumed"]
    text: str
    node: int
    kept: bool


class SavedStateFreedEvent(TypedDict):
    kind: Literal["SavedStateFreed"]
    text: str
    node: int


class SweepFreedEvent(TypedDict):
    kind: Literal["SweepFreed"]
    text: str
    nodes: list[int]  # the steps freed


class BackwardFinishedEvent(TypedDict):
    kind: Literal["BackwardFinished"]
    text: str


StageEvent = (
    TapeBuiltEvent
    | StepStartedEvent
    | RecomputedEvent
    | GradientRegisteredEvent
    | GradientConsumedEvent
    | SavedStateFreedEvent
    | SweepFreedEvent
    | BackwardFinishedEvent
)


def stage_event(
    event: Event,
    called: dict[int, str],
    edge: str | None = None,
    texts: ArrayTexts | None = None,
) -> StageEvent:
    """The event as the stage reads it; a GradientRegistered travels along `edge`, which the caller finds in the
    picture. `texts` writes a value's numbers and sends them, each different array once for a whole payload (a new
    one for this event alone when None)."""
    exact = texts = texts if texts is not None else ArrayTexts()
    text = describe(event, called, exact)
    if isinstance(event, TapeBuilt):
        nodes = [int(n) for bucket in event.buckets for n in bucket]
        return TapeBuiltEvent(kind=event.kind, text=text, nodes=nodes)
    if isinstance(event, StepStarted):
        return StepStartedEvent(
            kind=event.kind,
            text=text,
            node=int(event.node_id),
            op=event.op,
            order=event.order,
            parents=[int(p) for p in event.parents],
            rules=list(event.rules),
        )
    if isinstance(event, GradientRegistered):
        value, value_range = brief(event.value, exact), texts.numbers(event.value)
        total, total_range = value, value_range  # a new entry holds what was sent: written once (4 in 5 of them)
        if event.accumulated:
            total, total_range = brief(event.total, exact), texts.numbers(event.total)
        # a dict display: the most common event, and a TypedDict called with keywords costs more
        return {
            "kind": "GradientRegistered",
            "text": text,
            "node": int(event.node_id),
            "source": None if event.source is None else int(event.source),
            "edge": edge,
            "value": value,
            "value_range": value_range,
            "total": total,
            "total_range": total_range,
            "total_full": format_values(event.total, exact),
            "shape": format_shape(_shape(event.total)),
            "accumulated": event.accumulated,
            "numbers": texts.checkable(event.value),
        }
    if isinstance(event, GradientConsumed):
        return GradientConsumedEvent(kind=event.kind, text=text, node=int(event.node_id), kept=event.kept)
    if isinstance(event, Recomputed):
        return RecomputedEvent(kind=event.kind, text=text, node=int(event.node_id))
    if isinstance(event, SavedStateFreed):
        return SavedStateFreedEvent(kind=event.kind, text=text, node=int(event.node_id))
    if isinstance(event, SweepFreed):
        return SweepFreedEvent(kind=event.kind, text=text, nodes=[int(n) for n in event.node_ids])
    if isinstance(event, BackwardFinished):
        return BackwardFinishedEvent(kind=event.kind, text=text)
    raise TypeError(
        f"The stage has no event kind for {event!r}: add one to autodiff/stage/events.py and js/model/contract.mjs."
    )


def _shape(values: Any) -> tuple[int, ...]:
    return tuple(values.shape)
