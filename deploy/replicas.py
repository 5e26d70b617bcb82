"""Run N replicas of the app behind nginx, with session affinity: `python deploy/replicas.py --replicas 3`.

Each replica is a plain `streamlit run app.py` on its own loopback port; nginx (`apt-get install nginx`)
listens on `--listen`:`--port` and does the balancing and the per-client limits (deploy/nginx.conf.template).
The machine's cores are shared out: each replica runs (cores / replicas) Playground workers, so the
deployment as a whole runs one per core. The script checks every replica's `/_stcore/health` before it
opens the door, then every few seconds, and starts a replica again if its process ended or its health
stopped answering (a hung replica). Stop everything with Ctrl-C.

Class mode: every replica must use one class store, or students hashed onto different replicas are in different
rooms. `--database postgresql+psycopg://...` gives each replica that URL (`streamlit run app.py ... -- --database
URL`); without it they share the SQLite file in data/, which only replicas on this machine can.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
LOOPBACK = "127.0.0.1"  # the default: this machine only; `--listen 0.0.0.0` serves a classroom's network
PER_CLIENT = 64  # connections one client address may hold (a tab: one WebSocket and a few requests)
CONNECTIONS = 8192  # per nginx worker process: far above what the per-client limit lets one client take
HEALTH_SECONDS = 5.0  # a health check slower than this failed...
HUNG_AFTER = 3  # ... and a replica whose checks failed this many times in a row is restarted
FAIL_TIMEOUT_S = 10  # nginx sends nobody to a replica for this long after a request to it failed
REPLICA_VARIABLE = "AUTODIFF_REPLICA"  # a replica's name (the app compares it with the st_replica cookie)


class DeployError(RuntimeError):
    """A replica or nginx did not start; the message says which and why."""


@dataclass
class Replica:
    port: int
    log: Path
    name: str = "replica-0"
    workers: int = 1  # Playground worker processes: this replica's share of the cores
    database: str | None = None  # the class store's URL (None: the SQLite file in data/)
    process: subprocess.Popen | None = None
    failed_checks: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, extra_args: tuple[str, ...] = ()) -> None:
        env = {**os.environ, REPLICA_VARIABLE: self.name, "PLAYGROUND_WORKERS": str(self.workers)}
        script_args = ("--", "--database", self.database) if self.database else ()  # the app's, after Streamlit's
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streamlit",
                    "run",
                    "app.py",
                    "--server.port",
                    str(self.port),
                    "--server.address",
                    "127.0.0.1",
                    "--server.headless",
                    "true",
                    *extra_args,
                    *script_args,
                ],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self.failed_checks = 0

    def healthy(self, seconds: float = 2.0) -> bool:
        try:
            return urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=seconds).read() == b"ok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@dataclass
class Deployment:
    url: str
    replicas: list[Replica]
    prefix: Path
    nginx: subprocess.Popen | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def supervise_once(self) -> list[int]:
        """Start again every replica whose process ended, or whose health did not answer HUNG_AFTER checks in
        a row (each within HEALTH_SECONDS). Returns their ports."""
        restarted = []
        for replica in self.replicas:
            if replica.process is not None and replica.process.poll() is None:
                replica.failed_checks = 0 if replica.healthy(HEALTH_SECONDS) else replica.failed_checks + 1
                if replica.failed_checks < HUNG_AFTER:
                    continue
                replica.process.kill()  # hung: it would not answer a terminate either
                replica.process.wait(10)
            replica.start(self.extra_args)
            restarted.append(replica.port)
        return restarted


def nginx_config(
    port: int, replicas: list[Replica], prefix: Path, listen: str = LOOPBACK, per_client: int = PER_CLIENT
) -> str:
    servers = "\n".join(
        f"        server 127.0.0.1:{r.port} max_fails=1 fail_timeout={FAIL_TIMEOUT_S}s;" for r in replicas
    )
    class_servers = "\n".join(f"        server 127.0.0.1:{r.port} max_fails=0;" for r in replicas)
    names = "\n".join(f'        "~(^|, )127\\.0\\.0\\.1:{r.port}$" "{r.name}";' for r in replicas)
    return TEMPLATE.read_text().format(
        prefix=prefix,
        servers=servers,
        class_servers=class_servers,
        replica_names=names,
        listen=f"{listen}:{port}",
        per_client=per_client,
        connections=CONNECTIONS,
        open_files=2 * CONNECTIONS + 64,
        static_root=ROOT / "static",
    )


def workers_per_replica(replicas: int, cores: int | None = None) -> int:
    """Playground workers for each replica, so that all of them together run one per core."""
    return max(1, (cores or os.cpu_count() or 1) // replicas)


def wait_until(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise DeployError(f"{what} did not come up within {seconds:g} s")
        time.sleep(0.3)


@contextmanager
def deployment(
    replicas: int = 3,
    port: int = 8080,
    first_replica_port: int = 8601,
    extra_args: tuple[str, ...] = (),
    listen: str = LOOPBACK,
    per_client: int = PER_CLIENT,
    database: str | None = None,
) -> Iterator[Deployment]:
    """N replicas on loopback and nginx in front of them on `listen`, all on the class store `database` (None: the
    SQLite file in data/); everything stops on exit."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise DeployError("nginx is not installed: apt-get install nginx")
    prefix = Path(tempfile.mkdtemp(prefix="autodiff-deploy-"))
    workers = workers_per_replica(replicas)
    running = Deployment(
        f"http://127.0.0.1:{port}",
        [
            Replica(first_replica_port + k, prefix / f"replica-{k}.log", f"replica-{k}", workers, database)
            for k in range(replicas)
        ],
        prefix,
        extra_args=extra_args,
    )
    try:
        for replica in running.replicas:
            replica.start(extra_args)
        for replica in running.replicas:
            wait_until(replica.healthy, 90, f"replica on port {replica.port} (log: {replica.log})")
        (prefix / "nginx.conf").write_text(nginx_config(port, running.replicas, prefix, listen, per_client))
        with open(prefix / "nginx.out", "w") as err:
            running.nginx = subprocess.Popen(
                [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf")], stdout=subprocess.DEVNULL, stderr=err
            )
        wait_until(lambda: _answers(running.url), 20, f"nginx on port {port} (log: {prefix}/error.log)")
        yield running
    finally:
        if running.nginx is not None:
            running.nginx.terminate()
            running.nginx.wait(10)
        for replica in running.replicas:
            replica.stop()


def _answers(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3, help="Streamlit processes (about one per core)")
    parser.add_argument("--port", type=int, default=8080, help="where nginx listens (open this in a browser)")
    parser.add_argument(
        "--listen",
        default=LOOPBACK,
        help="nginx's address: 127.0.0.1 (this machine only) or 0.0.0.0 (a classroom network)",
    )
    parser.add_argument(
        "--per-client",
        type=int,
        default=PER_CLIENT,
        help="connections one client address may hold (raise it for a class behind one NAT)",
    )
    parser.add_argument(
        "--public-url",
        help="the address students open, such as https://class.example.org behind a proxy (default: with --listen "
        "0.0.0.0, this machine's network address)",
    )
    parser.add_argument("--first-replica-port", type=int, default=8601)
    parser.add_argument(
        "--database",
        help="the class store every replica shares, such as postgresql+psycopg://user@host/db "
        "(default: the SQLite file in data/, for replicas on this machine only)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # run as a script: the app's packages are beside this folder
    from classroom.serve import PUBLIC_URL_ENV, students_address

    # the join links the replicas' Class pages show: never this machine's loopback (ui/join_address.py)
    address, why = students_address(args.listen, args.port, args.public_url or os.environ.get(PUBLIC_URL_ENV))
    if address is not None:
        os.environ[PUBLIC_URL_ENV] = address
    options = (args.replicas, args.port, args.first_replica_port, (), args.listen, args.per_client, args.database)
    try:
        with deployment(*options) as running:
            print(f"{len(running.replicas)} replicas behind nginx at {running.url} (logs in {running.prefix})")
            print(f"Students open {address}/class ({why})." if address else f"Students cannot open it: {why}.")
            while True:
                time.sleep(5)
                for port in running.supervise_once():
                    print(f"replica on port {port} had stopped or hung: started again")
    except DeployError as error:
        sys.exit(f"Could not start: {error}")
    except KeyboardInterrupt:
        print("stopped")


if __name__ == "__main__":
    main()
