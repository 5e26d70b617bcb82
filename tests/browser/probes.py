"""Issue 31's findings as reproductions against a running server (or deploy/'s nginx): each probe does what the red
team did and returns what it measured. The tests assert on the figures (tests/browser/test_classroom.py,
test_downloads.py, test_playground_workers.py, test_deploy_limits.py, test_visitor_messages.py); bench/bounds.py
prints them."""

from __future__ import annotations

import http.client
import resource
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .harness import ROOT, AgentSession, cpu_seconds, rss_mib, websocket
from .visitor import (
    Socket,
    clear_cache,
    download_id,
    download_request,
    element_id,
    forward_messages,
    rerun,
    send,
    session_id,
)

CATCH_ALL = b"Something unexpected went wrong"
GRAPHVIZ_MODULE = "/app/static/vendor/wasm-graphviz-1.29.2/index.js"
SLOW_PROGRAM = "for i in range(1000):\n    x = Tensor.ones([512, 512], ad).exp()\n"  # runs into the 5 s limit


@dataclass
class SessionsFigures:
    opened_s: float
    baseline_mib: float
    peak_mib: float
    settled_mib: float


def checkpointing_sessions(url: str, pid: int, sessions: int = 150, settle_s: float = 120.0) -> SessionsFigures:
    """Finding 1: `sessions` visitors open Checkpointing one after another and leave; the server's memory then."""
    warm = Socket(url)
    warm.send(rerun("checkpoints"))
    warm.read(20.0)  # the lesson computed once, for everyone
    warm.close()
    baseline = rss_mib(pid)
    start, peak = time.monotonic(), baseline
    for _ in range(sessions):
        visitor = Socket(url)
        visitor.send(rerun("checkpoints"))
        visitor.read(0.05)  # the page on its way; the visitor leaves (its session ends a TTL later)
        visitor.close()
        peak = max(peak, rss_mib(pid))
    opened = time.monotonic() - start
    used, deadline = cpu_seconds(pid), time.monotonic() + 30.0
    while time.monotonic() < deadline:  # the sessions' reruns finish: the server idle for a second
        time.sleep(1.0)
        peak, now = max(peak, rss_mib(pid)), cpu_seconds(pid)
        if now - used < 0.03:
            break
        used = now
    settled, deadline = rss_mib(pid), time.monotonic() + settle_s  # the session TTL, then the next trim
    while settled > baseline + 100 and time.monotonic() < deadline:
        time.sleep(5)
        settled = rss_mib(pid)
    return SessionsFigures(opened, baseline, peak, settled)


@dataclass
class DownloadFigures:
    answers: int
    distinct_files: int
    empty_answers: int  # refused (an error instead of a file)
    builds: int
    other_page_s: float  # another visitor opening a lesson meanwhile


def download_flood(url: str, log: Path, requests: int = 100) -> DownloadFigures:
    """Finding 2: one WebSocket asks for Checkpointing's replay file `requests` times at once (the server must run
    with the agent API on, for the other visitor)."""
    builds_before = log.read_text().count("download built:")
    sock = Socket(url)
    sock.send(rerun("checkpoints"))
    page = sock.read(15.0)
    replay, session = download_id(page, "Download this replay (HTML)"), session_id(page)
    opened: list[float] = []

    def another_visitor() -> None:
        visitor = AgentSession(url)
        start = time.monotonic()
        visitor.interact()
        visitor.interact(page="traversal")
        opened.append(time.monotonic() - start)

    for i in range(requests):
        sock.send(download_request(replay, f"request-{i}", session))
    visitor = threading.Thread(target=another_visitor)
    visitor.start()
    answers = forward_messages(sock.read(15.0))
    visitor.join()
    sock.close()
    responses = [m.backend_operation_response for m in answers if m.WhichOneof("type") == "backend_operation_response"]
    urls = [r.deferred_file.url for r in responses]
    builds = log.read_text().count("download built:") - builds_before
    return DownloadFigures(len(responses), len(set(urls) - {""}), urls.count(""), builds, opened[0] if opened else 99.0)


@dataclass
class QueueFigures:
    waited_s: float  # the other address's run, from Run to its output
    refused: int  # the flooding address's runs refused at once
    answered: bool


def playground_flood(url: str, sessions: int = 63) -> QueueFigures:
    """Finding 3: `sessions` WebSockets from one address each run a program that uses its whole time limit; then a
    session from another address runs `print(1 + 1)`."""
    editor, run = element_id(url, "play", "Program"), element_id(url, "play", "Run")
    flooders = [Socket(url, source="127.0.0.2") for _ in range(sessions)]
    visitor = Socket(url, source="127.0.0.3")
    sockets = [*flooders, visitor]
    try:

        def read_all(rounds: int) -> list[bytes]:
            """What each session got meanwhile, a few rounds over all of them (answering their pings)."""
            got = [b""] * len(sockets)
            for _ in range(rounds):
                got = [seen + s.read(0.02) for seen, s in zip(got, sockets, strict=True)]
            return got

        for s in sockets:  # every page opened first, as a browser opens it: its widgets then exist
            s.send(rerun("play"))
        read_all(8)
        for s in flooders:
            s.send(rerun("play", {editor: SLOW_PROGRAM}, trigger=run))
        answers = read_all(8)[:-1]  # every flooding run submitted (the server runs their pages)
        start = time.monotonic()
        visitor.send(rerun("play", {editor: "print(1 + 1)"}, trigger=run))
        shown = b""
        while b">2</span>" not in shown and time.monotonic() - start < 60:
            shown += visitor.read(0.5)
        waited = time.monotonic() - start
    finally:
        for s in sockets:
            s.close()
    refused = sum(b"runs from your network address are already waiting" in answer for answer in answers)
    return QueueFigures(waited, refused, b">2</span>" in shown)


