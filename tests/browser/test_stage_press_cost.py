"""A press of the stage costs the server nothing (issue 53, item 3): the stage keeps its own position and writes it
into the page's address itself, so stepping sends no message and reruns nothing; a reload opens where it stopped."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import streamlit_server
from .test_stage import _settled

pytestmark = pytest.mark.browser
PRESSES = 6
CPU_MS_PER_PRESS = 2.0  # the goal, above the server's idle
LOADED_MARGIN = 5  # docs/testing.md: a time bound gets 5x its goal on a machine other work shares
CAPTION = ".stage-caption"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A server of this module's own: its process is the one whose CPU is read."""
    with streamlit_server(tmp_path_factory.mktemp("press_cost") / "server.log", with_pid=True) as url_and_pid:
        yield url_and_pid


def cpu_ms(pid: int) -> float:
    """The process's CPU so far (user + system, every thread), in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def test_six_presses_on_the_seed_send_at_most_one_message_and_cost_the_server_nearly_nothing(browser, served):
    url, pid = served
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append("frame")))
    try:
        page.goto(f"{url}/traversal?program=seed&event=1")
        page.locator(".stage svg g.node").first.wait_for()
        page.locator(CAPTION).filter(has_text="Step 0 of").wait_for()
        _settled(page, sent, quiet_ms=2000, timeout_ms=60_000)  # its first runs sent, then nothing for 2 s
        window_ms = PRESSES * 1000 + 1500  # the presses, and long enough after them for a report they would cause

        sent.clear()
        start = cpu_ms(pid)
        page.wait_for_timeout(window_ms)
        idle = cpu_ms(pid) - start
        idle_frames = len(sent)

        sent.clear()
        start = cpu_ms(pid)
        for _ in range(PRESSES):
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(1000)
        page.locator(CAPTION).filter(has_text=f"Step {PRESSES} of").wait_for()
        page.wait_for_timeout(window_ms - PRESSES * 1000)
        pressed = cpu_ms(pid) - start
        per_press = max(pressed - idle, 0) / PRESSES
        print(
            f"\n{PRESSES} presses on the seed: {len(sent)} WebSocket frames sent ({idle_frames} idle); server CPU"
            f" {pressed:.0f} ms pressing, {idle:.0f} ms idle over {window_ms} ms: {per_press:.1f} ms a press above idle"
        )
        assert len(sent) <= 1  # the robust proof: no message, so no rerun, whatever the machine's load
        assert per_press <= CPU_MS_PER_PRESS * LOADED_MARGIN

        # the link still carries the position, written by the stage itself; a reload opens at it
        page.wait_for_url(re.compile(r"[?&]event=([2-9]|[1-9]\d+)\b"))  # it opened at event 1
        shown = page.locator(CAPTION).inner_text()
        event = int(re.search(r"[?&]event=(\d+)", page.url).group(1))
        assert "program=seed" in page.url
        page.reload()
        page.locator(CAPTION).filter(has_text=shown.split(".")[0]).wait_for()
        assert f"event={event}" in page.url
    finally:
        page.context.close()
