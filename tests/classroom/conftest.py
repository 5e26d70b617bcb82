"""Every classroom test runs on an SQLite file and on a real PostgreSQL cluster this session starts and removes."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from class_clock import Clock
from sqlalchemy import create_engine, text

from classroom.rooms import Classroom, Limits
from classroom.store import Store, open_store
from tests.postgres import postgres_bin_dir, postgres_cluster


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A throwaway cluster on loopback; yields the URL of its `postgres` database."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL's binaries are not installed (apt-get install postgresql; .ci/run does)")
    with postgres_cluster(bin_dir) as url:
        yield url


_databases = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a new SQLite file, or a new database in the session's cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'class.sqlite3'}"
    server: str = request.getfixturevalue("postgres_server")
    name = f"class_{os.getpid()}_{next(_databases)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return server.rsplit("/", 1)[0] + "/" + name


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
