"""The schema and its migrations, and several processes on one database seeing one room."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import inspect, select

from classroom.rooms import Classroom
from classroom.store import MIGRATIONS, metadata, open_store, room_steps, schema_version

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_empty_database_gets_every_table_and_every_migration_once(url: str) -> None:
    store = open_store(url)
    assert set(inspect(store.engine).get_table_names()) == set(metadata.tables)
    store.close()
    again = open_store(url)  # re-opening applies nothing twice
    with again.engine.connect() as conn:
        versions = list(conn.execute(select(schema_version.c.version)).scalars())
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    assert again.version() == len(MIGRATIONS)
    again.close()


def test_processes_opening_one_empty_database_at_once_migrate_it_once(url: str) -> None:
    opener = f"from classroom.store import open_store; print(open_store({url!r}).version())"
    with ThreadPoolExecutor(4) as pool:
        versions = list(pool.map(lambda _: _python(opener), range(4)))
    assert versions == [str(len(MIGRATIONS))] * 4
    store = open_store(url)
    with store.engine.connect() as conn:
        assert len(list(conn.execute(select(schema_version.c.version)))) == len(MIGRATIONS)
    store.close()


def test_a_student_joining_in_another_process_is_in_the_teachers_room(url: str) -> None:
    teacher = Classroom(open_store(url))
    room = teacher.create_room("lesson:chain-rule", 12)
    student = _python(
        "from classroom.rooms import Classroom; from classroom.store import open_store\n"
        f"classroom = Classroom(open_store({url!r}))\n"
        f"joined = classroom.join({room.code!r}, '10.0.0.7', 'Ada')\n"
        "print(joined.token)"
    )
    teacher.set_step(room.code, room.teacher_key, 5)
    assert teacher.teacher_view(room.code, room.teacher_key).students == 1
    other_engine = Classroom(open_store(url))  # a second engine (another replica) reads what the first wrote
    assert other_engine.student_view(room.code, student).step == 5
    teacher.store.close()
    other_engine.store.close()


def test_a_class_answering_at_once_loses_no_answer(url: str) -> None:
    teacher = Classroom(open_store(url))
    room = teacher.create_room("lesson:chain-rule", 3)
    question = teacher.open_question(room.code, room.teacher_key, 1, "grad", "x")

    def student(number: int) -> None:
        replica = Classroom(open_store(url))  # each on its own engine, as on separate replicas
        joined = replica.join(room.code, f"10.0.1.{number}")
        for answer in ("1", "2", str(number)):  # changed twice, the last kept
            replica.answer(room.code, joined.token, question.id, answer)
        replica.store.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(student, range(24)))
    (tally,) = teacher.teacher_view(room.code, room.teacher_key).questions
    assert tally.votes[1].answers == {str(number): 1 for number in range(24)}
    teacher.store.close()


def test_a_reader_does_not_wait_for_a_writer(url: str) -> None:
    teacher = Classroom(open_store(url))
    room = teacher.create_room("lesson:chain-rule", 3)
    joined = teacher.join(room.code, "10.0.0.1")
    student = Classroom(open_store(url))
    with teacher.store.transaction() as conn:  # a write in progress: on SQLite, it holds the file's write lock
        teacher.store.upsert(conn, room_steps, {"room": room.code, "step": 2, "changed_at": 0.0}, update=["step"])
        started = time.monotonic()
        assert student.student_view(room.code, joined.token).step == 0  # the last committed step
        # a reader that waited would wait for the lock until the busy timeout (10 s on SQLite; on PostgreSQL, until
        # this transaction ends, which it cannot while it waits): 5 s is five times the goal and still tells the two
        assert time.monotonic() - started < 5.0
    assert student.student_view(room.code, joined.token).step == 2
    teacher.store.close()
    student.store.close()
