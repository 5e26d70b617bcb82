"""Issue 41's findings on class mode as reproductions, against a class store or a running server: each probe does what
the red team did and returns what it measured. tests/classroom/test_class_limits.py, test_class_erase.py and
test_serve_class.py assert on the figures; bench/bounds.py prints them."""

from __future__ import annotations

import json
import os
import resource
import socket
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from classroom.errors import ClassroomError, RoomNotFound
from classroom.rooms import Classroom, secret_hash
from classroom.serve import PUBLIC_URL_ENV

from .harness import _free_port, serving
from .probes import timed_get

SCHOOL = "203.0.113.7"  # a lecture hall's shared public address
# a page, a student's page, health, the push route refusing, one of the app's own files
POLICY_PATHS = ["/class", "/class?room=ABCDEFGH", "/_stcore/health", "/class/api/follow?room=ABCDEFGH"]
POLICY_PATHS.append("/app/static/vendor/wasm-graphviz-1.29.2/index.js")


def referrer_policy(url: str) -> list[str]:
    """The Referrer-Policy headers of `url`'s answer, whatever its status."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.headers.get_all("Referrer-Policy") or []
    except urllib.error.HTTPError as refused:
        return refused.headers.get_all("Referrer-Policy") or []


@dataclass
class ClassServer:
    port: int
    log: Path
    database: str  # its store's URL: a probe writes rooms into it, as another replica would


@contextmanager
def class_server(folder: Path) -> Iterator[ClassServer]:
    """`python -m classroom.serve` with its shipped caps on loopback, its SQLite store and its log in `folder`."""
    log, port, database = folder / "serve.log", _free_port(), f"sqlite:///{folder / 'class.sqlite3'}"
    command = ["classroom.serve", "--host", "127.0.0.1", "--port", str(port), "--database", database]
    with serving(command, port, log, {k: v for k, v in os.environ.items() if k != PUBLIC_URL_ENV}):
        yield ClassServer(port, log, database)


@dataclass
class SchoolFigures:
    joined: int
    wrong_counted: int  # the wrong codes the store counted from the school's address
    refusals: Counter[str]  # what the students were told, when refused


def school_joins(classroom: Classroom, classes: int = 10, students: int = 30, wrong: int = 100) -> SchoolFigures:
    """A school's `classes` classes of `students` each, every class its own room, join at once from one address (in
    turn, a student of each class after another) while a client at that address sends `wrong` codes among them (the
    first before any student)."""
    rooms = [classroom.create_room("seed", 40).code for _ in range(classes)]
    refusals: Counter[str] = Counter()
    joined, everyone = 0, classes * students
    every = everyone // wrong
    for k in range(everyone):
        if k % every == 0 and k < every * wrong:
            with suppress(RoomNotFound):  # what a wrong code is told; anything else shows in the figures
                classroom.join(f"ZZZZ-{k:04d}", SCHOOL)
        try:
            classroom.join(rooms[k % classes], SCHOOL, f"student {k}")
            joined += 1
        except ClassroomError as refused:
            refusals[str(refused)] += 1
    return SchoolFigures(joined, classroom.wrong_guesses(client=SCHOOL), refusals)


@dataclass
class SeatFigures:
    seated: int
    refusals: Counter[str]


def seat_flood(classroom: Classroom, joins: int = 1_000) -> SeatFigures:
    """`joins` joins into one room (from many addresses: the seats' limit alone)."""
    room = classroom.create_room("seed", 40)
    refusals: Counter[str] = Counter()
    for k in range(joins):
        try:
            classroom.join(room.code, f"10.{k // 250}.{k % 250}.1")
        except ClassroomError as refused:
            refusals[str(refused)] += 1
    return SeatFigures(classroom.teacher_view(room.code, room.teacher_key).students, refusals)


@dataclass
class RoomFloodFigures:
    started: int
    refusals: Counter[str]
    other_teacher_started: bool  # a teacher at another address, after the flood


def room_flood(classroom: Classroom, tries: int = 60) -> RoomFloodFigures:
    """One client starts `tries` classes, a new page session each time; then a teacher elsewhere starts one."""
    refusals: Counter[str] = Counter()
    started = 0
    for k in range(tries):
        try:
            classroom.create_room("seed", 40, client=SCHOOL, session=f"flood {k}")
            started += 1
        except ClassroomError as refused:
            refusals[str(refused)] += 1
    try:
        other = bool(classroom.create_room("seed", 40, client="198.51.100.4", session="a teacher").code)
    except ClassroomError:
        other = False
    return RoomFloodFigures(started, refusals, other)


@dataclass
class EndFigures:
    traces_before: int  # answers, nicknames, seat and key hashes readable in the files before End
    traces_after: int
    wal_bytes_after: int


def on_disk(database: Path) -> bytes:
    """The database's bytes as anyone who can read its folder would: the file and its write-ahead log."""
    return b"".join(path.read_bytes() for path in (database, Path(f"{database}-wal")) if path.exists())


def a_class(classroom: Classroom, nickname: str, answer: str) -> tuple[str, str, list[bytes]]:
    """A class with two students who answered; its code, its teacher key and the traces to look for."""
    room = classroom.create_room("seed", 40)
    question = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
    seats = [classroom.join(room.code, f"10.0.0.{k}", f"{nickname}{k}").token for k in range(2)]
    for seat in seats:
        classroom.answer(room.code, seat, question.id, answer, right=False, mistake="forward_value")
    traces = [nickname.encode(), answer.encode(), secret_hash(room.teacher_key).encode()]
    return room.code, room.teacher_key, traces + [secret_hash(seat).encode() for seat in seats]


def end_a_class(database: Path, ours: Classroom, other_replica: Classroom) -> EndFigures:
    """A class run on one replica and ended on another (both on the SQLite file `database`): its traces on disk."""
    code, key, traces = a_class(ours, "Ada-Lovelace", "31337, 27182")
    other_replica.teacher_view(code, key)  # the other replica read it: its connection stays open in its pool
    before = sum(trace in on_disk(database) for trace in traces)
    other_replica.end_room(code, key)
    after = sum(trace in on_disk(database) for trace in traces)
    wal = Path(f"{database}-wal")
    return EndFigures(before, after, wal.stat().st_size if wal.exists() else 0)


@dataclass
class MalformedFigures:
    log_lines: int  # what the server's log grew by
    tracebacks: int


def malformed_steps(port: int, log: Path, source: str = "127.0.0.6") -> MalformedFigures:
    """Half-sent `POST /class/api/step` requests with a bad key (100 bytes announced, a few sent), and one whose body
    is not JSON."""
    before = log.stat().st_size
    head = "POST /class/api/step?room=ABCDEFGH HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Class-Teacher: {key}\r\n"
    for key, body in (("bad", b'{"step": 1'), ("", b'{"st'), ("x" * 65, b"{")):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        connection.sendall(f"{head.format(key=key)}Content-Length: 100\r\n\r\n".encode() + body)
        time.sleep(0.2)
        connection.close()
    connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    connection.sendall(f"{head.format(key='bad')}Content-Length: 9\r\nConnection: close\r\n\r\nnot json!".encode())
    connection.recv(4096)
    connection.close()
    time.sleep(1.0)  # whatever the server would log about them, it has
    grown = log.read_bytes()[before:].decode(errors="replace")
    return MalformedFigures(grown.count("\n"), grown.count("Traceback"))


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
        page_s = timed_get(port, "/class", "127.0.0.3")  # while the server works through the flood
        start = time.monotonic()
        other_status, _ = _follow(port, code, other_seat, "127.0.0.3", "")
        other_s = time.monotonic() - start
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


@dataclass
class TrickleFigures:
    closed_s: list[float]  # each request, from its head to the server closing it (inf: still open when given up)
    answers: Counter[str]  # what each was answered before it was closed: "408", ..., or "" (closed without a word)
    health_s: list[float]  # `/_stcore/health` meanwhile, from the trickling address and another (99: not answered)


def trickled_bodies(
    port: int, requests: int = 20, source: str = "127.0.0.7", every_s: float = 0.5, give_up_s: float = 40.0
) -> TrickleFigures:
    """Issue 54, finding 5: `requests` answers (`POST /class/api/answer`, 2,000 bytes announced) from one address, each
    sending its body one byte every `every_s` seconds, until the server closes them; meanwhile health is asked from
    that address and from another, once a second."""
    head = (
        f"POST /class/api/answer?room=ABCDEFGH HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Class-Seat: whatever\r\n"
        "Content-Type: application/json\r\nContent-Length: 2000\r\n\r\n{"
    ).encode()
    held: dict[socket.socket, float] = {}
    for _ in range(requests):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        connection.sendall(head)
        held[connection] = time.monotonic()
        connection.setblocking(False)
    closed_s = {connection: float("inf") for connection in held}
    received = {connection: b"" for connection in held}
    health: list[float] = []
    start = time.monotonic()
    try:
        while any(s == float("inf") for s in closed_s.values()) and time.monotonic() - start < give_up_s:
            for connection, sent_at in held.items():
                if closed_s[connection] != float("inf"):
                    continue
                try:
                    while chunk := connection.recv(4096):
                        received[connection] += chunk
                    closed_s[connection] = time.monotonic() - sent_at  # b"": the server closed it
                except BlockingIOError:
                    try:
                        connection.send(b" ")  # JSON allows blanks: the body stays valid, only slow
                    except OSError:
                        closed_s[connection] = time.monotonic() - sent_at
                except OSError:
                    closed_s[connection] = time.monotonic() - sent_at
            if len(health) < 2 * (time.monotonic() - start):
                health += [timed_get(port, "/_stcore/health", address) for address in (source, "127.0.0.8")]
            time.sleep(every_s)
    finally:
        for connection in held:
            connection.close()
    answers = Counter(
        data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "" for data in received.values()
    )
    return TrickleFigures(list(closed_s.values()), answers, health)
