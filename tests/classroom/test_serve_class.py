"""Issue 41's class-mode findings against `python -m classroom.serve` with its shipped caps, a real process on its own
SQLite store (the test writes the room into the same file, as another replica would): 1,100 follows on one seat, as
the red team sent them without nginx, leave another student following and the Class page opening within 1.5 s."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from classroom.rooms import Classroom
from classroom.routes import MAX_WAITING_PER_SECRET
from classroom.serve import PUBLIC_URL_ENV
from classroom.store import open_store
from tests.browser.class_probes import follow_flood
from tests.browser.harness import FIRST_RENDER_GOAL_S, ROOT, _free_port, wait_until_up


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    folder = tmp_path_factory.mktemp("serve-class")
    log, port, database = folder / "serve.log", _free_port(), f"sqlite:///{folder / 'class.sqlite3'}"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "classroom.serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--database",
                database,
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != PUBLIC_URL_ENV},
        )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/_stcore/health", server, log, "classroom.serve")
        yield port, database
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_1100_follows_on_one_seat_leave_another_student_following_and_the_page_opening(served):
    port, database = served
    store = open_store(database)
    try:
        classroom = Classroom(store)
        room = classroom.create_room("seed", 40)
        seat, other = (classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2))
        figures = follow_flood(port, room.code, seat, other)
    finally:
        store.close()
    assert figures.statuses == {"waiting": MAX_WAITING_PER_SECRET, "429": 1_100 - MAX_WAITING_PER_SECRET}, figures
    assert figures.other_status == 200 and figures.other_s < FIRST_RENDER_GOAL_S, figures
    assert figures.page_s < FIRST_RENDER_GOAL_S, figures
