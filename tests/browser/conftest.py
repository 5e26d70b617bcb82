"""A real `streamlit run app.py` on a free loopback port, driven by Debian's Chromium via Playwright."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import CHROMIUM, CHROMIUM_ARGS, ROOT, RUNNING, stacks, streamlit_server

SCREENSHOTS = ROOT / "tests" / "browser" / "screenshots"
SHOWN_CHARS = 2000  # of each page's text in a failed test's report: enough to say what it showed instead
_shown_at_close: list[str] = []  # the pages of contexts a failing test closed (in its `finally`) on the way out
_logged_before: dict[int, int] = {}  # each running server's log size when the test started
_CONSOLE_LINES = 12  # of each page's last console errors and warnings in that report
_SCROLLED = """() => {
  const main = document.querySelector("[data-testid=stMain]");
  return `window at ${Math.round(scrollY)} of ${document.documentElement.scrollHeight} px`
    + (main ? `, main at ${Math.round(main.scrollTop)} of ${main.scrollHeight} px` : "");
}"""


def _listen(page) -> None:
    """Keeps the page's last console errors and warnings (a widget that failed to draw says why only there)."""
    said: deque[str] = deque(maxlen=_CONSOLE_LINES)
    page.on("console", lambda message: message.type in ("error", "warning") and said.append(message.text[:300]))
    page.on("pageerror", lambda error: said.append(f"uncaught: {str(error)[:300]}"))
    page._console_said = said


def _shown(page) -> str:
    try:
        state = page.locator(".stApp").get_attribute("data-test-script-state", timeout=1000)
    except Exception:  # not a Streamlit page
        state = None
    try:
        main = page.locator("[data-testid=stMain]")  # the app's page without its sidebar; a notebook's whole body
        text = (main if main.count() else page.locator("body")).inner_text(timeout=3000)
    except Exception as unreadable:  # a crashed or closing page: say so, and keep the test's own error first
        text = f"(unreadable: {unreadable})"
    try:
        scrolled = page.evaluate(_SCROLLED)
    except Exception:
        scrolled = "scroll unknown"
    script = f" (its script: {state})" if state else ""
    said = "".join(f"\nconsole: {line}" for line in getattr(page, "_console_said", ()))
    return f"--- {page.url}{script} ({scrolled}){said}\n{text[:SHOWN_CHARS]}"


def _watched(browser):
    """`browser`, whose contexts remember what their pages showed when an exception closes them: a failure in CI
    then says what each page showed, not only what the test waited for."""
    new_context = browser.new_context

    def watched_context(**options):
        context = new_context(**options)
        context.on("page", _listen)
        close = context.close

        def closing(**how):
            if sys.exc_info()[0] is not None:  # closed in a `finally` while the test's failure goes up
                _shown_at_close.extend(_shown(page) for page in context.pages)
            return close(**how)

        context.close = closing
        return context

    browser.new_context = watched_context
    return browser


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    report = yield
    if call.when == "setup":
        _shown_at_close.clear()
        _logged_before.clear()
        _logged_before.update({pid: log.stat().st_size for pid, log in RUNNING.items() if log.exists()})
    elif call.when == "call" and report.failed:
        browser = getattr(item, "funcargs", {}).get("browser")
        still_open = [_shown(page) for context in (browser.contexts if browser else []) for page in context.pages]
        if _shown_at_close or still_open:
            report.sections.append(("what the pages showed", "\n".join(_shown_at_close + still_open)))
        for pid, log in list(RUNNING.items()):
            try:
                written = stacks(pid, log, _logged_before.get(pid, 0))
            except (OSError, ProcessLookupError) as gone:
                written = f"(could not read: {gone})"
            report.sections.append(
                (f"server {log.parent.name}/{log.name} during the test, and its threads now", written)
            )
    return report


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with streamlit_server(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


@pytest.fixture
def fresh_app_url(tmp_path: Path) -> Iterator[str]:
    """A server no session has visited yet: its first request is the test's."""
    with streamlit_server(tmp_path / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield _watched(browser)
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def download(page, button: str):
    """The file a download button gives (a Playwright Download), clicked once the page's run has ended: a rerun draws
    the button anew with its own file, and a click on the one it replaces can be lost."""
    page.locator(".stApp[data-test-script-state='notRunning']").wait_for()
    with page.expect_download(timeout=60_000) as file:
        page.get_by_role("button", name=button).click()
    return file.value


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the select box `label`. Its list can close under the click (the page reran: a stage told it
    its step) or not open at all (headless, a click may only focus the box): it is opened again, five times at most."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.get_by_role("combobox", name=label)
    for _ in range(5):
        box.click()
        if box.get_attribute("aria-expanded") != "true":
            box.press("ArrowDown")
        try:
            page.get_by_role("option", name=option).click(timeout=3000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the select box {label!r} never offered {option!r}")


def by_event(page) -> None:
    """Each press of the stage shows one event (its detail option; by default a press shows one step)."""
    page.locator(".stage-by").first.select_option("event")
