"""Every classroom test runs on an SQLite file and on a real PostgreSQL cluster this session starts and removes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from class_clock import Clock
from postgres import new_database

from classroom.rooms import Classroom, Limits
from classroom.store import Store, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a new SQLite file, or a new database in the session's cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'class.sqlite3'}"
    return new_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_classroom(store: Store, clock: Clock) -> Callable[..., Classroom]:
    return lambda **limits: Classroom(store, Limits(**limits), clock=clock)


@pytest.fixture
def classroom(make_classroom: Callable[..., Classroom]) -> Classroom:
    return make_classroom()
