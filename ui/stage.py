"""The stage in the app: `autodiff.stage`'s payload and module, mounted as one Streamlit component (v2)."""

from __future__ import annotations

from typing import Any, NamedTuple

import streamlit as st

from autodiff.stage import STAGE_CSS, STAGE_JS, StagePayload, wire

STAGE = st.components.v2.component("replay_stage", html="", css=STAGE_CSS, js=STAGE_JS)


class Reported(NamedTuple):
    event: int | None  # the event it stopped at (None until it reported, and always for a static stage)
    answers: dict[str, Any] | None  # its exercise's verdicts so far: {question key: True, False or None (revealed)}


def stage(payload: StagePayload, key: str) -> Reported:
    """Mount the stage; returns what it reported last."""
    # "room": a class's stage saw its class end: one rerun says so (every other class event the stage draws itself)
    result = STAGE(
        data=wire(payload),
        key=key,
        default={"event": payload["index"], "answers": None, "room": None},
        on_event_change=lambda: None,
        on_answers_change=lambda: None,
        on_room_change=lambda: None,
    )
    return Reported(getattr(result, "event", None), getattr(result, "answers", None))
