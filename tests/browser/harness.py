"""Start the app and launch Debian's Chromium: shared by the browser tests and bench/ui.py."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
def streamlit_server(log: Path) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port; yields its URL once /_stcore/health says ok."""
    port = _free_port()
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
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
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)
