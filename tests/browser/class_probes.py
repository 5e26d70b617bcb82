"""Issue 41's findings on class mode as reproductions against a running server: each probe does what the red team
did and returns what it measured. tests/classroom/test_serve_class.py asserts on the figures; bench/bounds.py prints
them."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections import Counter
from dataclasses import dataclass

from .probes import timed_get


@dataclass
class FollowFloodFigures:
    statuses: Counter[str]  # what the flood's follows got: "429", ..., or "waiting" (a place held)
    other_status: int  # another student's follow, meanwhile
    other_s: float
    page_s: float  # the Class page, meanwhile


def follow_flood(
    port: int, code: str, seat: str, other_seat: str, follows: int = 1_100, attacker: str = "127.0.0.2"
) -> FollowFloodFigures:
    """`follows` long polls on one seat from one address, each waiting for the room's next change; meanwhile another
    student (another address) follows the room and opens the Class page."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * follows)), hard))
    since = _follow(port, code, seat, "127.0.0.3", "")[1]["since"]
    held = []
    try:
        for _ in range(follows):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(attacker, 0))
            connection.sendall(_request(port, code, seat, since))
            held.append(connection)
        start = time.monotonic()
        other_status, _ = _follow(port, code, other_seat, "127.0.0.3", "")
        other_s = time.monotonic() - start
        page_s = timed_get(port, "/class", "127.0.0.3")
        statuses: Counter[str] = Counter()
        for connection in held:
            connection.settimeout(0.05)
            try:
                statuses[connection.recv(64).decode("latin-1").split(" ")[1]] += 1
            except (TimeoutError, IndexError):
                statuses["waiting"] += 1
    finally:
        for connection in held:
            connection.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return FollowFloodFigures(statuses, other_status, other_s, page_s)


def _request(port: int, code: str, seat: str, since: str) -> bytes:
    return (
        f"GET /class/api/follow?room={code}&since={since} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"X-Class-Seat: {seat}\r\nConnection: close\r\n\r\n"
    ).encode()


def _follow(port: int, code: str, seat: str, source: str, since: str) -> tuple[int, dict]:
    """One follow's status and body (a first follow answers at once)."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    try:
        connection.sendall(_request(port, code, seat, since))
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    finally:
        connection.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body) if body else {}
