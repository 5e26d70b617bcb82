"""A throwaway PostgreSQL cluster on loopback (initdb and pg_ctl from Debian's `postgresql`), for the class tests and
bench/class_mode.py: `postgres_cluster`, the session fixture `postgres_server` (the tests' one cluster), and
`new_database` for an empty database in it."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

PORTS = range(19000, 19400)  # this project's loopback range for the class tests (below the ephemeral range)
PG_USER = "postgres"  # Debian's package makes it; PostgreSQL refuses to run as root


def worker_share(ports: range) -> range:
    """This pytest-xdist worker's own slice of `ports` (all of it without xdist), so that two workers starting a
    cluster at once never probe the same free port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # xdist names its workers gw0, gw1, ...
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index, share = int(worker.removeprefix("gw")), len(ports) // count
    return ports[index * share : (index + 1) * share]


_turns = itertools.count(os.getpid())  # each call tries the next block: two servers asked for in a row get two
BLOCK = 8  # ports a call steps over: a deployment's replicas take the ones after the port it was given


def free_port(ports: range = PORTS) -> int:
    """A free loopback port of this worker's share of `ports`, the first of a block of BLOCK. Keep `ports` below
    Linux's ephemeral range (32768-60999), where the kernel picks the source ports of outgoing connections: there, a
    port found free can be taken by a client socket before the server binds it."""
    share = worker_share(ports)
    for _ in range(max(1, len(share) // BLOCK)):
        port = share[next(_turns) * BLOCK % max(1, len(share) - BLOCK + 1)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {share.start}-{share.stop - 1}")


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *command] if os.geteuid() == 0 else command


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries, or None when none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextmanager
def postgres_cluster(bin_dir: Path, ports: range = PORTS) -> Iterator[str]:
    """A throwaway cluster on loopback, on a free port of `ports`; yields the URL of its `postgres` database."""
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", PG_USER], check=True)
    folder = Path(tempfile.mkdtemp(prefix="classroom-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, PG_USER)
    data, port = folder / "data", free_port(ports)
    run = lambda *args: subprocess.run(_as_owner([str(bin_dir / args[0]), *args[1:]]), check=True, capture_output=True)
    run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200"
    run("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The tests' cluster, one per session; yields the URL of its `postgres` database."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL's binaries are not installed (apt-get install postgresql; .ci/run does)")
    with postgres_cluster(bin_dir) as url:
        yield url


_databases = itertools.count()


def new_database(server: str) -> str:
    """The URL of a new, empty database in the cluster at `server` (a `postgres_server` URL)."""
    name = f"class_{os.getpid()}_{next(_databases)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return server.rsplit("/", 1)[0] + "/" + name
