"""Buttons whose press is never lost.

Streamlit reads a button's press in the run its click starts. If another rerun stops that run before the script
reaches the button, the press is gone: the click did nothing. With fast reruns (off in `.streamlit/config.toml`, and
Streamlit's default) a rerun asked for during a run stops it at once, and pages still get reruns a person did not
click: a class teacher's stage asking its page to draw the controls of the room's new step or phase, the Training
stage's commands, an exercise's answers, Memory growth's ticks (a press of the replay stage no longer reruns
anything). Here a click marks its button in the session as its run starts (a callback, which runs before the script,
so nothing can stop that run first); the button reads the mark wherever a run reaches it next, once. A mark that a
whole run passed without reading is dropped (`forget_unread`, at the end of every run): its button was not drawn
(the class moved on), and must not act later.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

PRESSED = "_pressed"  # the keys of buttons clicked and not yet read


def _mark(key: str) -> None:
    st.session_state.setdefault(PRESSED, set()).add(key)


def _read(key: str) -> bool:
    pressed = st.session_state.get(PRESSED)
    if pressed is None or key not in pressed:
        return False
    pressed.discard(key)
    return True


def button(label: str, key: str, where: Any = st, **options: Any) -> bool:
    """`st.button` (in `where`: a column, the sidebar), True once for each click, whichever run reaches it."""
    clicked = where.button(label, key=key, on_click=_mark, args=(key,), **options)
    return _read(key) or clicked  # clicked, unmarked: a session's first run (a new replica's) has no callback yet


def submit_button(label: str, key: str, where: Any = st, **options: Any) -> bool:
    """`st.form_submit_button`, True once for each submit, whichever run reaches it (the form's values with it)."""
    submitted = where.form_submit_button(label, key=key, on_click=_mark, args=(key,), **options)
    return _read(key) or submitted


def forget_unread() -> None:
    """The end of a whole run: a mark no button read belongs to a button this run did not draw."""
    st.session_state.pop(PRESSED, None)
