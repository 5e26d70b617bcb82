"""Playground runs in worker processes: the process is the resource limit.

The server never executes a visitor's program. Each run goes to a small pool of warm worker processes
(one per core, shared among the replicas of a deployment). A worker caps its own address space
(`RLIMIT_AS`, never above an inherited hard limit) and CPU time (`RLIMIT_CPU`) before it runs anything; the
server kills it on a hard wall-clock deadline (terminate, then kill) and starts a fresh one. Only JSON comes
back (`playground.plain`), at most `RESULT_LIMIT` bytes, never live objects or pickles.

Each session has at most one run, waiting or running: a second Run replaces the waiting one, or stops the
running one (its worker is replaced), and a session that ends cancels its run. The queue is at most
`max_waiting` long, and served fairly between clients (a client is an address; sessions from one browser, or
one script, share it): round robin over the clients with runs waiting, first in, first out within each, and at
most `MAX_WAITING_PER_CLIENT` runs waiting per client. 63 sessions from one address had put a visitor from
another address 62 runs back (about five minutes); now at most one run per worker goes first. A session, or a
client, whose runs keep stopping (a crash, a kill, or the whole time limit used) waits before its next run, so
no one can keep the pool busy or respawning.
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
from typing import IO

from .plain import PlainDataError, loads, result_from_plain
from .results import Limits, PlaygroundError, RunResult
from .worker_process import GRACE_SECONDS, MEMORY_HINT, RESULT_LIMIT, TOO_LARGE_HINT, memory_message, write_frame

ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = Limits().process_bytes  # what a program may add to a worker's own footprint
WORKERS_VARIABLE = "PLAYGROUND_WORKERS"  # set by deploy/replicas.py: this replica's share of the cores
MAX_WAITING = 64  # runs waiting at once, all sessions together
MAX_WAITING_PER_CLIENT = 16  # runs one client address may have waiting (a class behind one NAT address shares it)
STOPS_ALLOWED = 3  # a session's runs may stop this often within STOPS_WINDOW seconds...
STOPS_ALLOWED_PER_CLIENT = 12  # ... and all of a client's sessions together this often...
STOPS_WINDOW = 30.0  # ... before its next run waits
START_SECONDS = 60.0  # a worker that has not said it is ready by then is not coming
START_RETRY = 30.0  # after a worker could not start, runs are refused this long before a worker is tried again
TIME_HINT = "Use smaller tensors, fewer iterations, or smaller nested lists."
TOO_LARGE = b""  # what the reader hands on for a frame longer than RESULT_LIMIT (a worker never sends b"")


def time_message(seconds: float) -> str:
    return f"Your program ran longer than {seconds:g} seconds and was stopped."


def default_size() -> int:
    """Workers for this server: its share of the cores when a deployment says so, else one per core (up to 4)."""
    share = os.environ.get(WORKERS_VARIABLE, "")
    if share.isdigit() and int(share) > 0:
        return int(share)
    return max(1, min(os.cpu_count() or 1, 4))


@dataclass
class Job:
    """One run request and, once done, its result. `position()` says how many runs are ahead of it."""

    owner: str
    source: str
    limits: Limits
    backend: str
    client: str = ""  # the address the run came from: the queue is fair between clients
    result: RunResult | None = None
    # queued -> running -> done; or replaced (a newer Run of the same session took its place in the queue),
    # or cancelled (the session ended, or pressed Run again while it ran)
    state: str = "queued"
    done: threading.Event = field(default_factory=threading.Event)
    pool: WorkerPool | None = None
    slot: int | None = None  # the worker running it
    stopped: bool = False  # counted as a stopped run (it ran out of time or memory, crashed, or was cancelled)

    def wait(self, timeout: float) -> bool:
        return self.done.wait(timeout)

    def position(self) -> int:
        """Runs ahead of this one in the queue (0 when it is next, or already running)."""
        return 0 if self.pool is None else self.pool.ahead_of(self)

    def cancel(self) -> None:
        """Stop this run wherever it is (nobody will read its result)."""
        if self.pool is not None:
            self.pool.cancel(self)


class _Worker:
    """One worker process, and a thread that reads its replies (so the server can wait with a deadline)."""

    def __init__(self, memory_limit: int) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            # one core per worker: BLAS helper threads of one worker would spin on the core another is using
            **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1"),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "playground.worker_process", str(memory_limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None  # both are pipes
        self.requests: IO[bytes] = self.process.stdin
        self.answers: IO[bytes] = self.process.stdout
        self.replies: queue.Queue[bytes | None] = queue.Queue()
        self.ready = False  # it said so; until then the first reply is its greeting
        self.killed = False  # by a cancel: whatever it does next is not a run's doing
        self.allowed = memory_limit  # what a program may use in it: less under an inherited limit (its greeting)
        threading.Thread(target=self._read, daemon=True, name=f"playground-reader-{self.process.pid}").start()

    def _read(self) -> None:
        stream = self.answers
        while True:
            try:
                header = stream.read(8)
                if len(header) < 8:
                    break
                if int.from_bytes(header, "big") > RESULT_LIMIT:  # never read: a worker does not send this
                    self.replies.put(TOO_LARGE)
                    break
                self.replies.put(stream.read(int.from_bytes(header, "big")))
            except (OSError, ValueError):
                break
        self.replies.put(None)  # the worker ended (or sent something no worker sends)

    def start_problem(self) -> str | None:
        """Wait for the worker's greeting: None once it is ready, else why it cannot start (in words)."""
        if self.ready:
            return None
        try:
            greeting = self.replies.get(timeout=START_SECONDS)
        except queue.Empty:
            return f"a worker did not start within {START_SECONDS:g} s"
        try:
            said = json.loads(greeting) if greeting else {}
        except ValueError:
            said = {}
        if isinstance(said, dict) and isinstance(said.get("ready"), int):
            self.ready, self.allowed = True, min(said["ready"], self.allowed)
            return None
        reason = said.get("startup_error") if isinstance(said, dict) else None
        return str(reason)[:500] if reason else "a worker process ended while starting"

    def send(self, data: bytes) -> None:
        write_frame(self.requests, data)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Kill at once, from any thread: the slot that runs it sees the worker end and replaces it."""
        self.killed = True
        with contextlib.suppress(OSError):
            self.process.kill()

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
        for stream in (self.requests, self.answers):
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
    """At most `size` warm workers serving one first-in, first-out queue of at most `max_waiting` runs."""

    def __init__(self, size: int | None = None, memory_limit: int = MEMORY_LIMIT, max_waiting: int = MAX_WAITING):
        self.size = size or default_size()
        self.memory_limit = memory_limit
        self.max_waiting = max_waiting
        self._waiting: dict[str, deque[Job]] = {}  # client -> its runs, oldest first; clients in serving order
        self._running: dict[str, Job] = {}  # owner -> its run in a worker
        self._stops: dict[str, deque[float]] = {}  # owner, and "client " + address -> when its runs stopped
        self._lock = threading.Condition()
        self._workers: list[_Worker | None] = [_Worker(memory_limit) for _ in range(self.size)]  # warm
        self.replaced = 0  # workers killed and replaced (time, memory, crash, cancel)
        self.start_failure: str | None = None  # why workers cannot start here, once one has failed to...
        self._start_failed_at = 0.0  # ... and when: runs are refused for START_RETRY seconds, then tried again
        for slot in range(self.size):
            threading.Thread(target=self._serve, args=(slot,), daemon=True, name=f"playground-{slot}").start()

    def submit(self, owner: str, source: str, limits: Limits, backend: str = "numpy", client: str = "") -> Job:
        """Queue a run. The same `owner`'s waiting run is replaced, its running run stopped. A run that
        cannot be queued (the queue is full, the owner or its client must wait, no worker can start) is done at
        once, with a sentence saying why."""
        job = Job(owner, source, limits, backend, client, pool=self)
        with self._lock:
            for waiting in [j for runs in self._waiting.values() for j in runs if j.owner == owner]:
                self._remove(waiting)
                self._finish(waiting, "replaced")
            if owner in self._running:
                self._cancel_running(self._running[owner])
            refusal = self._refusal(owner, client)
            if refusal is not None:
                job.result = RunResult(error=refusal)
                self._finish(job, "done")
                return job
            self._waiting.setdefault(client, deque()).append(job)
            self._lock.notify()
        return job

    def waiting(self) -> int:
        with self._lock:
            return sum(len(runs) for runs in self._waiting.values())

    def _refusal(self, owner: str, client: str = "") -> PlaygroundError | None:
        if self.start_failure is not None and time.monotonic() - self._start_failed_at < START_RETRY:
            reason = self.start_failure.rstrip(".")
            return PlaygroundError(
                f"The Playground cannot run programs on this server: {reason}.",
                hint="Tell whoever runs this app; the lessons still work.",
            )
        waiting = sum(len(runs) for runs in self._waiting.values())
        if waiting >= self.max_waiting:
            return PlaygroundError(
                f"The Playground is busy: {waiting} runs are waiting.", hint="Press Run again in a minute."
            )
        if len(self._waiting.get(client, ())) >= MAX_WAITING_PER_CLIENT:
            return PlaygroundError(
                f"{MAX_WAITING_PER_CLIENT} runs from your network address are already waiting.",
                hint="Press Run again when one of them has run.",
            )
        for key, allowed, whose in (
            (owner, STOPS_ALLOWED, "Your last"),
            (f"client {client}", STOPS_ALLOWED_PER_CLIENT, "The last"),
        ):
            stops = self._recent_stops(key)
            if len(stops) >= allowed:
                wait = STOPS_WINDOW - (time.monotonic() - stops[0])
                source = "" if whose == "Your last" else " from your network address"
                return PlaygroundError(
                    f"{whose} {len(stops)} runs{source} each stopped (too long, too much memory, a crash, or Run "
                    f"pressed again while running). Wait {wait:.0f} s before the next run.",
                    hint="Meanwhile, make the program smaller: smaller tensors, fewer iterations.",
                )
        return None

    def _recent_stops(self, key: str) -> deque[float]:
        stops = self._stops.get(key, deque())
        now = time.monotonic()
        while stops and now - stops[0] > STOPS_WINDOW:
            stops.popleft()
        if not stops:
            self._stops.pop(key, None)  # forgotten: the pool keeps nothing per session for long
        return stops

    def _remove(self, job: Job) -> None:
        runs = self._waiting.get(job.client)
        if runs is not None and job in runs:
            runs.remove(job)
            if not runs:
                del self._waiting[job.client]

    def _next(self) -> Job:
        """The first run of the client whose turn it is; that client goes to the back of the round."""
        client = next(iter(self._waiting))
        runs = self._waiting.pop(client)
        job = runs.popleft()
        if runs:
            self._waiting[client] = runs  # re-inserted: last in the round
        return job

    def cancel(self, job: Job) -> None:
        """Stop `job`: out of the queue if it waits, its worker killed (and replaced) if it runs."""
        with self._lock:
            if job.state == "queued" and job in self._waiting.get(job.client, ()):
                self._remove(job)
                self._finish(job, "cancelled")
            elif job.state == "running":
                self._cancel_running(job)

    def _cancel_running(self, job: Job) -> None:
        job.state = "cancelled"  # the slot that runs it sees its worker end and hands back no result
        worker = self._workers[job.slot] if job.slot is not None else None
        if worker is not None:
            worker.kill()

    def ahead_of(self, job: Job) -> int:
        """Runs that will start before `job`, if no other run comes: the round robin played forward."""
        with self._lock:
            rounds = [list(runs) for runs in self._waiting.values()]
            order = [
                runs[depth] for depth in range(max(map(len, rounds), default=0)) for runs in rounds if depth < len(runs)
            ]
            return order.index(job) if job in order else 0

    def _finish(self, job: Job, state: str) -> None:
        job.state = state
        job.done.set()

    def _serve(self, slot: int) -> None:
        while True:
            with self._lock:
                while not self._waiting:
                    self._lock.wait()
                job = self._next()
                job.state, job.slot = "running", slot
                self._running[job.owner] = job
            started = time.monotonic()
            try:
                result = self._run(slot, job)
            except Exception as error:  # never let a slot die: the student gets a sentence
                self._discard(slot)
                problem = f"The Playground could not run this ({type(error).__name__})."
                result = RunResult(error=PlaygroundError(problem))
            with self._lock:
                if self._running.get(job.owner) is job:
                    del self._running[job.owner]
                if job.state == "cancelled" or time.monotonic() - started >= job.limits.seconds:
                    self._stopped(job)  # cancelled, or stopped by the time limit (the interpreter's own too)
                if job.state == "cancelled":
                    self._finish(job, "cancelled")  # its result, if any, is dropped here
                else:
                    job.result = result
                    self._finish(job, "done")

    def _run(self, slot: int, job: Job) -> RunResult:
        worker = self._workers[slot]
        if worker is None or worker.killed or not worker.alive():
            worker = self._discard(slot)
        problem = worker.start_problem()
        if problem is not None:
            return self._died(slot, job) if worker.killed else self._cannot_start(slot, problem)
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
                self._discard(slot, job)
                return RunResult(error=PlaygroundError(time_message(job.limits.seconds), hint=TIME_HINT))
            try:
                data = worker.replies.get(timeout=min(left, 0.1))
                break
            except queue.Empty:
                if watch_resident and worker.resident_bytes() > self.memory_limit * 2:
                    self._discard(slot, job)
                    return RunResult(error=PlaygroundError(memory_message(self.memory_limit), hint=MEMORY_HINT))
        if data is None:
            return self._died(slot, job)
        if data is TOO_LARGE:
            self._discard(slot)
            return RunResult(
                error=PlaygroundError("The program ran, but its result is too large to send back.", hint=TOO_LARGE_HINT)
            )
        try:
            result = result_from_plain(loads(data))
        except (PlainDataError, KeyError, TypeError, ValueError, AttributeError):
            self._discard(slot)
            return RunResult(error=PlaygroundError("The Playground could not read this run's result."))
        result.reply_bytes = len(data)
        return result

    def _cannot_start(self, slot: int, problem: str) -> RunResult:
        """No worker can run here (an inherited memory limit, say): say so to everyone, and stop respawning."""
        worker, self._workers[slot] = self._workers[slot], None
        if worker is not None:
            worker.stop()
        with self._lock:
            self.start_failure, self._start_failed_at = problem, time.monotonic()
            return RunResult(error=self._refusal(""))

    def _died(self, slot: int, job: Job) -> RunResult:
        """The worker ended mid-run: killed for CPU time (SIGXCPU), or out of memory, or crashed, or cancelled."""
        worker = self._workers[slot]
        assert worker is not None, "a slot that ran a job has its worker until it is discarded"
        try:
            code = worker.process.wait(1)
        except subprocess.TimeoutExpired:
            code = None
        limit = worker.allowed
        self._discard(slot, None if job.state == "cancelled" else job)
        if code == -getattr(signal, "SIGXCPU", 0):
            return RunResult(error=PlaygroundError(time_message(job.limits.seconds), hint=TIME_HINT))
        if code is not None and code < 0 and code != -signal.SIGKILL:  # a signal other than the OOM killer's
            message = (
                f"Your program crashed its worker process (most likely out of memory: the limit is "
                f"{limit // 2**20} MiB) and was stopped."
            )
            return RunResult(error=PlaygroundError(message, hint=MEMORY_HINT))
        return RunResult(error=PlaygroundError(memory_message(limit), hint=MEMORY_HINT))

    def _stopped(self, job: Job) -> None:
        """Count `job` once as a stopped run of its session and of its client."""
        if not job.stopped:
            job.stopped = True
            for key, allowed in ((job.owner, STOPS_ALLOWED), (f"client {job.client}", STOPS_ALLOWED_PER_CLIENT)):
                self._stops.setdefault(key, deque(maxlen=allowed)).append(time.monotonic())

    def _discard(self, slot: int, stopped: Job | None = None) -> _Worker:
        """Stop a slot's worker and start a fresh one at once, so the pool stays warm (it is returned). `stopped`:
        the run it ran, counted as stopped."""
        worker, self._workers[slot] = self._workers[slot], None
        if worker is not None:
            worker.stop()
            self.replaced += 1
        if stopped is not None:
            with self._lock:
                self._stopped(stopped)
        fresh = self._workers[slot] = _Worker(self.memory_limit)
        return fresh

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
