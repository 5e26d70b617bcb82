"""One server's class mode: its store (opened once per process, shared by the pages and the push route) and the
watcher that tells waiting visitors when their room changed.

The watcher polls one query for every room someone on this server is waiting on (not one per visitor), a few times a
second, so a change made on any replica reaches this server's visitors within one period; a change this server's
route made (a teacher's press, an answer) is polled at once (`nudge`), so the press reaches the students on the
teacher's own replica without waiting for the period.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import anyio

from classroom.rooms import Classroom
from classroom.store import open_store

DATABASE_ENV = "CLASSROOM_DATABASE"  # the store's URL for a server started without --database
POLL_PERIOD_S = 0.25  # the longest a change made on another replica waits (each poll is one query)
SWEEP_PERIOD_S = 600.0
_log = logging.getLogger(__name__)

_lock = threading.Lock()
_classroom: Classroom | None = None


def database_url(argv: Sequence[str] | None = None) -> str | None:
    """`--database URL` (or `--database=URL`) among the script's arguments, else $CLASSROOM_DATABASE, else None
    (the SQLite file in data/)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for k, arg in enumerate(args):
        if arg == "--database" and k + 1 < len(args):
            return args[k + 1]
        if arg.startswith("--database="):
            return arg.split("=", 1)[1]
    return os.environ.get(DATABASE_ENV) or None


def classroom() -> Classroom:
    """This process's classroom, its store opened (and migrated) on first use."""
    global _classroom
    with _lock:
        if _classroom is None:
            _classroom = Classroom(open_store(database_url()))
        return _classroom


Revisions = tuple[int, int]  # a room's (revision, tally): see classroom.store.room_revisions


class Evicted(Exception):
    """A waiting visitor gave its place back to another room's (`RoomWatcher.evict`): its page asks again."""


class RoomWatcher:
    """Waiting visitors per room, woken when the room's revisions change (or it ends)."""

    def __init__(self, read: Callable[[list[str]], dict[str, Revisions]], period_s: float = POLL_PERIOD_S) -> None:
        self.read = read
        self.period_s = period_s
        self.known: dict[str, Revisions | None] = {}  # None: the room ended
        self.waiting: Counter[str] = Counter()
        self.changed: dict[str, asyncio.Event] = {}
        self.evicting: Counter[str] = Counter()  # places a room gives back: that many of its visitors stop waiting
        self.nudged = asyncio.Event()  # a change made here: poll now

    @property
    def visitors(self) -> int:
        return sum(self.waiting.values())

    async def wait(self, code: str, moved: Callable[[Revisions], bool], timeout_s: float) -> Revisions | None:
        """The room's revisions once `moved` says they differ from what the visitor has (at once if they already
        do), or when `timeout_s` passes; None when the room ended. Raises `Evicted` when its place is given back."""
        self.waiting[code] += 1
        try:
            with anyio.move_on_after(timeout_s):
                while True:
                    if self.evicting[code]:
                        self.evicting[code] -= 1
                        raise Evicted
                    if code in self.known:
                        current = self.known[code]
                        if current is None or moved(current):
                            return current
                    await self.changed.setdefault(code, asyncio.Event()).wait()
            return self.known.get(code)
        finally:
            self.waiting[code] -= 1
            if not self.waiting[code]:
                del self.waiting[code]
                self.evicting.pop(code, None)
                self.known.pop(code, None)  # nobody here follows it: stop polling it, and forget it
                self.changed.pop(code, None)

    async def poll_once(self) -> None:
        codes = list(self.waiting)
        if not codes:
            return
        found = await anyio.to_thread.run_sync(self.read, codes)
        for code in codes:
            now = found.get(code)
            if code not in self.known or self.known[code] != now:
                self.known[code] = now
                event = self.changed.pop(code, None)
                if event is not None:
                    event.set()

    def evict(self, code: str) -> None:
        """One of room `code`'s visitors stops waiting (its page asks again at once), giving its place back."""
        self.evicting[code] += 1
        event = self.changed.pop(code, None)
        if event is not None:
            event.set()

    def nudge(self) -> None:
        """This server changed a room: poll now rather than at the end of the period."""
        self.nudged.set()

    async def run(self) -> None:
        while True:
            self.nudged.clear()
            try:
                await self.poll_once()
            except Exception:  # a database hiccup (a restart, a lock): visitors wait one more period, not forever
                _log.warning("The class watcher could not read the rooms' revisions", exc_info=True)
            with anyio.move_on_after(self.period_s):
                await self.nudged.wait()


async def sweep_forever(rooms: Callable[[], Classroom] = classroom, period_s: float = SWEEP_PERIOD_S) -> None:
    """Delete rooms past their lifetime, every `period_s` (each replica sweeps; a sweep is idempotent)."""
    while True:
        try:
            await anyio.to_thread.run_sync(rooms().sweep)
        except Exception:
            _log.warning("The class sweep failed; it runs again in %s s", period_s, exc_info=True)
        await asyncio.sleep(period_s)
