"""`python -m classroom.serve` as a teacher runs it, a real process on the network (0.0.0.0; here the machine's address
is its only one besides loopback): it prints an address students can open, raises its open-files limit, drops a
request whose head never finishes after the header timeout (however slowly it trickles), and answers 503 with a
sentence past the per-address and total caps (and past the per-address cap of requests that are not long polls), while
other addresses go on. Small timeout and caps keep it quick."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import resource
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit import net_util

from classroom.serve import PUBLIC_URL_ENV, is_local_host
from tests.browser.harness import HEALTH_GOAL_S, _free_port, _FromAddress, serving, websocket
from tests.browser.probes import half_open

HEADER_TIMEOUT_S = 2.0
PER_ADDRESS = 3
PER_ADDRESS_REQUESTS = 2
TOTAL = 5
FILES = 1024  # the soft limit the server starts with, as on many machines (a Mac's is 256)


@dataclass
class Served:
    port: int
    printed: str
    pid: int
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("serve")
    log, port = folder / "serve.log", _free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    args = ["--port", str(port), "--header-timeout", str(HEADER_TIMEOUT_S), "--per-address", str(PER_ADDRESS)]
    args += ["--max-connections", str(TOTAL), "--database", f"sqlite:///{folder / 'class.sqlite3'}"]
    args += ["--per-address-requests", str(PER_ADDRESS_REQUESTS)]
    env = {k: v for k, v in os.environ.items() if k != PUBLIC_URL_ENV}  # the address is its own to find
    files = (min(FILES, hard), hard)
    limit = functools.partial(resource.setrlimit, resource.RLIMIT_NOFILE, files)
    with serving(["classroom.serve", *args], port, log, env, preexec_fn=limit) as server:
        yield Served(port, log.read_text(), server.pid, log)


def get(port: int, path: str, source: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(_FromAddress(source))
    try:
        with opener.open(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def closed_after(connection: socket.socket, trickle: bytes, seconds: float = 10.0) -> float:
    """Seconds until the server closes `connection`, sending it one byte of `trickle` every 0.25 s meanwhile."""
    start = time.monotonic()
    connection.settimeout(0.25)
    for byte in trickle * 100:
        try:
            if connection.recv(1024) == b"":
                return time.monotonic() - start
        except TimeoutError:
            pass
        except OSError:
            return time.monotonic() - start
        assert time.monotonic() - start < seconds, "the server kept a request whose head never finished"
        try:
            connection.sendall(bytes([byte]))
        except OSError:
            return time.monotonic() - start
    raise AssertionError("trickled out")


def test_it_prints_this_machines_network_address_and_answers_there(served):
    found = re.search(r"Students open (http://(\S+):(\d+))/class \(this machine's network address\)", served.printed)
    assert found, served.printed
    url, host, port = found.groups()
    assert not is_local_host(host) and int(port) == served.port
    assert host == net_util.get_internal_ip()  # what `streamlit run` calls the Network URL; here 192.0.2.2
    assert urllib.request.urlopen(f"{url}/_stcore/health", timeout=10).read() == b"ok"


def test_it_raises_its_open_files_limit(served):
    limits = Path(f"/proc/{served.pid}/limits").read_text()
    soft = int(re.search(r"Max open files\s+(\d+)", limits).group(1))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > FILES or hard <= FILES, limits


def test_a_request_whose_head_never_finishes_is_dropped_after_the_header_timeout(served):
    silent = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    silent.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    trickling = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    trickling.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    took = closed_after(trickling, b"abcdefgh")  # a byte every 0.25 s: a read timeout alone would never fire
    silent.settimeout(HEADER_TIMEOUT_S)
    assert silent.recv(1024) == b""
    assert HEADER_TIMEOUT_S - 0.5 <= took <= HEADER_TIMEOUT_S + 2, took
    silent.close()
    trickling.close()


def test_past_the_per_address_cap_a_request_gets_503_and_a_sentence_and_other_addresses_go_on(served):
    held = [websocket(served.port, "127.0.0.2") for _ in range(PER_ADDRESS)]
    others: list[socket.socket] = []
    try:
        assert all(head.startswith("HTTP/1.1 101") for _, head in held)
        refused_socket, answer = websocket(served.port, "127.0.0.2")
        head, _, body = answer.partition("\r\n\r\n")
        body = body or refused_socket.recv(4096).decode()  # the body, unless it came with the head
        refused_socket.close()
        assert head.startswith("HTTP/1.1 503") and "from your network address as it allows (3 at once)" in body
        assert "\r\nreferrer-policy: no-referrer" in head.lower()
        status, body = get(served.port, "/_stcore/health", "127.0.0.2")
        assert status == 503 and body.decode().startswith("This server is answering as many connections from your")
        status, body = get(served.port, "/class/api/follow?room=ABCDEFGH", "127.0.0.2")
        assert status == 503 and "try again in a moment" in json.loads(body)["error"]  # the stage's own form
        assert get(served.port, "/_stcore/health", "127.0.0.3") == (200, b"ok")

        time.sleep(HEADER_TIMEOUT_S + 0.5)  # the WebSockets outlive the header timeout: it is for request heads
        for connection, _ in held:
            connection.setblocking(False)
            with contextlib.suppress(BlockingIOError):  # nothing to read yet: still open
                assert connection.recv(1024) != b""  # a ping: still open

        others = [websocket(served.port, source)[0] for source in ("127.0.0.3", "127.0.0.4")]  # 5 open in all
        status, body = get(served.port, "/_stcore/health", "127.0.0.5")
        assert status == 503 and body.decode().startswith("This server is answering as many visitors as it can (5 ")
    finally:
        for connection in [c for c, _ in held] + others:
            connection.close()
    deadline = time.monotonic() + 10
    while get(served.port, "/_stcore/health", "127.0.0.2")[0] != 200:  # the places come back as they close
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_requests_that_are_not_long_polls_have_a_smaller_cap_per_address(served):
    """Issue 54, finding 5: slow requests from one address had held every place its class's long polls need."""
    held = []
    try:
        for _ in range(PER_ADDRESS_REQUESTS):  # answers whose bodies never finish (the body deadline is 10 s)
            connection = socket.create_connection(
                ("127.0.0.1", served.port), timeout=10, source_address=("127.0.0.9", 0)
            )
            connection.sendall(
                b"POST /class/api/answer?room=ABCDEFGH HTTP/1.1\r\nHost: x\r\nContent-Length: 99\r\n\r\n{"
            )
            held.append(connection)
        deadline = time.monotonic() + 10
        while (page := get(served.port, "/", "127.0.0.9"))[0] != 503:  # once the server has the held heads
            assert time.monotonic() < deadline, page
            time.sleep(0.05)
        assert page[1].decode().startswith("This server is answering as many requests from your network address as it")
        assert "(2 at once)" in page[1].decode()
        status, body = get(served.port, "/class/api/follow?room=ABCDEFGH", "127.0.0.9")  # a long poll: not capped
        assert status == 404 and "join again with the room code" in json.loads(body)["error"]
        assert get(served.port, "/_stcore/health", "127.0.0.9") == (200, b"ok")
        assert get(served.port, "/", "127.0.0.10")[0] == 200  # another address
    finally:
        for connection in held:
            connection.close()


def test_1100_half_sent_requests_leave_health_the_page_and_a_websocket_answered(served):
    """Issue 31's finding 4, which starved the bare server, against this one."""
    figures = half_open(served.port, served.log)
    assert figures.behind_burst_s < 10  # answered (99 when starved)
    assert figures.health_worst_s < 5 * HEALTH_GOAL_S and figures.page_s < 2.0 and figures.websocket_opened, figures
    assert figures.log_growth_bytes < 10_000, figures
