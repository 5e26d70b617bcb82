"""Start the app and launch Debian's Chromium: shared by the browser tests and bench/ui.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(
    log: Path, extra_args: tuple[str, ...] = (), with_pid: bool = False, env: dict[str, str] | None = None
) -> Iterator[Any]:
    """`streamlit run app.py` on a free loopback port; yields its URL (or `(url, pid)`) once
    /_stcore/health says ok."""
    port = _free_port()
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *extra_args],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if time.time() > deadline or server.poll() is not None:
                raise ServerDidNotStart(f"streamlit did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield (url, server.pid) if with_pid else url
    finally:
        server.terminate()
        server.wait(timeout=20)


def rss_mib(pid: int) -> float:
    """Resident memory of a process, in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")
