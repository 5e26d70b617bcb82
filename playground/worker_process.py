"""A Playground worker: `python -m playground.worker_process MEMORY_LIMIT`, started by `playground.workers`.

It limits itself first (address space and, per run, CPU time), then runs one program per request read
from standard input and writes each result as JSON (`playground.plain`) to standard output. Requests and
replies are frames: 8 bytes of length (big-endian), then the bytes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO

from .interpreter import Limits, PlaygroundError, RunResult, run_program
from .plain import dumps, result_to_plain

try:  # not on Windows: there the server's wall-clock kill is the only limit
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

RESULT_LIMIT = 32 * 2**20  # bytes of JSON a worker may send back
GRACE_SECONDS = 2.0  # CPU and wall time beyond the program's own limit: the reply, and some slack


def read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(8)
    if len(header) < 8:
        return None
    data = stream.read(int.from_bytes(header, "big"))
    return data


def write_frame(stream: BinaryIO, data: bytes) -> None:
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
    return f"Your program used more than {limit // 2**20} MiB of memory and was stopped."


MEMORY_HINT = "Use smaller tensors, fewer of them at once, or shorter lists."


def serve(requests: BinaryIO, replies: BinaryIO, memory_limit: int) -> None:
    if hasattr(os, "nice"):
        os.nice(10)  # a student's program yields the CPU to the server and its other sessions
    run_program("x = Tensor.from_floats([1.0], ad).require_grad()\n(x * x).sum().backward()\n")  # warm up
    base = address_space()
    if resource is not None and base:  # Linux enforces RLIMIT_AS; on macOS the server watches resident memory
        resource.setrlimit(resource.RLIMIT_AS, (base + memory_limit, resource.RLIM_INFINITY))
    while (frame := read_frame(requests)) is not None:
        request = json.loads(frame)
        limits = Limits(**request["limits"])
        if resource is not None:  # CPU time counts over the process's life: allow this run its share
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime + limits.seconds + GRACE_SECONDS) + 1
            resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        try:
            result = run_program(request["source"], limits, request["backend"])
            reply = dumps(result_to_plain(result))
            if len(reply) > RESULT_LIMIT:
                result.snapshot, result.backward, result.memory = None, None, []
                result.error = result.error or PlaygroundError(
                    "The program ran, but its graph and replay are too large to show.",
                    hint="Use smaller tensors or fewer operations.",
                )
                reply = dumps(result_to_plain(result))
        except MemoryError:
            refusal = PlaygroundError(memory_message(memory_limit), hint=MEMORY_HINT)
            reply = dumps(result_to_plain(RunResult(error=refusal)))
        write_frame(replies, reply)


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")  # frames only: anything else printed goes to standard error
    os.dup2(2, 1)
    serve(sys.stdin.buffer, replies, int(sys.argv[1]))


if __name__ == "__main__":
    main()
