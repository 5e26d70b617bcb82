"""Capacity of one machine for a classroom (a benchmark, not a test), in two parts.

1. What one page open costs the server: the CPU of a new session on each page, beside a trivial Streamlit page (a
   title and a line) served by a second server in the same run. Goal: every page at most 1.5x the trivial page.
2. N students at once. Each opens Home, then three lessons (Backward traversal, Memory growth, Tape consumption:
   each open timed; stepping a replay then happens in the browser and costs the server nothing), and runs a
   Playground program (timed from Run to the result, queue wait included). On one `streamlit run app.py`, and
   through `deploy/replicas.py`'s nginx in front of two replicas. Goals on a 2-core machine: 30 students, lesson
   opens p95 <= 2 s on one process; 60 students p95 <= 2 s on two replicas. Beside them, the floor: the same
   crowd opening a trivial page as often, on one process.

Sessions are driven through Streamlit's agent API (`--server.enableAgentApi true`, on these test servers only),
which runs the app's own rerun path as a browser's clicks do; its JSON adds work of its own to every request, the
trivial page's included. Each simulated student connects from its own loopback address and keeps its cookies, as a
browser does. A few real Chromium sessions open a lesson at the same time. The load generator runs on the same
machine: its own CPU is printed beside the figures.

Run: python bench/classroom.py [--sessions 30 60] [--replicas 0 2] [--opens 20] [--pages (part 1 only)]
"""

from __future__ import annotations

import argparse
import platform
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deploy.replicas import deployment  # noqa: E402
from tests.browser.harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    AgentSession,
    _free_port,
    cpu_seconds,
    rss_mib,
    streamlit_server,
)
from ui.navigation import LESSONS  # noqa: E402

TRIVIAL_PAGE = 'import streamlit as st\n\nst.title("A trivial page")\nst.write("One line of text.")\n'


def agent_api(ttl_s: int) -> tuple[str, ...]:
    """Server arguments: the agent API on (test servers only), idle sessions closed after `ttl_s`."""
    return (
        "--server.enableAgentApi",
        "true",
        "--server.agentSessionTTL",
        str(ttl_s),
        "--server.agentMaxSessions",
        "1000",
    )


LOAD_SERVER = agent_api(30)
COST_SERVER = agent_api(1)  # thousands of opens: each session goes a second after it answered

PROGRAM = "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\nprint(x.grad(((x * x) + x * 3.0).sum().backward()))\n"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


LESSON_PAGES = ("traversal", "memory", "tape")


def write_trivial_page(folder: str) -> str:
    script = Path(folder) / "trivial.py"
    script.write_text(TRIVIAL_PAGE)
    return str(script)


def new_student(url: str, number: int) -> AgentSession:
    """Student `number`'s session, from a loopback address of its own (nginx limits each address)."""
    return AgentSession(url, source=f"127.0.{number // 200 + 1}.{number % 200 + 2}")


def together(threads: list[threading.Thread]) -> float:
    """Start every thread at once and wait for all; returns the seconds it took."""
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def student(url: str, number: int, results: dict[str, list[float]], lock: threading.Lock) -> None:
    session = new_student(url, number)
    session.interact()
    opens = [timed(lambda page=page: session.interact(page=page)) for page in LESSON_PAGES]
    session.interact(page="play")
    run = timed(
        lambda: session.interact(widget_state={"playground_editor": PROGRAM}, trigger={"key": "playground_run"})
    )
    with lock:
        results["lesson"].extend(opens)
        results["playground"].append(run)


def trivial_student(url: str, number: int, results: dict[str, list[float]], lock: threading.Lock) -> None:
    """The floor: the same number of page opens, each of the trivial page (one request fewer: no Playground)."""
    session = new_student(url, number)
    session.interact()
    opens = [timed(lambda: session.interact()) for _ in LESSON_PAGES]
    with lock:
        results["lesson"].extend(opens)


def floor(sessions: int) -> None:
    """The same crowd on a trivial Streamlit page: what Streamlit itself (and the agent API) costs on this machine."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        streamlit_server(Path(tmp) / "t.log", LOAD_SERVER, script=write_trivial_page(tmp)) as url,
    ):
        trivial_student(url, 1000, {"lesson": []}, threading.Lock())
        results: dict[str, list[float]] = {"lesson": []}
        lock = threading.Lock()
        together([threading.Thread(target=trivial_student, args=(url, k, results, lock)) for k in range(sessions)])
    opens = results["lesson"]
    print(
        f"{sessions:>3} students on a trivial page, one process (the floor): page opens "
        f"p50 {statistics.median(opens):.2f} s, p95 {p95(opens):.2f} s"
    )


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
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) >= 2 else values[0]


def free_run(ports: range, count: int) -> int:
    """The first of `count` consecutive loopback ports in `ports` that are free now (nginx and its replicas)."""

    def free(port: int) -> bool:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
            return True

    first = next((p for p in range(ports.start, ports.stop - count + 1) if all(map(free, range(p, p + count)))), None)
    if first is None:
        raise RuntimeError(f"no {count} free consecutive loopback ports in {ports.start}-{ports.stop - 1}")
    return first


@contextmanager
def served(
    replicas: int, tmp: Path, args: tuple[str, ...] = LOAD_SERVER, ports: range | None = None
) -> Iterator[tuple[str, list[int], int | None]]:
    """The app with the agent API: one `streamlit run` (replicas 0), or nginx in front of `replicas` replicas (on
    free ports the system picks, or consecutive ones of `ports`). Yields the URL, the Streamlit processes' pids and
    nginx's (None without it)."""
    if replicas == 0:
        with streamlit_server(tmp / "s.log", args, with_pid=True) as (url, pid):
            yield url, [pid], None
        return
    if ports is None:
        port, first_replica = _free_port(), _free_port()
    else:
        port = free_run(ports, replicas + 1)  # nginx's, then its replicas'
        first_replica = port + 1
    with deployment(replicas, port, first_replica, args) as running:  # each student its own address
        assert running.nginx is not None
        yield running.url, [replica.process.pid for replica in running.replicas], running.nginx.pid


