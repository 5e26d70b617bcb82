"""deploy/: three replicas behind nginx on loopback, driven by real browser sessions through the proxy."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from deploy.replicas import deployment

from .conftest import download, screenshot
from .harness import _free_port

pytestmark = pytest.mark.browser
ERROR = '[data-testid="stAlertContentError"]'
EXCEPTION = '[data-testid="stException"]'
GRAPH_NODES = ".stage svg g.node"  # every graph is drawn by the stage


@pytest.fixture(scope="module")
def proxied(browser):
    if not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is not installed (apt-get install nginx): the deploy tests cannot run in CI")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    first = _free_port()
    with deployment(replicas=3, port=_free_port(), first_replica_port=first) as running:
        yield running


def open_session(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/tape")
    page.get_by_role("heading", name="Tape consumption").wait_for()
    page.locator(GRAPH_NODES).first.wait_for()
    return context, page


def replica_of(context) -> str:
    return next(c["value"] for c in context.cookies() if c["name"] == "st_replica").split(",")[-1].strip()


def open_sessions(browser, url: str, least: int = 6, most: int = 14) -> list:
    """At least `least` sessions, more (up to `most`) until they sit on two replicas or more: a consistent
    hash of a few random cookies can put them all on one replica (it did, once in CI)."""
    sessions = []
    while len(sessions) < least or (len({replica_of(c) for c, _ in sessions}) < 2 and len(sessions) < most):
        sessions.append(open_session(browser, url))
    return sessions


def test_sessions_spread_over_replicas_and_work_end_to_end(browser, proxied):
    sessions = open_sessions(browser, proxied.url)
    try:
        replicas = {replica_of(context) for context, _ in sessions}
        assert len(replicas) >= 2, replicas  # the proxy balances; each browser keeps its replica
        context, page = sessions[0]
        page.goto(f"{proxied.url}/traversal?program=seed&event=1")
        page.locator(".stage svg g.node").first.wait_for()  # its Graphviz is served through the proxy too
        trace = download(page, "Download the event trace (JSON)")  # download-button files: the session's replica
        assert json.loads(Path(trace.path()).read_text())[0]["event"] == "TapeBuilt"
        assert page.locator(EXCEPTION).count() == 0
    finally:
        for context, _ in sessions:
            context.close()


def test_a_stopped_replica_leaves_the_others_untouched_and_its_sessions_move_on(browser, proxied):
    sessions = open_sessions(browser, proxied.url)
    try:
        for _, page in sessions:  # some state in every session: one backward, logged
            page.get_by_role("button", name="loss.backward()").click()
            page.get_by_text("What you did").wait_for()
        by_replica: dict[str, list] = {}
        for context, page in sessions:
            by_replica.setdefault(replica_of(context), []).append(page)
        assert len(by_replica) >= 2
        victim_address, victims = next(iter(by_replica.items()))
        victim = next(r for r in proxied.replicas if r.name == victim_address)  # st_replica names it
        victim.stop()
        for page in victims:  # reconnected to a live replica: a fresh session, and a sentence saying why
            deadline = time.monotonic() + 30
            while replica_of(page.context) == victim_address and time.monotonic() < deadline:
                page.wait_for_timeout(200)  # the page's WebSocket reconnects through the proxy
            assert replica_of(page.context) != victim_address
            page.get_by_role("button", name="loss.backward()").click()  # the new replica's first run, with the click
            page.get_by_text("The server that held your session stopped").wait_for()
            page.get_by_text("[5.0, 7.0]", exact=True).first.wait_for()  # a first backward again: the state is fresh
            assert page.locator(EXCEPTION).count() == 0 and page.locator(ERROR).count() == 0
        screenshot(victims[0], "deploy_moved_session")
        for address, pages in by_replica.items():
            if address == victim_address:
                continue
            for page in pages:  # untouched: the same session, its log still there, and it goes on
                page.get_by_role("button", name="loss.backward()").click()
                page.locator(ERROR).filter(has_text="refused").first.wait_for()
                assert page.get_by_text("The server that held your session stopped").count() == 0
    finally:
        for context, _ in sessions:
            context.close()
        victim_replicas = [r for r in proxied.replicas if r.process is not None and r.process.poll() is not None]
        for replica in victim_replicas:
            replica.start(proxied.extra_args)
