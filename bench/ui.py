"""App speed, measured side by side in one run (a benchmark, not a test).

- Server time of one rerun of each page under AppTest (target: at most 100 ms for shipped programs).
- In headless Chromium: first render of each page (target: at most 2 s) and the time from clicking
  "Next" in the step player to the updated graph SVG (target: at most 500 ms).

Run: python bench/ui.py   (the browser part needs /usr/bin/chromium and playwright)
"""

from __future__ import annotations

import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from course.programs import PROGRAMS, record_program  # noqa: E402
from tests.browser.harness import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from ui.graph_dot import graph_dot, replay_overlay  # noqa: E402
from ui.navigation import LESSONS  # noqa: E402
from ui.replay_state import replay_state  # noqa: E402

PAGES = {lesson.url_path or "home": lesson.path for lesson in LESSONS[:5]}
GRAPH_PAGES = ("traversal", "gradients", "tape")


def rerun_ms(page: str, setup=None, repeat: int = 7) -> float:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page(PAGES[page]).run()
    if setup:
        setup(at)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - start) * 1e3)
    assert not at.exception, at.exception
    return statistics.median(times)


def server_side() -> None:
    print("AppTest: median server time of one rerun (target <= 100 ms)")
    for page in PAGES:
        print(f"  {page:<24} {rerun_ms(page):7.1f} ms")
    for key in PROGRAMS:
        ms = rerun_ms("traversal", lambda at, k=key: at.selectbox(key="traversal_program_widget")
                      .set_value(k).run())  # fmt: skip
        print(f"  traversal:{key:<15} {ms:7.1f} ms")


def browser_side() -> None:
    if not Path(CHROMIUM).exists():
        print("Browser: /usr/bin/chromium is missing, skipped")
        return
    from playwright.sync_api import sync_playwright

    dots = {}
    for key in PROGRAMS:
        run = record_program(key)
        dots[key] = [
            graph_dot(run.before, run.names, replay_overlay(replay_state(run.recorder, i)))
            for i in range(len(run.recorder.events))
        ]

    with (
        tempfile.TemporaryDirectory() as tmp,
        streamlit_server(Path(tmp) / "server.log") as url,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)  # a first visit warms the server (imports), as a teacher's own check would
        page.get_by_role("heading", name="Seeing reverse-mode autodiff").wait_for()
        print("Browser: first render of each page (target <= 2000 ms)")
        for name in PAGES:
            start = time.perf_counter()
            page.goto(f"{url}/{'' if name == 'home' else name}")
            page.locator('[data-testid="stMain"] h1').first.wait_for()
            if name in GRAPH_PAGES:
                page.locator('[data-testid="stGraphVizChart"] svg g.node').first.wait_for()
            page.wait_for_load_state("networkidle")
            print(f"  {name:<24} {(time.perf_counter() - start) * 1e3:7.0f} ms")
        for key in PROGRAMS:
            page.goto(f"{url}/traversal?program={key}&event=1")
            page.locator('[data-testid="stGraphVizChart"] svg g.node').first.wait_for()
            page.wait_for_load_state("networkidle")
            times = []
            for step in range(1, min(12, len(dots[key]))):
                svg = page.locator('[data-testid="stGraphVizChart"] svg').inner_html()
                start = time.perf_counter()
                page.get_by_role("button", name="Next ▶").click()
                page.get_by_text(f"Event {step + 1} of").wait_for()
                if dots[key][step] != dots[key][step - 1]:  # some events change only the tables
                    page.wait_for_function(
                        "old => document.querySelector('[data-testid=stGraphVizChart] svg').innerHTML !== old",
                        arg=svg,
                    )
                times.append((time.perf_counter() - start) * 1e3)
            print(f"  next step -> updated SVG, {key:<6} median {statistics.median(times):5.0f} ms, "
                  f"max {max(times):5.0f} ms (target <= 500 ms)")  # fmt: skip
        browser.close()


if __name__ == "__main__":
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, {platform.python_version()}")
    server_side()
    browser_side()
