"""A classroom on one server, with production's settings: 150 Checkpointing sessions opened and closed at once stay in
the server's memory budget and give their memory back (in a module of its own, so that another worker runs it beside
test_classroom.py's hundred sessions)."""

from __future__ import annotations

import pytest

from .harness import streamlit_server
from .probes import checkpointing_sessions

pytestmark = pytest.mark.browser

CHECKPOINTING_SESSIONS = 150
SERVER_MEMORY_MIB = 512


def test_150_checkpointing_sessions_in_13_s_stay_in_budget_and_the_server_returns_near_its_baseline(tmp_path):
    """Issue 31, finding 1: 150 Checkpointing sessions opened and closed in 12.6 s took a replica from 1,177 to
    2,264 MiB (each session unpickled its own 16.3 MB copy of the lesson), and the memory stayed after they closed.
    Production settings here: the default session TTL (60 s) and the default allocator."""
    env = {"AUTODIFF_SERVER_MEMORY_MIB": str(SERVER_MEMORY_MIB)}
    with streamlit_server(tmp_path / "server.log", with_pid=True, env=env) as (url, pid):
        f = checkpointing_sessions(url, pid, CHECKPOINTING_SESSIONS)
    print(f)
    # opened well inside one session TTL, so that all 150 are alive at once (about 13 s idle; CI's browsers beside it
    # made it 16.7 s once)
    assert f.opened_s < 45
    assert f.peak_mib - f.baseline_mib < SERVER_MEMORY_MIB  # under the server's budget
    assert f.settled_mib <= f.baseline_mib + 100
