"""The class mode's store: one schema in SQLAlchemy Core, on an SQLite file or PostgreSQL.

`metadata` always describes the newest schema; `MIGRATIONS` is the ordered list of steps that builds it, applied
at `open_store` under a lock, so several processes opening one database at once apply each step exactly once.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    literal,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
DEFAULT_URL = f"sqlite:///{DATA_DIR / 'classroom.sqlite3'}"
_log = logging.getLogger(__name__)
CHECKPOINT_TRIES = 50  # 0.1 s apart: a reader holds the log for a query's time, a few milliseconds

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("description", String(200), nullable=False),
)

rooms = Table(
    "rooms",
    metadata,
    Column("code", String(16), primary_key=True),
    Column("teacher_key_hash", String(64), nullable=False),
    Column("replay", String(200), nullable=False),  # which replay the room follows (a lesson or a Playground link)
    Column("replay_events", Integer, nullable=False),
    Column("created_at", Float, nullable=False),  # seconds since the epoch
)

room_steps = Table(
    "room_steps",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("step", Integer, nullable=False),
    Column("changed_at", Float, nullable=False),
)

students = Table(
    "students",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), nullable=False, index=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("nickname", String(40), nullable=True),
    Column("joined_at", Float, nullable=False),
)

questions = Table(
    "questions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("kind", String(40), nullable=False),
    Column("key", String(200), nullable=False),  # which node or value is asked, in the kind's own terms
    Column("phase", String(16), nullable=False),  # vote1, discuss, vote2, revealed
    Column("opened_at", Float, nullable=False),
)

answers = Table(
    "answers",
    metadata,
    Column("question", Integer, ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True),
    Column("student", Integer, ForeignKey("students.id", ondelete="CASCADE"), primary_key=True),
    Column("vote", Integer, primary_key=True),
    Column("answer", String(200), nullable=False),
    Column("is_right", Boolean, nullable=True),
    Column("mistake", String(80), nullable=True),
    Column("answered_at", Float, nullable=False),
)

# Two numbers per room that changes raise, whichever replica made them: a push route compares integers to know
# whom to tell. `revision`: what every student sees (the step, a question and its phase); `tally`: what only the
# teacher sees (answers, joins), so that sixty answers do not wake sixty students.
room_revisions = Table(
    "room_revisions",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("revision", Integer, nullable=False),
    Column("tally", Integer, nullable=False),
)

# A Playground program a room follows (a lesson's room names its program in `rooms.replay` instead): each server
# runs it once in its own worker pool to replay it.
room_programs = Table(
    "room_programs",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("source", Text, nullable=False),
)

# What a question has beyond its first schema (a table of its own: the first migration keeps its first form):
# `closes_at`, the vote's time limit (answers after it are refused); `transfer_of`, the revealed question whose
# transfer this one is (an equivalent question answered alone once, after the discussion: the report's third column).
question_details = Table(
    "question_details",
    metadata,
    Column("question", Integer, ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True),
    Column("closes_at", Float, nullable=True),  # seconds since the epoch
    Column("transfer_of", Integer, ForeignKey("questions.id", ondelete="CASCADE"), nullable=True),
)

# When a room's teacher was last seen (their stage's long poll, a press): the cap on open rooms counts only rooms a
# teacher still follows, so rooms started and left (a flood among them) do not keep a real teacher out for 12 hours.
room_teachers = Table(
    "room_teachers",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("seen_at", Float, nullable=False),  # seconds since the epoch
)

# The seed a room draws its program's numbers from (ui/class_replays.py): made when the room is created, so no public
# lesson page, export or other class holds its answers. A room made before this table has none: the lesson's numbers.
room_seeds = Table(
    "room_seeds",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("seed", String(32), nullable=False),  # 128 random bits, in hex
)

# The rooms whose teacher closed them to new seats once everyone was in (a row while closed): a join is refused.
room_locks = Table(
    "room_locks",
    metadata,
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), primary_key=True),
    Column("locked_at", Float, nullable=False),  # seconds since the epoch
)

# Joins and wrong room codes, per client (a hash of its address): shared by replicas, so a limit holds across them.
attempts = Table(
    "attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(8), nullable=False),  # join, guess; room, session: a room started (by address, by session)
    Column("client", String(64), nullable=False),
    Column("at", Float, nullable=False),
    Column("room", String(16), nullable=True),  # the room joined; None for a guess
    Index("attempts_by_client", "client", "kind", "at"),  # each join counts a client's recent attempts
)


# The random key client addresses are hashed with (HMAC) in `attempts`: a plain hash of an address is undone by hashing
# all 2**32 IPv4 addresses. In the store, so that every replica hashes alike and a limit holds across them.
hash_keys = Table(
    "hash_keys",
    metadata,
    Column("name", String(16), primary_key=True),
    Column("key", String(64), nullable=False),
)


def _create_first_schema(conn: Connection) -> None:
    # The tables as `metadata` has them today; once a later step alters one, this step must keep its first form.
    metadata.create_all(conn, tables=[rooms, room_steps, students, questions, answers, attempts])


def _add_room_revisions(conn: Connection) -> None:
    metadata.create_all(conn, tables=[room_revisions])
    existing = select(rooms.c.code, literal(0), literal(0))
    conn.execute(room_revisions.insert().from_select(["room", "revision", "tally"], existing))


def _add_room_teachers(conn: Connection) -> None:
    metadata.create_all(conn, tables=[room_teachers])
    existing = select(rooms.c.code, rooms.c.created_at)
    conn.execute(room_teachers.insert().from_select(["room", "seen_at"], existing))


def _add_hash_key(conn: Connection) -> None:
    metadata.create_all(conn, tables=[hash_keys])
    conn.execute(hash_keys.insert().values(name="clients", key=secrets.token_hex(32)))
    conn.execute(attempts.delete())  # their plain hashes: a minute's rate limits start again


# Append only: a deployed database has run the steps before its version; a new step alters what they made.
MIGRATIONS: list[tuple[str, Callable[[Connection], None]]] = [
    ("rooms, their current step, students, questions, answers, join and guess attempts", _create_first_schema),
    ("each room's revisions, raised by its changes (for the push route)", _add_room_revisions),
    ("a Playground program a room follows", lambda conn: metadata.create_all(conn, tables=[room_programs])),
    (
        "a vote's time limit and a transfer's question",
        lambda conn: metadata.create_all(conn, tables=[question_details]),
    ),
    ("when each room's teacher was last seen", _add_room_teachers),
    ("the random key client addresses are hashed with", _add_hash_key),
    ("the seed each room draws its numbers from", lambda conn: metadata.create_all(conn, tables=[room_seeds])),
    ("the rooms closed to new seats", lambda conn: metadata.create_all(conn, tables=[room_locks])),
]


class Store:
    """An engine and the transactions the domain runs on it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Connection]:
        """One transaction; `lock` serializes it with others holding the same name (SQLite's writes already are)."""
        with self.engine.begin() as conn:
            if lock is not None and self.engine.dialect.name == "postgresql":
                key = int.from_bytes(hashlib.sha256(lock.encode()).digest()[:8], "big", signed=True)
                conn.execute(select(func.pg_advisory_xact_lock(key)))
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """One transaction that only reads: on SQLite it does not wait for the write lock (WAL readers never do)."""
        with self.engine.connect() as conn:
            conn.execution_options(classroom_read=True)
            with conn.begin():
                yield conn

    def upsert(self, conn: Connection, table: Table, values: dict[str, Any], update: list[str]) -> None:
        """Insert a row, or update the `update` columns of the row with the same primary key."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        statement = dialect.insert(table).values(**values)
        keys = [column.name for column in table.primary_key]
        conn.execute(statement.on_conflict_do_update(index_elements=keys, set_={c: values[c] for c in update}))

    def forget_deleted(self) -> None:
        """After rows were deleted: on SQLite, leave none of their bytes in the database's files. The file is rebuilt
        (VACUUM) and the write-ahead log, which holds every page as it was written, copied in and cut to nothing; a
        reader in the way (another replica's poll) is waited for a few seconds. PostgreSQL's files are its own."""
        if self.engine.dialect.name != "sqlite":
            return
        raw = self.engine.raw_connection()  # outside SQLAlchemy's transactions: VACUUM cannot run in one
        try:
            cursor = raw.cursor()
            cursor.execute("VACUUM")
            for _ in range(CHECKPOINT_TRIES):
                if cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:  # 1: a reader was in the way
                    return
                time.sleep(0.1)
            _log.warning("Deleted class data may stay in the SQLite log until the next sweep: a reader held it")
        except sqlite3.OperationalError:  # locked past the busy timeout: the rows are gone, the sweep tries again
            _log.warning("Deleted class data may stay in the SQLite file until the next sweep", exc_info=True)
        finally:
            raw.close()

    def version(self) -> int:
        with self.read() as conn:
            return int(conn.execute(select(func.coalesce(func.max(schema_version.c.version), 0))).scalar_one())

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" below opens transactions, not the driver
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=10000")  # first: switching to WAL waits for other openers too
        cursor.execute("PRAGMA journal_mode=WAL")  # readers and one writer at once, across processes
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA secure_delete=ON")  # a deleted row's bytes are overwritten, not left on a free page
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # IMMEDIATE takes the write lock up front: a read-then-write transaction never fails to upgrade mid-way.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("classroom_read") else "BEGIN IMMEDIATE")

    return engine


def open_store(url: str | None = None) -> Store:
    """Open (and migrate) the store at `url`: an SQLite file in data/ by default, or `postgresql://...`."""
    url = url or DEFAULT_URL
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite"):
        if url == DEFAULT_URL:
            DATA_DIR.mkdir(exist_ok=True)
        engine = _sqlite_engine(url)
    else:
        # a server's route threads and pages share the pool: enough connections that none is opened per request
        engine = create_engine(url, pool_pre_ping=True, pool_size=20, max_overflow=20)
    store = Store(engine)
    _migrate(store)
    return store


def _migrate(store: Store) -> None:
    with store.transaction(lock="classroom.migrate") as conn:
        metadata.create_all(conn, tables=[schema_version])
        done = conn.execute(select(func.coalesce(func.max(schema_version.c.version), 0))).scalar_one()
        for version, (description, step) in enumerate(MIGRATIONS, start=1):
            if version > done:
                step(conn)
                conn.execute(schema_version.insert().values(version=version, description=description))
