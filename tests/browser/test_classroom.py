"""A classroom on one server: sessions driven through Streamlit's agent API (the app's own rerun path)
give all their engine memory back when they end."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from .harness import AgentSession, rss_mib, streamlit_server, texts

pytestmark = pytest.mark.browser
SESSIONS = 100
# forward passes each session runs in the memory-growth lesson, on 512 x 512 tensors (x 1 MiB, each pass 2 MiB more):
# each session holds at least 7 MiB of engine memory in 4 requests (it was 4.25 MiB in 9, at 256 x 256)
SIZE, PASSES = 512, 3
X_MIB = SIZE * SIZE * 4 / 2**20
SESSION_TTL_S = 6  # short, so the test is short; long enough that a busy machine's session is not expired in use
TTL = ("--server.agentSessionTTL", str(SESSION_TTL_S), "--server.disconnectedSessionTTL", str(SESSION_TTL_S))
# large buffers always mmapped, so memory the engine frees really goes back to the system
MALLOC = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}


def student(url: str) -> str:
    session = AgentSession(url)
    session.interact(page="memory")
    session.interact(widget_state={"memory_size": SIZE}, trigger={"key": "memory_start"})
    for _ in range(PASSES - 1):
        snapshot = session.interact()  # each run draws the live chart once: one more forward pass
    return texts(snapshot)


def rss_once_settled(url: str, pid: int, bound: float, seconds: float = 30) -> float:
    """The server's memory once it is within `bound`, or after `seconds`: a new visit lets the server expire the
    idle sessions (and again each TTL, for one that went idle later), which give their memory back as they close."""
    deadline = time.monotonic() + seconds
    visited = 0.0
    while (after := rss_mib(pid)) > bound and time.monotonic() < deadline:
        if time.monotonic() - visited > SESSION_TTL_S:
            AgentSession(url).interact()
            visited = time.monotonic()
        time.sleep(0.5)
    return after


def test_a_hundred_sessions_leave_and_the_server_returns_to_its_baseline(tmp_path):
    args = ("--server.enableAgentApi", "true", *TTL)
    with streamlit_server(tmp_path / "server.log", args, with_pid=True, env=MALLOC) as (url, pid):
        student(url)  # warm: imports, caches
        time.sleep(SESSION_TTL_S + 2)
        AgentSession(url).interact()  # lets the server expire the warm-up session
        time.sleep(1)
        baseline = rss_mib(pid)
        with ThreadPoolExecutor(max_workers=10) as pool:
            pages = list(pool.map(lambda _: student(url), range(SESSIONS)))
        peak = rss_mib(pid)
        for page in pages:  # each its own lesson: its passes (a late tick catches up) and exactly their memory
            done = int(re.search(r"(\d+) / 20", page).group(1))
            assert PASSES <= done <= 20 and f"{(1 + 2 * done) * X_MIB:.1f} MiB" in page, done
        time.sleep(SESSION_TTL_S + 1)  # past the session TTL: no session expires sooner
        after = rss_once_settled(url, pid, baseline + 50)
        print(f"server RSS: baseline {baseline:.0f} MiB, {SESSIONS} sessions {peak:.0f} MiB, after {after:.0f} MiB")
        assert after <= baseline + 50, (baseline, peak, after)
