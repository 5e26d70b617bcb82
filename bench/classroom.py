"""Capacity of one machine: N students at once on one `streamlit run app.py` (a benchmark, not a test).

Each simulated student opens Home, then the Backward traversal lesson (timed: the lesson opens; stepping
its replay then happens in the browser and costs the server nothing), runs the memory-growth experiment
for a few passes, and runs a Playground program (timed from Run to the result: queue wait included).
Sessions are driven through Streamlit's agent API (`--server.enableAgentApi true`, on this test server
only), which runs the app's own rerun path as a browser's clicks do; its JSON adds about 60 ms a request
of its own. A few real Chromium sessions open the lesson at the same time. Goal on a 2-core machine:
30 sessions, lesson opens p95 <= 2 s.

Run: python bench/classroom.py [--sessions 10 30 60]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    AgentSession,
    cpu_seconds,
    rss_mib,
    streamlit_server,
)
from ui.navigation import LESSONS  # noqa: E402

TRIVIAL_PAGE = 'import streamlit as st\n\nst.title("A trivial page")\nst.write("One line of text.")\n'
COST_SERVER = ("--server.enableAgentApi", "true", "--server.agentSessionTTL", "1", "--server.agentMaxSessions", "1000")

PROGRAM = "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\nprint(x.grad(((x * x) + x * 3.0).sum().backward()))\n"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def student(url: str, results: dict[str, list[float]], lock: threading.Lock) -> None:
    session = AgentSession(url)
    session.interact()
    lesson = timed(lambda: session.interact(page="traversal"))
    session.interact(page="memory")
    session.interact(widget_state={"memory_size": 256}, trigger={"key": "memory_start"})
    for _ in range(3):
        session.interact()
    session.interact(page="play")
    run = timed(
        lambda: session.interact(widget_state={"playground_editor": PROGRAM}, trigger={"key": "playground_run"})
    )
    with lock:
        results["lesson"].append(lesson)
        results["playground"].append(run)


def browsers_open_lesson(url: str, count: int, seen: list[float]) -> None:
    if not Path(CHROMIUM).exists():
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(count):
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(f"{url}/traversal")
            page.locator(".stage svg g.node").first.wait_for(timeout=60_000)
            seen.append(time.perf_counter() - start)
            page.close()
        browser.close()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def measure(sessions: int) -> None:
    args = ("--server.enableAgentApi", "true", "--server.agentSessionTTL", "30")
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "s.log", args, with_pid=True) as (url, pid):
        student(url, {"lesson": [], "playground": []}, threading.Lock())  # warm up
        baseline = rss_mib(pid)
        results: dict[str, list[float]] = {"lesson": [], "playground": []}
        lock = threading.Lock()
        chromium: list[float] = []
        threads = [threading.Thread(target=student, args=(url, results, lock)) for _ in range(sessions)]
        threads.append(threading.Thread(target=browsers_open_lesson, args=(url, 3, chromium)))
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        per_session = (rss_mib(pid) - baseline) / sessions
    lesson, run = results["lesson"], results["playground"]
    print(f"{sessions:>3} sessions ({elapsed:5.1f} s): lesson opens p50 {statistics.median(lesson):.2f} s, "
          f"p95 {p95(lesson):.2f} s | "
          f"Playground run (queue included) p50 {statistics.median(run):.2f} s, p95 {p95(run):.2f} s | "
          f"server memory {per_session:.1f} MiB a session"
          + (f" | Chromium lesson opens {', '.join(f'{s:.1f}' for s in chromium)} s" if chromium else ""))  # fmt: skip


def page_costs(opens: int, rounds: int = 3) -> None:
    """Server CPU per page open (a new session on that page), each page beside a trivial Streamlit page served by
    a second server with the same config, in interleaved rounds so that both see the same machine."""
    with tempfile.TemporaryDirectory() as tmp:
        trivial_script = Path(tmp) / "trivial.py"
        trivial_script.write_text(TRIVIAL_PAGE)
        with (
            streamlit_server(Path(tmp) / "app.log", COST_SERVER, with_pid=True) as app,
            streamlit_server(Path(tmp) / "t.log", COST_SERVER, with_pid=True, script=str(trivial_script)) as trivial,
        ):
            targets = {"(trivial page)": (trivial, "")} | {lesson.title: (app, lesson.url_path) for lesson in LESSONS}
            spent = dict.fromkeys(targets, 0.0)
            for server, page in targets.values():  # warm up: imports, first runs, caches
                for _ in range(2):
                    AgentSession(server[0]).interact(page=page)
            for _ in range(rounds):
                for name, ((url, pid), page) in targets.items():
                    before = cpu_seconds(pid)
                    for _ in range(opens):
                        AgentSession(url).interact(page=page)
                    spent[name] += cpu_seconds(pid) - before
    trivial_ms = spent["(trivial page)"] / (opens * rounds) * 1000
    print(f"Server CPU per page open ({opens * rounds} opens each; the agent API's own JSON included in both):")
    for name, seconds in spent.items():
        ms = seconds / (opens * rounds) * 1000
        print(f"  {name:<24} {ms:6.1f} ms  {ms / trivial_ms:4.2f}x the trivial page")


def main() -> None:
    parser = argparse.ArgumentParser(description="Capacity of one machine for a classroom.")
    parser.add_argument("--sessions", type=int, nargs="*", default=[10, 30, 60])
    parser.add_argument("--opens", type=int, default=10, help="page opens per page and round for the CPU costs")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    page_costs(args.opens)
    for sessions in args.sessions:
        measure(sessions)


if __name__ == "__main__":
    main()
