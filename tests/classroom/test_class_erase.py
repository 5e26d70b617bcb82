"""Issue 41: an ended class leaves nothing readable on disk. On a real SQLite file (the default store), with a second
store open on it as another replica would be: after End, and after the sweep of a class past its 12 hours, no answer,
nickname, seat hash or teacher key hash is in the bytes of the database file or its write-ahead log. And the attempts
table keeps an HMAC of each address under the store's own random key, never its plain SHA-256."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from class_clock import Clock
from sqlalchemy import select

from classroom.rooms import Classroom
from classroom.store import Store, attempts, open_store
from tests.browser.class_probes import a_class, end_a_class, on_disk


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "class.sqlite3"


@pytest.fixture
def stores(database: Path) -> Iterator[tuple[Store, Store]]:
    ours, other_replica = open_store(f"sqlite:///{database}"), open_store(f"sqlite:///{database}")
    yield ours, other_replica
    ours.close()
    other_replica.close()


def test_after_end_no_answer_nickname_or_seat_hash_is_in_the_files(database, stores):
    classroom, replica = Classroom(stores[0]), Classroom(stores[1])
    kept = a_class(classroom, "Grace-Hopper", "16180, 33988")  # another class goes on
    figures = end_a_class(database, classroom, replica)
    assert (figures.traces_before, figures.traces_after, figures.wal_bytes_after) == (
        5,
        0,
        0,
    )  # 5: what the finding read
    assert classroom.teacher_view(kept[0], kept[1]).students == 2  # the other class is whole
    assert all(trace in on_disk(database) for trace in kept[2])


def test_after_the_sweep_no_trace_of_the_class_is_in_the_files(database, stores):
    clock = Clock()
    classroom = Classroom(stores[0], clock=clock)
    _, _, traces = a_class(classroom, "Ada-Lovelace", "31337, 27182")
    clock.now += 12 * 3600 + 1
    assert classroom.sweep() == 1
    left = on_disk(database)
    assert [trace for trace in traces if trace in left] == []


def test_addresses_are_kept_as_an_hmac_under_the_stores_own_key(database, stores, tmp_path):
    classroom = Classroom(stores[0])
    with pytest.raises(Exception, match="No class has this code"):
        classroom.join("ZZZZ-ZZZZ", "192.0.2.44")
    with stores[0].read() as conn:
        kept = conn.execute(select(attempts.c.client)).scalar_one()
    assert kept == classroom.client_hash("192.0.2.44") == Classroom(stores[1]).client_hash("192.0.2.44")  # replicas
    assert kept != hashlib.sha256(b"192.0.2.44").hexdigest()
    elsewhere = open_store(f"sqlite:///{tmp_path / 'another.sqlite3'}")
    try:
        assert Classroom(elsewhere).client_hash("192.0.2.44") != kept  # each store its own random key
    finally:
        elsewhere.close()
