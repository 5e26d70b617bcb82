"""The event player: first / previous / next / last, play-pause with speed, and a scrubber.
Its position lives in `st.session_state` under `{key}_index`; a fragment timer plays it."""

from __future__ import annotations

import streamlit as st

from .state import presenter_mode

SPEEDS = {"slow": 1.5, "normal": 0.8, "fast": 0.35}  # seconds per event


def event_player(total: int, key: str) -> int:
    """Draw the player's controls over `total` events. Returns the current event's index."""
    ss = st.session_state
    index_key, slider_key, playing_key = f"{key}_index", f"{key}_slider", f"{key}_playing"
    ss.setdefault(index_key, 0)
    ss[index_key] = max(0, min(ss[index_key], total - 1))

    def go(target: int) -> None:
        ss[index_key] = max(0, min(target, total - 1))

    cols = st.columns([1, 1, 1, 1, 1.2, 1.6])
    cols[0].button("« First", key=f"{key}_first", on_click=go, args=(0,), width="stretch")
    cols[1].button("◀ Prev", key=f"{key}_prev", on_click=lambda: go(ss[index_key] - 1), width="stretch")
    cols[2].button("Next ▶", key=f"{key}_next", on_click=lambda: go(ss[index_key] + 1), width="stretch")
    cols[3].button("Last »", key=f"{key}_last", on_click=go, args=(total - 1,), width="stretch")
    playing = ss.get(playing_key, False)
    if cols[4].button("Pause" if playing else "Play ▶", key=f"{key}_play", width="stretch"):
        ss[playing_key] = not playing
        if not playing and ss[index_key] >= total - 1:
            ss[index_key] = 0
        st.rerun()  # a full rerun: the player's timer is set when the page is drawn
    if not presenter_mode():
        cols[5].select_slider("Speed", options=list(SPEEDS), value="normal", key=f"{key}_speed",
                              label_visibility="collapsed")  # fmt: skip
    ss[slider_key] = ss[index_key] + 1  # people count events from 1, as the caption does
    st.slider(
        "Event",
        1,
        max(total, 2),
        key=slider_key,
        on_change=lambda: go(ss[slider_key] - 1),
        disabled=total <= 1,
        help="Drag to jump to any event of the recorded backward.",
    )
    return ss[index_key]


def play_interval(key: str) -> float | None:
    """The player's timer period while playing, else None (no timer)."""
    if not st.session_state.get(f"{key}_playing", False):
        return None
    return SPEEDS[st.session_state.get(f"{key}_speed", "normal")]


def advance_player(key: str, total: int) -> None:
    """One tick of the player's timer: move on, and stop at the end."""
    ss = st.session_state
    if ss.get(f"{key}_playing", False):
        if ss[f"{key}_index"] < total - 1:
            ss[f"{key}_index"] += 1
        else:
            ss[f"{key}_playing"] = False
            st.rerun()
