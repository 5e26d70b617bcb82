"""A Playground worker: `python -m playground.worker_process MEMORY_LIMIT`, started by `playground.workers`.

It limits itself first (address space and, per run, CPU time), says it is ready (or, in plain words, why it
cannot start), then runs one program per request read from standard input and writes each result as JSON
(`playground.plain`) to standard output. Requests and replies are frames: 8 bytes of length (big-endian),
then the bytes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, BinaryIO

from . import fence
from .plain import PREVIEW_ONLY, dumps, result_to_plain
from .results import Limits, PlaygroundError, RunResult
from .sandbox import run_program

try:  # not on Windows: there the server's wall-clock kill is the only limit
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

RESULT_LIMIT = 4 * 2**20  # bytes of JSON a worker may send back (the server refuses longer frames)
GRACE_SECONDS = 2.0  # CPU and wall time beyond the program's own limit: the reply, and some slack
MIN_HEADROOM = 128 * 2**20  # below this much room under an inherited limit, a worker says it cannot start
MIB = 2**20


def read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(8)
    if len(header) < 8:
        return None
    data = stream.read(int.from_bytes(header, "big"))
    return data


def write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(len(data).to_bytes(8, "big") + data)
    stream.flush()


def address_space() -> int:
    """This process's virtual memory now, in bytes (Linux; 0 where /proc is missing)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def memory_message(limit: int) -> str:
    return f"Your program used more than {limit // MIB} MiB of memory and was stopped."


MEMORY_HINT = "Use smaller tensors, fewer of them at once, or shorter lists."
TOO_LARGE_HINT = "Use smaller tensors or fewer operations."


# what a worker runs before the fence: the engine's ops, its indexing, a backward, a class, an f-string, an error
WARM_UP = (
    "import math\nimport random\nclass A:\n    def __call__(self, x):\n        return x\n"
    "x = Tensor.from_floats([[1.0, 2.0]], ad).require_grad()\nw = Tensor.random([2, 2], Distribution.Default, ad)\n"
    "y = A()(x @ w).tanh().sigmoid().relu().exp().log()[0, :1][..., -1]\n"
    "loss = sum([y, y.mean(), y.sum_dim(0).sum()])\ngrads = loss.backward()\n"
    'print(f"{loss.item():.4f}", x.grad(grads), math.sqrt(2.0), random.random())\n',
    "x = [1][2]\n",
)


class StartupError(Exception):
    """This worker cannot run programs here; the message says why, for the server's log and the page."""


def lower_limit(which: int, wanted: int) -> int:
    """Set the soft limit `which` to `wanted`, or to the inherited hard limit when that is lower (an
    unprivileged process may lower its hard limit, never raise it). Returns the soft limit now in force."""
    _, hard = resource.getrlimit(which)
    soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(which, (soft, hard))
    return soft


def limit_memory(memory_limit: int) -> int:
    """Cap this process's address space at its size now plus `memory_limit`, or less under an inherited
    hard limit (`ulimit -v`). Returns what a program may add; raises StartupError when that is too little."""
    base = address_space()
    if resource is None or not base:  # Linux enforces RLIMIT_AS; on macOS the server watches resident memory
        return memory_limit
    allowed = lower_limit(resource.RLIMIT_AS, base + memory_limit) - base
    if allowed < MIN_HEADROOM:
        raise StartupError(
            f"this server's address-space limit (ulimit -v) leaves a worker {max(allowed, 0) // MIB} MiB "
            f"beyond its {base // MIB} MiB start-up size; it needs at least {MIN_HEADROOM // MIB} MiB. "
            "Raise `ulimit -v` for the account that runs the app."
        )
    return allowed


def limit_mlx(memory_limit: int) -> None:
    """MLX allocates outside Python: cap it too, so a large MLX op raises instead of crashing the worker."""
    try:
        import mlx.core as mx
    except ImportError:
        return
    mx.set_memory_limit(memory_limit)
    mx.set_cache_limit(0)  # freed buffers go back at once: the next run starts from what it holds


def start(memory_limit: int) -> int:
    """Warm up and limit this process; returns the memory a program may use."""
    if hasattr(os, "nice"):
        os.nice(10)  # a student's program yields the CPU to the server and its other sessions
    for program in WARM_UP:  # every module a program's run needs is loaded before the fence refuses new ones
        run_program(program)
    fence.install()
    try:
        allowed = limit_memory(memory_limit)
    except (OSError, ValueError) as error:
        raise StartupError(f"it could not limit its own memory ({error})") from None
    return allowed


def answer(request: dict, memory_limit: int) -> bytes:
    """One run, as the JSON the server reads: never larger than RESULT_LIMIT."""
    limits = Limits(**request["limits"])
    if resource is not None:  # CPU time counts over the process's life: allow this run its share
        used = resource.getrusage(resource.RUSAGE_SELF)
        lower_limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + limits.seconds + GRACE_SECONDS) + 1)
    if request["backend"] == "mlx":
        limit_mlx(memory_limit)
    try:
        result = run_program(request["source"], limits, request["backend"], fenced=True)
    except MemoryError:
        return dumps(result_to_plain(RunResult(error=PlaygroundError(memory_message(memory_limit), hint=MEMORY_HINT))))
    return fitted(result)


def fitted(result: RunResult) -> bytes:
    """The result's JSON within RESULT_LIMIT: whole, else with tensors as previews, else without its pictures."""
    reply = dumps(result_to_plain(result))
    if len(reply) <= RESULT_LIMIT:
        return reply
    reply = dumps(result_to_plain(result), whole_values=PREVIEW_ONLY)
    if len(reply) <= RESULT_LIMIT:
        return reply
    result.snapshot, result.backward, result.memory = None, None, []
    result.error = result.error or PlaygroundError(
        "The program ran, but its graph and replay are too large to show.", hint=TOO_LARGE_HINT
    )
    return dumps(result_to_plain(result))


def serve(requests: BinaryIO, replies: BinaryIO, memory_limit: int) -> None:
    try:
        memory_limit = start(memory_limit)
    except (StartupError, MemoryError) as error:
        reason = str(error) if isinstance(error, StartupError) else "it ran out of memory while starting"
        write_frame(replies, json.dumps({"startup_error": reason}).encode("utf-8"))
        return
    write_frame(replies, json.dumps({"ready": memory_limit}).encode("utf-8"))
    while (frame := read_frame(requests)) is not None:
        # written at once and never bound to a name: the previous reply is not held during the next run
        write_frame(replies, answer(json.loads(frame), memory_limit))


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")  # frames only: anything else printed goes to standard error
    os.dup2(2, 1)
    serve(sys.stdin.buffer, replies, int(sys.argv[1]))


if __name__ == "__main__":
    main()
