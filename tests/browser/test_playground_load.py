"""Five real browser sessions use the Playground at once: no cross-talk, and the server's memory
returns near its baseline once they have gone."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from playground.share import ShareError, encode

from .conftest import screenshot
from .harness import rss_mib, streamlit_server

pytestmark = pytest.mark.browser
SESSIONS = 5
PROGRAM = """\
x = Tensor.random([256, 256], Distribution.Default, ad).require_grad()
for i in range(8):
    loss = (x.exp() * x).matmul(x).sum()
grads = loss.backward()
print("session", {k}, x.grad(grads).dims())
"""


def run_in(page, url: str, code: str) -> None:
    page.goto(f"{url}/play")
    page.get_by_role("heading", name="Playground").wait_for()
    commit(page, code)
    press_run(page)


def commit(page, code: str, settle_s: float = 5.0) -> None:
    """Type `code` in the editor and commit it; the page's address then carries it (each run publishes the program
    it holds), and until it does, Run would run the program before. In one full CI run a freshly started server ran
    the first example after a commit (the address said so), cause not found (not reproduced on 16 fresh servers,
    idle or under CPU hogs): the text is typed and committed again (twice at most)."""
    editor = page.get_by_label("Program")
    try:
        packed = encode(code)
    except ShareError:  # too long for a link: nothing to wait for
        packed = None
    for _ in range(3):
        editor.fill(code)
        editor.press("Control+Enter")
        if packed is None:
            return
        try:
            page.wait_for_function(HOLDS, arg=packed, timeout=settle_s * 1000)
            return
        except PlaywrightTimeoutError:
            print("commit: the page's address does not carry the program; typing it again")


HOLDS = "packed => new URL(window.location.href).searchParams.get('code') === packed"


def press_run(page, settle_s: float = 3.0) -> None:
    """Click Run; when the page is still idle asking for Run `settle_s` later, the click left no trace, and Run is
    clicked again (twice at most). Under a full suite's load a click now and then reached no run, cause not found
    (not reproduced in 30 runs alone, nor under CPU hogs), and a test of something else waited its whole timeout."""
    button = page.get_by_role("button", name="Run", exact=True)
    for _ in range(3):
        button.click()
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline:
            idle = page.locator(".stApp[data-test-script-state='notRunning']").count() > 0
            if not idle or page.get_by_text("Press Run to run the program.").count() == 0:
                return  # a run is under way, or its result replaced the line
            page.wait_for_timeout(100)
        print("press_run: the Run click left no trace; clicking again")


def test_five_concurrent_sessions_are_isolated_and_memory_returns(browser, tmp_path):
    # Large buffers always mmapped, so memory the program frees really goes back to the system and the
    # resident size measures what the sessions still hold (glibc's dynamic threshold would keep it).
    malloc = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}
    ttl = ("--server.disconnectedSessionTTL", "2")
    with streamlit_server(tmp_path / "server.log", ttl, with_pid=True, env=malloc) as (url, pid):
        warm = browser.new_context()
        run_in(warm.new_page(), url, PROGRAM.format(k=0))
        warm.pages[0].get_by_text("session 0 [256, 256]").wait_for(timeout=60_000)
        warm.close()
        time.sleep(3)
        baseline = rss_mib(pid)

        contexts = [browser.new_context() for _ in range(SESSIONS)]
        pages = [c.new_page() for c in contexts]
        for p in pages:
            p.set_default_timeout(90_000)
        for k, p in enumerate(pages, start=1):
            run_in(p, url, PROGRAM.format(k=k))
        for k, p in enumerate(pages, start=1):
            p.get_by_text(f"session {k} [256, 256]").wait_for()
            others = [j for j in range(1, SESSIONS + 1) if j != k]
            assert all(p.get_by_text(f"session {j} [").count() == 0 for j in others)  # no cross-talk
            assert p.locator('[data-testid="stException"]').count() == 0
        peak = rss_mib(pid)
        screenshot(pages[0], "playground_session")
        for c in contexts:
            c.close()
        time.sleep(4)  # past the disconnected-session TTL
        poke = browser.new_context()  # a new visit lets the server expire the old sessions
        poke.new_page().goto(url)
        time.sleep(2)
        poke.close()
        after = rss_mib(pid)
        print(
            f"server RSS: baseline {baseline:.0f} MiB, with {SESSIONS} sessions {peak:.0f} MiB, after {after:.0f} MiB"
        )
        assert after <= baseline + 40, (baseline, peak, after)
