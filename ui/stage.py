"""The stage in the app: `autodiff.stage`'s payload and module, mounted as one Streamlit component (v2)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

import streamlit as st

from autodiff.stage import STAGE_CSS, STAGE_JS, StagePayload, wire

from .state import SHARED_RESULTS

STAGE = st.components.v2.component("replay_stage", html="", css=STAGE_CSS, js=STAGE_JS)


class Reported(NamedTuple):
    answers: dict[str, Any] | None  # its exercise's verdicts so far: {question key: True, False or None (revealed)}


def stage(payload: StagePayload, key: str, shared: Hashable | None = None, link: str | None = None) -> Reported:
    """Mount the stage; returns what it reported last. `shared` names a payload that is the same for every student
    (a lesson's recording on a backend and view): what travels to the browser is then packed once per server. The
    stage keeps its own position and never reruns the page for a press; with `link`, it writes the event it stops at
    into the page's address itself (`?<link>=`, counted from 1), for a link or a reload to open there."""
    if shared is None:
        data = wire(payload)
    else:  # the view's own keys too: an exercise, the stage alone, the event it opens at
        view = (payload["exercise"], payload["embed"], payload["index"], payload["file_stem"])
        data = _shared_wire((shared, *view), payload)
    if link is not None:  # a key of this mount's own, beside the (shared, unwritten) wire data
        data = {**data, "link": link}
    # "room": a class's stage saw its class end, or a teacher's stage saw the room at a phase or step its page drew no
    # controls for: one rerun says so (every other class event the stage draws itself)
    result = STAGE(
        data=data,
        key=key,
        default={"answers": None, "room": None},
        on_answers_change=lambda: None,
        on_room_change=lambda: None,
    )
    return Reported(getattr(result, "answers", None))


@st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)
def _shared_wire(identity: Hashable, _payload: StagePayload) -> dict[str, object]:
    """`wire(_payload)` (its JSON gzipped: 1-2 ms a lesson) once for `identity`, the same object for every session:
    only read, by Streamlit as it serializes it (Streamlit does not hash the arguments that start with `_`)."""
    return wire(_payload)
