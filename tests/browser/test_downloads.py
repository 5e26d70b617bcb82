"""Issue 31, finding 2, through a real server: one WebSocket asked for Checkpointing's replay 100 times in 10 ms
and the server built it 100 times (43.5 s of CPU; another visitor's page took 1.4–4.2 s to open). Now a file is built
once per content. Strict figures: `python bench/bounds.py`."""

from __future__ import annotations

import threading
import time

import pytest

from .harness import AgentSession, streamlit_server
from .visitor import Socket, download_id, download_request, forward_messages, rerun, session_id

pytestmark = pytest.mark.browser

REQUESTS = 100


def test_a_hundred_requests_for_a_download_build_it_once_and_others_keep_working(tmp_path):
    log = tmp_path / "server.log"
    with streamlit_server(log, ("--server.enableAgentApi", "true")) as url:
        socket = Socket(url)
        socket.send(rerun("checkpoints"))
        page = socket.read(15.0)
        replay, session = download_id(page, "Download this replay (HTML)"), session_id(page)
        opened: list[float] = []

        def another_visitor() -> None:
            session = AgentSession(url)
            start = time.monotonic()
            session.interact()
            session.interact(page="traversal")
            opened.append(time.monotonic() - start)

        for i in range(REQUESTS):
            socket.send(download_request(replay, f"request-{i}", session))
        visitor = threading.Thread(target=another_visitor)
        visitor.start()
        answers = forward_messages(socket.read(15.0))
        visitor.join()
        socket.close()
    responses = [m.backend_operation_response for m in answers if m.WhichOneof("type") == "backend_operation_response"]
    urls = {r.deferred_file.url for r in responses}
    builds = log.read_text().count("download built:")
    print(f"{len(responses)} answers, {len(urls)} distinct files, {builds} builds, another visitor's page {opened}")
    assert len(responses) == REQUESTS and "" not in urls and len(urls) == 1  # all answered, with the same bytes
    assert builds == 1
    assert opened and opened[0] < 1.5
