"""Start the app and launch Debian's Chromium: shared by the browser tests and bench/ui.py."""

from __future__ import annotations

import base64
import functools
import http.client
import http.cookiejar
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SERVER_PORTS = range(20000, 32000)  # the test servers' (tests/postgres.py's free_port: a share per xdist worker)
HEALTH_GOAL_S = 0.2  # `/_stcore/health` answers within this, whatever another visitor does
FIRST_RENDER_GOAL_S = 1.5  # a page's first render in Chromium (bench/ui.py)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class ServerDidNotStart(RuntimeError):
    pass


def _free_port() -> int:
    return free_port(SERVER_PORTS)


@contextmanager
def streamlit_server(
    log: Path,
    extra_args: tuple[str, ...] = (),
    with_pid: bool = False,
    env: dict[str, str] | None = None,
    script: str = "app.py",
    public_url: bool = True,
) -> Iterator[Any]:
    """`streamlit run app.py` (or another `script`, with the app's config) on a free loopback port; yields its URL
    (or `(url, pid)`) once /_stcore/health says ok. With `public_url`, $CLASSROOM_PUBLIC_URL is that loopback URL:
    the tests' students are on this machine, so a class's join link names it (a server students on the network open
    is tests/browser/test_class_serve.py's; without `public_url` the page shows no join link)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    own = {"CLASSROOM_PUBLIC_URL": url if public_url else ""}
    command = ["streamlit", "run", script, "--server.port", str(port), "--server.address", "127.0.0.1"]
    command += ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with serving([*command, *extra_args], port, log, {**os.environ, **own, **(env or {})}) as server:
        yield (url, server.pid) if with_pid else url


@contextmanager
def serving(module: list[str], port: int, log: Path, env: dict[str, str], **popen: Any) -> Iterator[subprocess.Popen]:
    """`python -m <module...>` from the project's root, its output in `log`; yields the process once its
    /_stcore/health on `port` answers, and stops it after. While it runs, SIGUSR2 writes every thread's stack to
    its log (`stacks`): a failed test's report says where a server was stuck, if it was."""
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-c", _DUMPABLE, *module], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env, **popen
        )
    RUNNING[server.pid] = log
    try:
        wait_until_up(f"http://127.0.0.1:{port}/_stcore/health", server, log, module[0])
        yield server
    finally:
        RUNNING.pop(server.pid, None)
        server.terminate()
        server.wait(timeout=20)


# `python -m <module>`, with every thread's stack written to stderr on SIGUSR2
_DUMPABLE = (
    "import faulthandler, runpy, signal, sys; faulthandler.register(signal.SIGUSR2, all_threads=True); "
    "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)
RUNNING: dict[int, Path] = {}  # pid -> log, of each server `serving` started in this process and has not stopped


def stacks(pid: int, log: Path, since: int) -> str:
    """What a running server wrote to its `log` after byte `since`, then where each of its threads is now."""
    os.kill(pid, signal.SIGUSR2)
    time.sleep(0.5)  # faulthandler writes from the signal handler, at once; the file is read after
    with open(log, "rb") as text:
        text.seek(since)
        written = text.read().decode(errors="replace")
    # an idle pool thread (waiting on its queue) says nothing: only the threads doing something are kept
    blocks = written.split("\n\n")
    busy = [b for b in blocks if not ("in wait" in b and ("queue.py" in b or "_worker" in b))]
    return "\n\n".join(busy)[-12000:]


def wait_until_up(url: str, server: subprocess.Popen, log: Path, name: str, seconds: float = 120) -> None:
    """Return once `url` answers 200; raise with the end of the server's `log` when it exits or time runs out."""
    deadline = time.time() + seconds
    while True:
        try:
            if urllib.request.urlopen(url, timeout=2).status == 200:
                return
        except OSError:
            pass
        if time.time() > deadline or server.poll() is not None:
            raise ServerDidNotStart(f"{name} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far, all its threads, user and system (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def rss_mib(pid: int) -> float:
    """Resident memory of a process, in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def websocket(port: int, source: str = "127.0.0.1", host: str | None = None) -> tuple[socket.socket, str]:
    """Open the app's WebSocket on a loopback port (the server's or nginx's) from `source`; returns the socket
    (held open) and the response head."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    host = host or f"127.0.0.1:{port}"
    key = base64.b64encode(os.urandom(16)).decode()
    connection.sendall(
        f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: streamlit\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(4096)
        if not chunk:
            break
        head += chunk
    return connection, head.decode("latin-1")


class _FromAddress(urllib.request.HTTPHandler):
    """Connect from a given loopback address: every simulated student its own client, as nginx sees it."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def http_open(self, request: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(http.client.HTTPConnection, source_address=(self.source, 0)), request)


class AgentSession:
    """One session driven through Streamlit's agent API (`--server.enableAgentApi true`, test servers only):
    the app's own rerun path, without a browser. It keeps its cookies, as a browser does (behind deploy/'s nginx
    they keep it on one replica), and connects from `source` (any 127.x.y.z address)."""

    def __init__(self, url: str, source: str = "127.0.0.1") -> None:
        self.url = url
        self.session_id: str | None = None
        self.source = source
        self.cookies = http.cookiejar.CookieJar()  # a page's own requests beside the session send them too
        self.opener = urllib.request.build_opener(
            _FromAddress(source), urllib.request.HTTPCookieProcessor(self.cookies)
        )

    def interact(self, **body: Any) -> dict[str, Any]:
        return self.send(self.encode(**body))

    def encode(self, **body: Any) -> bytes:
        """The request body, encoded ahead when the sending itself is what is measured."""
        if self.session_id is not None:
            body["session_id"] = self.session_id
        return json.dumps(body).encode()

    def send(self, data: bytes) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/_stcore/agent/interact",
            data=data,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with self.opener.open(request, timeout=120) as response:
            answer = json.loads(response.read())
        self.session_id = answer.get("session_id", self.session_id)
        return answer


def texts(snapshot: dict[str, Any]) -> str:
    """Every string in an agent snapshot's element tree, joined: enough to look for a sentence."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            found.append(node)

    walk(snapshot.get("tree"))
    return "\n".join(found)