def measure(sessions: int, replicas: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, served(replicas, Path(tmp)) as (url, pids, _):
        for k in range(2 * max(replicas, 1)):  # warm up every replica: imports, the lessons' shared results
            student(url, 1000 + k, {"lesson": [], "playground": []}, threading.Lock())
        baseline = sum(rss_mib(pid) for pid in pids)
        results: dict[str, list[float]] = {"lesson": [], "playground": []}
        lock = threading.Lock()
        chromium: list[float] = []
        threads = [threading.Thread(target=student, args=(url, k, results, lock)) for k in range(sessions)]
        threads.append(threading.Thread(target=browsers_open_lesson, args=(url, 3, chromium)))
        server_cpu = sum(cpu_seconds(pid) for pid in pids)
        own_cpu, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        elapsed = together(threads)
        server_cpu = sum(cpu_seconds(pid) for pid in pids) - server_cpu
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_cpu = (
            time.process_time() - own_cpu + (after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
        )
        per_session = (sum(rss_mib(pid) for pid in pids) - baseline) / sessions
    lesson, run = results["lesson"], results["playground"]
    where = "one process" if replicas == 0 else f"{replicas} replicas behind nginx"
    print(
        f"{sessions:>3} students on {where} ({elapsed:5.1f} s): lesson opens p50 {statistics.median(lesson):.2f} s, "
        f"p95 {p95(lesson):.2f} s | Playground run (queue included) p50 {statistics.median(run):.2f} s, "
        f"p95 {p95(run):.2f} s | server CPU {server_cpu:.1f} s, load generator CPU {load_cpu:.1f} s | "
        f"server memory {per_session:.1f} MiB a student"
        + (f" | Chromium lesson opens {', '.join(f'{s:.1f}' for s in chromium)} s" if chromium else "")
    )


def page_costs(opens: int, rounds: int = 3) -> None:
    """Server CPU per page open (a new session on that page), each page beside a trivial Streamlit page served by
    a second server with the same config, in interleaved rounds so that both see the same machine; the best round
    of each is compared (the others on the machine only ever add to a round)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        streamlit_server(Path(tmp) / "app.log", COST_SERVER, with_pid=True) as app,
        streamlit_server(Path(tmp) / "t.log", COST_SERVER, with_pid=True, script=write_trivial_page(tmp)) as trivial,
    ):
        targets = {"(trivial page)": (trivial, "")} | {lesson.title: (app, lesson.url_path) for lesson in LESSONS}
        spent: dict[str, list[float]] = {name: [] for name in targets}  # ms per open, one entry per round
        for server, page in targets.values():  # warm up: imports, first runs, caches
            for _ in range(2):
                AgentSession(server[0]).interact(page=page)
        for _ in range(rounds):
            for name, ((url, pid), page) in targets.items():
                before = cpu_seconds(pid)
                for _ in range(opens):
                    AgentSession(url).interact(page=page)
                spent[name].append((cpu_seconds(pid) - before) / opens * 1000)
    trivial_ms = min(spent["(trivial page)"])
    print(
        f"Server CPU per page open, the best of {rounds} rounds of {opens} opens (the agent API's own JSON included "
        "in both):"
    )
    for name, per_round in spent.items():
        ms = min(per_round)
        rounds_ms = ", ".join(f"{r:.1f}" for r in per_round)
        print(f"  {name:<24} {ms:6.1f} ms  {ms / trivial_ms:4.2f}x the trivial page  (rounds: {rounds_ms} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description="Capacity of one machine for a classroom.")
    parser.add_argument("--sessions", type=int, nargs="*", default=[30, 60], help="students at once")
    parser.add_argument("--replicas", type=int, nargs="*", default=[0, 2], help="0: one process without nginx")
    parser.add_argument(
        "--opens", type=int, default=20, help="page opens per page and round for the CPU costs (0: skip them)"
    )
    parser.add_argument("--pages", action="store_true", help="only part 1: the CPU costs of page opens")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    if args.opens:
        page_costs(args.opens)
    if args.pages:
        return
    for sessions in args.sessions:
        floor(sessions)
    for replicas in args.replicas:
        for sessions in args.sessions:
            measure(sessions, replicas)


if __name__ == "__main__":
    main()
