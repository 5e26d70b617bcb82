"""Where a class's secrets live (issue 41): in the visitor's browser, never in an address a request, Referer or log
carries. `ui/class_secret.js` reads the private teacher link's fragment (`?room=…#teacher=…`) and the seat this
browser keeps; this side takes what it reports into the session, and tells it which seat to keep or forget."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict

import streamlit as st

from classroom.rooms import normalize_code

SECRET_JS = (Path(__file__).parent / "class_secret.js").read_text()
SECRET = st.components.v2.component("class_secret", html="", js=SECRET_JS)
KEY = "class_secret"
TEACHER = "class_teacher"  # (room code, teacher key) in the teacher's session
SEAT = "class_seat"  # (room code, seat token) in a student's session
FORGET = "class_secret_forget"  # the student's class ended or refused the seat: the browser forgets it
SECRET_TEXT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a key or a seat token: anything else is not ours


class Session(Protocol):  # st.session_state, or AppTest's
    def __setitem__(self, key: str, value: Any) -> None: ...


class KeptSeat(TypedDict):
    room: str
    seat: str


class SecretOrders(TypedDict):
    keep: KeptSeat | None
    forget: bool
    ask: bool


class FoundSecret(TypedDict):
    role: Literal["teacher", "student"]
    room: str
    secret: str


def take(found: object, address_room: str, session: Session) -> None:
    """What the browser reported, into the session: a teacher link's key, or the seat it keeps for the room the
    address names (a seat kept for another class stays in the browser, unused). Anything else is ignored."""
    if not isinstance(found, dict):
        return
    role, room, secret = found.get("role"), found.get("room"), found.get("secret")
    if not (isinstance(room, str) and isinstance(secret, str) and SECRET_TEXT.match(secret)):
        return
    code = normalize_code(room)[:16]
    if role == "teacher" and code:
        session[TEACHER] = (code, secret)
    elif role == "student" and code and code == normalize_code(address_room)[:16]:
        session[SEAT] = (code, secret)


def keep_seat(code: str, seat: str) -> None:
    """A student joined: the session has the seat now, and the browser keeps it at the next run."""
    st.session_state[SEAT] = (code, seat)
    st.session_state.pop(FORGET, None)


def forget_seat() -> None:
    """The student's class ended, or refused the seat: the session and the browser drop it."""
    st.session_state.pop(SEAT, None)
    st.session_state[FORGET] = True


def class_secret() -> None:
    """Mount the reader (it draws nothing); on its report the page runs again with the secret in the session."""
    seat = st.session_state.get(SEAT)
    orders: SecretOrders = {
        "keep": {"room": seat[0], "seat": seat[1]} if seat else None,
        "forget": bool(st.session_state.get(FORGET)),
        "ask": not (SEAT in st.session_state or TEACHER in st.session_state),  # a reload is a new session
    }
    SECRET(data=orders, key=KEY, on_found_change=_reported)


def _reported() -> None:
    read = getattr(st.session_state.get(KEY), "get", None)  # the component's state: a mapping of its values
    take(read("found") if callable(read) else None, st.query_params.get("room") or "", st.session_state)
