"""Run N replicas of the app behind nginx, with session affinity: `python deploy/replicas.py --replicas 3`.

Each replica is a plain `streamlit run app.py` on its own loopback port; nginx (`apt-get install nginx`)
listens on `--port` and does the balancing (deploy/nginx.conf.template). The script checks every
replica's `/_stcore/health` before it opens the door, then every few seconds, and starts a replica again
if its process ended. Stop everything with Ctrl-C.
"""

from __future__ import annotations

import argparse
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


class DeployError(RuntimeError):
    """A replica or nginx did not start; the message says which and why."""


@dataclass
class Replica:
    port: int
    log: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, extra_args: tuple[str, ...] = ()) -> None:
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port),
                 "--server.address", "127.0.0.1", "--server.headless", "true", *extra_args],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def healthy(self) -> bool:
        try:
            return urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2).read() == b"ok"
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
        """Start again every replica whose process ended. Returns their ports."""
        restarted = []
        for replica in self.replicas:
            if replica.process is None or replica.process.poll() is not None:
                replica.start(self.extra_args)
                restarted.append(replica.port)
        return restarted


def nginx_config(listen: int, ports: list[int], prefix: Path) -> str:
    servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=10s;" for port in ports)
    return TEMPLATE.read_text().format(prefix=prefix, servers=servers, listen=f"127.0.0.1:{listen}")


def wait_until(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise DeployError(f"{what} did not come up within {seconds:g} s")
        time.sleep(0.3)


@contextmanager
def deployment(
    replicas: int = 3, port: int = 8080, first_replica_port: int = 8601, extra_args: tuple[str, ...] = ()
) -> Iterator[Deployment]:
    """N replicas and nginx in front of them, all on loopback; everything stops on exit."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise DeployError("nginx is not installed: apt-get install nginx")
    prefix = Path(tempfile.mkdtemp(prefix="autodiff-deploy-"))
    running = Deployment(
        f"http://127.0.0.1:{port}",
        [Replica(first_replica_port + k, prefix / f"replica-{k}.log") for k in range(replicas)],
        prefix,
        extra_args=extra_args,
    )
    try:
        for replica in running.replicas:
            replica.start(extra_args)
        for replica in running.replicas:
            wait_until(replica.healthy, 90, f"replica on port {replica.port} (log: {replica.log})")
        (prefix / "nginx.conf").write_text(nginx_config(port, [r.port for r in running.replicas], prefix))
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
    parser.add_argument("--first-replica-port", type=int, default=8601)
    args = parser.parse_args()
    try:
        with deployment(args.replicas, args.port, args.first_replica_port) as running:
            print(f"{len(running.replicas)} replicas behind nginx at {running.url} (logs in {running.prefix})")
            while True:
                time.sleep(5)
                for port in running.supervise_once():
                    print(f"replica on port {port} had stopped: started again")
    except DeployError as error:
        sys.exit(f"Could not start: {error}")
    except KeyboardInterrupt:
        print("stopped")


if __name__ == "__main__":
    main()
