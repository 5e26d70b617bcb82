"""Per-session state and shareable links.

Engine objects live in `st.session_state` (one per browser session), never in a module global or
`st.cache_resource`, which every user shares. What is the same for every student (a lesson's results as plain
data, which pages only read) is computed once per server and handed to every session as the same object: a copy
per session (Streamlit's `st.cache_data`) cost 16.3 MB per Checkpointing visitor. Every session's engine budget
counts against one budget for the whole server. Values that make a view shareable (page, program, replay event)
are mirrored into the URL's query parameters.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable
from typing import TypeVar
from urllib.parse import parse_qs

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from autodiff import MemoryBudget
from classroom import clients

T = TypeVar("T")


SHARED_RESULTS = 64  # lesson results kept per function: programs x backends x sizes, all well under this
SESSION_MEMORY_LIMIT = 256 * 2**20  # engine memory one visitor's session may hold, all lessons together
SERVER_MEMORY_VARIABLE = "AUTODIFF_SERVER_MEMORY_MIB"  # engine memory all sessions of this process may hold


def _server_memory_limit() -> int:
    """From the environment, else a quarter of the machine's memory (at least 512 MiB): 20 sessions at 84 MiB
    each had taken a replica past 1.8 GB, with nothing to cap them together."""
    if os.environ.get(SERVER_MEMORY_VARIABLE):
        return int(os.environ[SERVER_MEMORY_VARIABLE]) * 2**20
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(512 * 2**20, physical // 4)


SERVER_BUDGET = MemoryBudget(_server_memory_limit())  # one per server process, shared by every session


def client_address() -> str:
    """The address this session's browser connects from, read as the push route reads it (`classroom.clients`): what
    the Playground's queue is fair between, and the class mode's limits count."""
    peer = st.context.ip_address
    # Streamlit hides a loopback peer (None), which is where deploy/'s nginx connects from: read as loopback, so the
    # proxy's header counts (it had counted every visitor behind nginx as one address, "unknown")
    peer = peer if isinstance(peer, str) and peer else clients.LOOPBACK[0]
    return clients.client_address(peer, str(st.context.headers.get("X-Forwarded-For", "")))


def session_budget() -> MemoryBudget:
    """This session's engine-memory budget: every device its lessons create counts against it, from
    allocation to release, so a session that ends gives all of it back with its state."""
    return st.session_state.setdefault("_engine_budget", MemoryBudget(SESSION_MEMORY_LIMIT, parent=SERVER_BUDGET))


def current_backend() -> str:
    """The backend chosen in the sidebar."""
    return st.session_state.get("backend", "numpy")


def session_lab(key: str, factory: Callable[[str], T]) -> T:
    """This session's lab under `key`, made by `factory(backend)` the first time and again when
    the sidebar's backend changes (every lab has a `backend` attribute)."""
    lab = st.session_state.get(key)
    if lab is None or lab.backend != current_backend():
        lab = st.session_state[key] = factory(current_backend())
    return lab


def shared_result(compute: Callable[..., T], *args: Hashable) -> T:
    """`compute(*args)` once per server, the same object for every session and every rerun (views that cache by
    identity keep their cache): plain data that pages only read, no device and no live tensor. Nothing of it is
    copied per session."""
    return _server_cached(compute)(*args)


@functools.cache  # one cached wrapper per function, made once
def _server_cached(compute: Callable[..., T]) -> Callable[..., T]:
    return st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)(compute)


def restore_from_url(key: str, param: str, parse: Callable[[str], T | None], default: T) -> T:
    """A durable session value that a shared link can set: read from the URL on this session's
    first visit of the page, then kept in session state (and written back with `publish`)."""
    if key not in st.session_state:
        raw = st.query_params.get(param)
        parsed = parse(raw) if raw is not None else None
        st.session_state[key] = default if parsed is None else parsed
    return st.session_state[key]


def publish(**params: object) -> None:
    """Write view parameters into the URL so the address bar is a shareable link."""
    for name, value in params.items():
        if st.query_params.get(name) != str(value):
            st.query_params[name] = str(value)


def parse_event_number(raw: str) -> int | None:
    """`?event=3` (events are counted from 1, as the player shows them) as the index 2."""
    try:
        return max(int(raw) - 1, 0)
    except ValueError:
        return None


def presenter_mode() -> bool:
    return bool(st.session_state.get("presenter", False))


EMBEDDED = "embedded_stage"  # the key of the container that `?embed=1` shows alone


def embed_mode() -> bool:
    """The stage alone (`?embed=1`): for an iframe in a slide deck, no sidebar, title or other widget around it."""
    if "embed" not in st.session_state:
        # `embed` is Streamlit's own parameter (`embed=true` is its embedded mode): `st.query_params` hides it, so
        # the address's query string is read as the browser sent it
        context = get_script_run_ctx()
        asked = parse_qs(context.query_string if context else "").get("embed", [""])[0].lower()
        st.session_state.embed = bool(st.context.is_embedded) or asked in ("1", "true")
    return bool(st.session_state.embed)


def embed_styles() -> None:
    """`?embed=1`: nothing but the stage's container, across the whole window (the page still runs as it would)."""
    st.html(
        "<style>header[data-testid='stHeader'], [data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl']"
        " {display: none !important;}"
        " [data-testid='stMainBlockContainer'] {padding: 0.5rem 1rem !important; max-width: none !important;}"
        f" [data-testid='stMainBlockContainer'] [data-testid='stElementContainer']:not(.st-key-{EMBEDDED} *)"
        " {display: none !important;}</style>"
    )


def restore_presenter() -> None:
    """Presenter mode from the address (`?present=1`) on a session's first run: a reload or a shared link keeps
    it. Call before the sidebar's toggle is drawn."""
    if "presenter" not in st.session_state:
        st.session_state.presenter = st.query_params.get("present") == "1"


def publish_presenter() -> None:
    """Presenter mode into the address, so that reloading or sharing the page keeps it."""
    if presenter_mode():
        publish(present=1)
    elif "present" in st.query_params:
        del st.query_params["present"]


def moved_from_another_replica() -> bool:
    """True once, on the first run of a session that continues a browser tab another replica served
    (deploy/: nginx names the replica that answered in the `st_replica` cookie). Its state stayed there."""
    if st.session_state.get("_replica_checked"):
        return False
    st.session_state._replica_checked = True
    last = st.context.cookies.get("st_replica")
    if not last:
        return False
    address = f"{st.get_option('server.address') or '127.0.0.1'}:{st.get_option('server.port')}"
    here = os.environ.get("AUTODIFF_REPLICA") or address  # deploy/replicas.py names each replica
    return last.split(",")[-1].strip() != here