@dataclass
class HalfOpenFigures:
    behind_burst_s: float  # the first health request, queued behind the attack's own connections
    health_worst_s: float  # the worst of five after it: what the held sockets leave
    page_s: float
    websocket_opened: bool
    log_growth_bytes: int


def timed_get(port: int, path: str, source: str) -> float:
    """Seconds for a GET from `source` to answer 200 (99 when it does not)."""
    start = time.monotonic()
    try:
        connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        try:
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            head = connection.recv(4096).decode("latin-1")
        finally:
            connection.close()
    except OSError:
        return 99.0
    return time.monotonic() - start if head.startswith("HTTP/1.1 200") else 99.0


def half_open(port: int, log: Path, sockets: int = 1_100, attacker: str = "127.0.0.2") -> HalfOpenFigures:
    """Finding 4: `sockets` connections from one address send half a request and hold it; meanwhile another address
    asks for health once behind that burst, five times more, the page, and a WebSocket. The finding was a server
    the held sockets starved (health never answered), so the five say what they leave."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * sockets)), hard))
    log_before = log.stat().st_size if log.exists() else 0
    held = []
    try:
        for _ in range(sockets):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(attacker, 0))
            connection.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # never finished
            held.append(connection)
        behind_burst = timed_get(port, "/_stcore/health", "127.0.0.3")
        health = [timed_get(port, "/_stcore/health", "127.0.0.3") for _ in range(5)]
        page = timed_get(port, "/", "127.0.0.3")
        student, head = websocket(port, "127.0.0.3")
        student.close()
    finally:
        for connection in held:
            connection.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    grown = (log.stat().st_size if log.exists() else 0) - log_before
    return HalfOpenFigures(behind_burst, max(health), page, head.startswith("HTTP/1.1 101"), grown)


@dataclass
class ClearCacheFigures:
    cold_s: float  # server CPU: Memory policies opened first, its curves computed
    warm_s: float  # a rerun from the cache (the least of three: another job on the machine only adds)
    cleared_s: float  # a visitor's clear_cache, then a rerun (the least of three)


REPEATS = 3


def clear_cache_cost(url: str, pid: int) -> ClearCacheFigures:
    """Finding 5: a visitor's `clear_cache` before a rerun of Memory policies."""

    def cpu_of(messages: list) -> float:
        before = cpu_seconds(pid)
        send(url, messages)
        return _idle(pid) - before

    cold = cpu_of([rerun("policies")])
    warm = min(cpu_of([rerun("policies")]) for _ in range(REPEATS))
    cleared = min(cpu_of([clear_cache(), rerun("policies")]) for _ in range(REPEATS))
    return ClearCacheFigures(cold, warm, cleared)


def _idle(pid: int, quiet_s: float = 1.0, most_s: float = 30.0) -> float:
    """The server's CPU seconds once it has been idle for `quiet_s` (its work for the last message done)."""
    deadline = time.monotonic() + most_s
    used = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = cpu_seconds(pid)
        if now - used < 0.03:
            return now
        used = now
    return used


@dataclass
class StaticFigures:
    page_load_ok: int  # of a hundred files fetched at once by a client of its own
    requests: int
    served: int
    refused: int
    seconds: float
    replica_cpu_s: float
    other_client_s: float


# the other client: once the loop is under way, one GET of the file from another address, its seconds printed
OTHER_CLIENT = """import sys, time
from tests.browser.probes import timed_get
time.sleep(1.0)
print(timed_get(int(sys.argv[1]), sys.argv[2], "127.0.0.3"))"""


def static_loop(port: int, replica_pid: int, connections: int, seconds: float = 5.0) -> StaticFigures:
    """Finding 6: `connections` keep-alive connections from one address fetch the Graphviz module in a loop."""
    page_load = 0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.4", 0))
    for _ in range(100):
        connection.request("GET", GRAPHVIZ_MODULE)
        response = connection.getresponse()
        response.read()
        page_load += response.status == 200
    connection.close()
    looped: list[int] = []
    cpu_before, start = cpu_seconds(replica_pid), time.monotonic()
    threads = [
        threading.Thread(target=_fetch_loop, args=(port, GRAPHVIZ_MODULE, "127.0.0.2", seconds, looped))
        for _ in range(connections)
    ]
    # another client is another process (on another machine): timed here, it would wait on this one's 60 threads
    other_client = subprocess.Popen(
        [sys.executable, "-c", OTHER_CLIENT, str(port), GRAPHVIZ_MODULE], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other = float(other_client.communicate(timeout=30)[0])
    elapsed = time.monotonic() - start
    return StaticFigures(
        page_load,
        len(looped),
        looped.count(200),
        looped.count(429),
        elapsed,
        cpu_seconds(replica_pid) - cpu_before,
        other,
    )


def _fetch_loop(port: int, path: str, source: str, seconds: float, statuses: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            if response.will_close:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    except OSError:
        statuses.append(0)
    finally:
        connection.close()


@dataclass
class ForgedFigures:
    page_answered: bool
    alert: bool  # the catch-all's alert shown
    value_echoed: bool  # the forged value anywhere in the answer
    tracebacks: int  # in the server's log


def forged_choice(url: str, log: Path, page: str, label: str, heading: bytes, value: str) -> ForgedFigures:
    """Finding 7: the page opened, then its choice widget `label` sent `value` (not among its options), then an
    ordinary rerun."""
    key = element_id(url, page, label)
    before = log.read_text().count("Traceback")
    answer = send(url, [rerun(page), rerun(page, {key: value}), rerun(page)])
    return ForgedFigures(
        heading in answer, CATCH_ALL in answer, value.encode() in answer, log.read_text().count("Traceback") - before
    )
