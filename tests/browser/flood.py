"""A hostile client's oversized lesson input (issue 20, finding 4), sent as a script sends it, past the browser's
`max_chars`: through the agent API (test servers) or a raw WebSocket (every server). Shared by
tests/browser/test_input_flood.py and bench/bounds.py."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg

from .harness import AgentSession, rss_mib, texts, websocket

SETTLE_S = 30.0  # how long the server may take to hand the flood's memory back
GRADIENT_BOX = "New gradient for `grad_replace()`: numbers separated by commas"  # its label on Gradient consumption


@dataclass
class Flood:
    sent_bytes: int
    status: int  # the agent API's HTTP status for the flooded request; 0 when it closed the connection instead
    seconds: float  # from sending to the answer
    rss_before_mib: float
    rss_peak_mib: float
    rss_after_mib: float  # once settled (at most SETTLE_S)
    health_before_s: float  # the slowest of a few probes before
    health_during_s: float  # the slowest probe while the flood was in the server
    health_after_s: float
    shown: str = field(repr=False)  # the page's text after grad_replace() (empty when the request was refused)


def widget_key(node: Any, label: str) -> str:
    """The key of the widget labelled `label` in an agent snapshot (the page gives it none: an internal id)."""
    if isinstance(node, dict):
        if node.get("props", {}).get("label") == label and "key" in node:
            return node["key"]
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        children = ()
    for child in children:
        try:
            return widget_key(child, label)
        except KeyError:
            pass
    raise KeyError(label)


def health_seconds(url: str) -> float:
    start = time.monotonic()
    try:
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=10).read()
    except OSError:
        return 99.0
    return time.monotonic() - start


@dataclass
class Watched:
    """What the server did while one request was in it."""

    seconds: float  # from sending to the answer
    health_s: float  # the slowest `/_stcore/health` probe meanwhile
    rss_peak_mib: float


def watched(url: str, pid: int, request: Callable[[], Any]) -> tuple[Any, Watched]:
    """`request()`'s answer, with the server's `/_stcore/health` and memory probed every 50 ms meanwhile."""
    done, slowest, peak = threading.Event(), [0.0], [rss_mib(pid)]

    def watch() -> None:
        while not done.is_set():
            slowest[0] = max(slowest[0], health_seconds(url))
            peak[0] = max(peak[0], rss_mib(pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    start = time.monotonic()
    try:
        answer = request()
    finally:
        seconds = time.monotonic() - start
        done.set()
        watcher.join()
    return answer, Watched(seconds, slowest[0], peak[0])


def flood_gradient_values(url: str, pid: int, payload: str) -> Flood:
    """Type `payload` into the grad_replace box on Gradient consumption through the agent API and press
    grad_replace(), with the server's memory and `/_stcore/health` watched before, during and after."""
    session = AgentSession(url)
    session.interact()
    page = session.interact(page="gradients")
    field_key, press = widget_key(page["tree"], GRADIENT_BOX), widget_key(page["tree"], "grad_replace()")
    health_before = max(health_seconds(url) for _ in range(5))
    rss_before = rss_mib(pid)
    body = session.encode(widget_state={field_key: payload}, trigger={"key": press})  # encoded before the clock

    def send() -> tuple[dict[str, Any], int]:
        try:
            return session.send(body), 200
        except urllib.error.HTTPError as refused:
            return {}, refused.code
        except OSError:  # the server closed the connection before reading the whole body
            return {}, 0

    (answer, status), during = watched(url, pid, send)
    settle = time.monotonic() + SETTLE_S
    while rss_mib(pid) - rss_before > 50 and time.monotonic() < settle:
        time.sleep(1)
    return Flood(
        sent_bytes=len(body),
        status=status,
        seconds=during.seconds,
        shown=texts(answer) if answer else "",
        rss_before_mib=rss_before,
        rss_peak_mib=during.rss_peak_mib,
        rss_after_mib=rss_mib(pid),
        health_before_s=health_before,
        health_during_s=during.health_s,
        health_after_s=health_seconds(url),
    )


def gradient_values_key(url: str) -> str:
    """The id Streamlit gives the grad_replace box (the same in every session: it hashes the widget's parameters)."""
    session = AgentSession(url)
    session.interact()
    return widget_key(session.interact(page="gradients")["tree"], GRADIENT_BOX)


def flood_over_websocket(url: str, pid: int, payload: str) -> tuple[str, Watched, float, float]:
    """Send `payload` as the value of the grad_replace box in one rerun message on the app's own WebSocket, as the
    page would but without its max_chars; returns how the server answered ("closed 1009" when it refused the
    message, "rerun" when it ran the page), what it did meanwhile, and its RSS before and once settled."""
    message = BackMsg()
    message.rerun_script.page_name = "gradients"
    widget = message.rerun_script.widget_states.widgets.add()
    widget.id, widget.string_value = gradient_values_key(url), payload
    data = message.SerializeToString()
    connection, head = websocket(int(url.rsplit(":", 1)[1]))
    assert head.startswith("HTTP/1.1 101"), head[:200]
    # one binary frame; a client must mask, and a zero mask leaves the bytes as they are
    frame = bytes([0x82, 0xFF]) + len(data).to_bytes(8, "big") + bytes(4) + data
    rss_before = rss_mib(pid)

    def send() -> str:
        try:
            connection.sendall(frame)
            connection.settimeout(3)
            answer = b""
            while chunk := connection.recv(65536):  # the server's frames, until it closes or goes quiet
                answer += chunk
                if b"\x88\x02\x03\xf1" in answer:  # a close frame with code 1009, Message Too Big
                    return "closed 1009"
            return "closed"
        except TimeoutError:
            return "rerun" if b"Gradient consumption" in answer else "open"
        except OSError as error:
            return f"closed ({error.__class__.__name__})"
        finally:
            connection.close()

    answer, during = watched(url, pid, send)
    settle = time.monotonic() + SETTLE_S
    while rss_mib(pid) - rss_before > 50 and time.monotonic() < settle:
        time.sleep(1)
    return answer, during, rss_before, rss_mib(pid)
