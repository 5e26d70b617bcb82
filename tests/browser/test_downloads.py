"""Issue 31, finding 2, through a real server: one WebSocket asked for Checkpointing's replay 100 times in 10 ms
and the server built it 100 times (43.5 s of CPU; another visitor's page took 1.4–4.2 s to open). Now a file is built
once per content. Strict figures: `python bench/bounds.py`."""

from __future__ import annotations

import pytest

from .harness import FIRST_RENDER_GOAL_S, streamlit_server
from .probes import download_flood

pytestmark = pytest.mark.browser

REQUESTS = 100


def test_a_hundred_requests_for_a_download_build_it_once_and_others_keep_working(tmp_path):
    log = tmp_path / "server.log"
    with streamlit_server(log, ("--server.enableAgentApi", "true")) as url:
        f = download_flood(url, log, REQUESTS)
    print(f)
    assert f.answers == REQUESTS and f.empty_answers == 0 and f.distinct_files == 1  # all answered, same bytes
    assert f.builds == 1
    assert f.other_page_s < 5 * FIRST_RENDER_GOAL_S  # five times the goal: the strict figure is bench/bounds.py's
