"""The stage in the app: `autodiff.stage`'s payload and module, mounted as one Streamlit component (v2)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

import streamlit as st

from autodiff.stage import STAGE_CSS, STAGE_JS, StagePayload, wire

from .state import SHARED_RESULTS

STAGE = st.components.v2.component("replay_stage", html="", css=STAGE_CSS, js=STAGE_JS)


class Reported(NamedTuple):
    event: int | None  # the event it stopped at (None until it reported, and always for a static stage)
    answers: dict[str, Any] | None  # its exercise's verdicts so far: {question key: True, False or None (revealed)}


def stage(payload: StagePayload, key: str, shared: Hashable | None = None) -> Reported:
    """Mount the stage; returns what it reported last. `shared` names a payload that is the same for every student
    (a lesson's recording on a backend and view): what travels to the browser is then packed once per server."""
    if shared is None:
        data = wire(payload)
    else:  # the view's own keys too: an exercise, the stage alone, the event it opens at
        data = _shared_wire((shared, payload["exercise"], payload["embed"], payload["index"]), payload)
    # "room": a class's stage saw its class end: one rerun says so (every other class event the stage draws itself)
    result = STAGE(
        data=data,
        key=key,
        default={"event": payload["index"], "answers": None, "room": None},
        on_event_change=lambda: None,
        on_answers_change=lambda: None,
        on_room_change=lambda: None,
    )
    return Reported(getattr(result, "event", None), getattr(result, "answers", None))


@st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)
def _shared_wire(identity: Hashable, _payload: StagePayload) -> dict[str, object]:
    """`wire(_payload)` (its JSON gzipped: 1-2 ms a lesson) once for `identity`, the same object for every session:
    only read, by Streamlit as it serializes it (Streamlit does not hash the arguments that start with `_`)."""
    return wire(_payload)
