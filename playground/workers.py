"""Playground runs in worker processes: the process is the resource limit.

The server never executes a visitor's program. Each run goes to a small pool of warm worker processes
(at most one per core). A worker caps its own address space (`RLIMIT_AS`) and CPU time (`RLIMIT_CPU`)
before it runs anything; the server kills it on a hard wall-clock deadline (terminate, then kill) and
starts a fresh one. Only JSON comes back (`playground.plain`), never live objects or pickles. Runs queue
in arrival order, at most one waiting per session: a second Run replaces the waiting one.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from .interpreter import Limits, PlaygroundError, RunResult
from .plain import PlainDataError, loads, result_from_plain
from .worker_process import GRACE_SECONDS, MEMORY_HINT, RESULT_LIMIT, memory_message, write_frame

ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = Limits().process_bytes  # what a program may add to a worker's own footprint


TIME_HINT = "Use smaller tensors, fewer iterations, or smaller nested lists."


def time_message(seconds: float) -> str:
    return f"Your program ran longer than {seconds:g} seconds and was stopped."


@dataclass
class Job:
    """One run request and, once done, its result. `position()` says how many runs are ahead of it."""

    owner: str
    source: str
    limits: Limits
    backend: str
    result: RunResult | None = None
    state: str = "queued"  # queued -> running -> done, or replaced (a newer Run of the same session)
    done: threading.Event = field(default_factory=threading.Event)
    pool: WorkerPool | None = None

    def wait(self, timeout: float) -> bool:
        return self.done.wait(timeout)

    def position(self) -> int:
        """Runs ahead of this one in the queue (0 when it is next, or already running)."""
        return 0 if self.pool is None else self.pool.ahead_of(self)


class _Worker:
    """One worker process, and a thread that reads its replies (so the server can wait with a deadline)."""

    def __init__(self, memory_limit: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               # one core per worker: BLAS helper threads of one worker would spin on the core another is using
               **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")}  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "playground.worker_process", str(memory_limit)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=env,
        )  # fmt: skip
        self.replies: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name=f"playground-reader-{self.process.pid}").start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            try:
                header = stream.read(8)
                if len(header) < 8 or int.from_bytes(header, "big") > RESULT_LIMIT:
                    break
                self.replies.put(stream.read(int.from_bytes(header, "big")))
            except (OSError, ValueError):
                break
        self.replies.put(None)  # the worker ended (or sent something no worker sends)

    def send(self, data: bytes) -> None:
        write_frame(self.process.stdin, data)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Terminate, then kill: a worker stuck in C code holding its GIL still goes."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(0.5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(2)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()

    def resident_bytes(self) -> int:
        """Resident memory of the worker (used where the OS does not enforce RLIMIT_AS)."""
        try:
            out = subprocess.run(["ps", "-o", "rss=", "-p", str(self.process.pid)], capture_output=True, text=True)
            return int(out.stdout.strip() or 0) * 1024
        except (OSError, ValueError):
            return 0


class WorkerPool:
    """At most `size` warm workers serving one first-in, first-out queue."""

    def __init__(self, size: int | None = None, memory_limit: int = MEMORY_LIMIT) -> None:
        self.size = size or max(1, min(os.cpu_count() or 1, 4))
        self.memory_limit = memory_limit
        self._queue: deque[Job] = deque()
        self._lock = threading.Condition()
        self._workers: list[_Worker | None] = [_Worker(memory_limit) for _ in range(self.size)]  # warm
        self.replaced = 0  # workers killed and replaced (time, memory, crash)
        for slot in range(self.size):
            threading.Thread(target=self._serve, args=(slot,), daemon=True, name=f"playground-{slot}").start()

    def submit(self, owner: str, source: str, limits: Limits, backend: str = "numpy") -> Job:
        """Queue a run; a run of the same `owner` still waiting is replaced by this one."""
        job = Job(owner, source, limits, backend, pool=self)
        with self._lock:
            for waiting in [j for j in self._queue if j.owner == owner]:
                self._queue.remove(waiting)
                waiting.state = "replaced"
                waiting.done.set()
            self._queue.append(job)
            self._lock.notify()
        return job

    def ahead_of(self, job: Job) -> int:
        with self._lock:
            return self._queue.index(job) if job in self._queue else 0

    def _serve(self, slot: int) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._lock.wait()
                job = self._queue.popleft()
                job.state = "running"
            try:
                job.result = self._run(slot, job)
            except Exception as error:  # never let a slot die: the student gets a sentence
                self._discard(slot)
                problem = f"The Playground could not run this ({type(error).__name__})."
                job.result = RunResult(error=PlaygroundError(problem))
            job.state = "done"
            job.done.set()

    def _run(self, slot: int, job: Job) -> RunResult:
        worker = self._workers[slot]
        if worker is None or not worker.alive():
            self._discard(slot)
            worker = self._workers[slot]
        request = {"source": job.source, "backend": job.backend, "limits": job.limits.__dict__}
        try:
            worker.send(json.dumps(request).encode("utf-8"))
        except OSError:
            return self._died(slot, job)
        deadline = time.monotonic() + job.limits.seconds + GRACE_SECONDS
        watch_resident = sys.platform == "darwin"  # macOS does not enforce RLIMIT_AS
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._discard(slot)
                return RunResult(error=PlaygroundError(time_message(job.limits.seconds), hint=TIME_HINT))
            try:
                data = worker.replies.get(timeout=min(left, 0.1))
                break
            except queue.Empty:
                if watch_resident and worker.resident_bytes() > self.memory_limit * 2:
                    self._discard(slot)
                    return RunResult(error=PlaygroundError(memory_message(self.memory_limit), hint=MEMORY_HINT))
        if data is None:
            return self._died(slot, job)
        try:
            return result_from_plain(loads(data))
        except (PlainDataError, KeyError, TypeError, ValueError, AttributeError):
            self._discard(slot)
            return RunResult(error=PlaygroundError("The Playground could not read this run's result."))

    def _died(self, slot: int, job: Job) -> RunResult:
        """The worker ended mid-run: killed for CPU time (SIGXCPU), or out of memory, or crashed."""
        worker = self._workers[slot]
        try:
            code = worker.process.wait(1)
        except subprocess.TimeoutExpired:
            code = None
        self._discard(slot)
        if code == -getattr(signal, "SIGXCPU", 0):
            return RunResult(error=PlaygroundError(time_message(job.limits.seconds), hint=TIME_HINT))
        return RunResult(error=PlaygroundError(memory_message(self.memory_limit) + " (Or it crashed.)",
                                               hint=MEMORY_HINT))  # fmt: skip

    def _discard(self, slot: int) -> None:
        """Stop a slot's worker and start a fresh one at once, so the pool stays warm."""
        worker, self._workers[slot] = self._workers[slot], None
        if worker is not None:
            worker.stop()
            self.replaced += 1
        self._workers[slot] = _Worker(self.memory_limit)

    def shutdown(self) -> None:
        for slot in range(self.size):
            worker, self._workers[slot] = self._workers[slot], None
            if worker is not None:
                worker.stop()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> WorkerPool:
    """The server's one pool, shared by every session (it holds processes, never a session's data)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool()
        return _POOL
