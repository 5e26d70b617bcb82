"""A throwaway PostgreSQL cluster on loopback (initdb and pg_ctl from Debian's `postgresql`), for the class tests and
bench/class_mode.py."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PORTS = range(55400, 55500)  # this project's loopback range for the class tests
PG_USER = "postgres"  # Debian's package makes it; PostgreSQL refuses to run as root


def _free_port(ports: range = PORTS) -> int:
    for port in ports:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {ports.start}-{ports.stop - 1}")


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
    data, port = folder / "data", _free_port(ports)
    run = lambda *args: subprocess.run(_as_owner([str(bin_dir / args[0]), *args[1:]]), check=True, capture_output=True)
    run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200"
    run("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder)
