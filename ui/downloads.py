"""Download files built once per content, a few at a time (issue 31, finding 2).

Streamlit builds a deferred download (`st.download_button(data=callable)`) each time the browser asks for it, in a
thread of its own, and one WebSocket may ask any number of times: 100 requests for Checkpointing's 6.9 MB trace in
10 ms cost 43.5 s of server CPU while nginx saw one connection. Here a file is built once per content (the same
request gets the same bytes, kept in a bounded cache), requests for a file being built wait for that build, and at
most `SERVER_BUILDS` files are built at once on the server and one per session."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Final

from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner import get_script_run_ctx

# a download button's click: the file is fetched and the page stays as it is (a rerun would change nothing, and on a
# busy server could replace the button before its file is fetched)
NO_RERUN: Final = "ignore"
SERVER_BUILDS = 2  # files built at once on the whole server (a build is CPU work: the machines have two cores)
KEPT_BYTES = 64 * 2**20  # built files kept for the next request, newest first

_LOGGER = get_logger(__name__)  # one line per build in the server's log: an operator (and a test) can count them
_server_builds = threading.BoundedSemaphore(SERVER_BUILDS)
_lock = threading.Condition()  # guards the three tables below; notified when a session's build ends
_built: OrderedDict[Hashable, bytes] = OrderedDict()
_building: dict[Hashable, threading.Lock] = {}
_sessions_building: set[str] = set()  # sessions with a build running: only these, so the set stays small


def built_once(content: Hashable, build: Callable[[], str | bytes]) -> Callable[[], bytes]:
    """`build` as a download's deferred data, run once for `content` (what names the file's bytes exactly, e.g. a
    recording's signature and the kind of file) however many times it is requested."""
    ctx = get_script_run_ctx()
    session = ctx.session_id if ctx is not None else ""  # read here: the request runs where there is no context

    def deferred() -> bytes:
        with _lock:
            data = _built.get(content)
            if data is not None:
                _built.move_to_end(content)
                return data
            building = _building.setdefault(content, threading.Lock())
        with building:  # a second request for the same file waits for the first build
            with _lock:
                data = _built.get(content)
                if data is not None:
                    return data
                _lock.wait_for(lambda: session not in _sessions_building)  # one build per session at a time
                _sessions_building.add(session)
            try:
                with _server_builds:
                    start = time.perf_counter()
                    built = build()
                    _LOGGER.info("download built: %r, %.2f s", content, time.perf_counter() - start)
            finally:
                with _lock:
                    _sessions_building.discard(session)
                    _lock.notify_all()
            data = built.encode() if isinstance(built, str) else built
            _keep(content, data)
        with _lock:
            _building.pop(content, None)
        return data

    return deferred


def _keep(content: Hashable, data: bytes) -> None:
    with _lock:
        _built[content] = data
        total = sum(len(kept) for kept in _built.values())
        while total > KEPT_BYTES and len(_built) > 1:
            _, dropped = _built.popitem(last=False)
            total -= len(dropped)
