"""Playground speed: parse+run of the seed programs through the interpreter vs the same code
written against the Python API, side by side in one run (target: at most 2x); a run through a worker
process vs in the server's process (isolation overhead, target <= 50 ms); twenty concurrent runs.

Run: python bench/playground.py
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_of

from autodiff import BackwardRecorder, Device, Distribution, Gradients, Tensor
from playground import Limits, run_program
from playground.examples import EXAMPLES
from playground.workers import WorkerPool


def recorded_backward(ad: Device, loss: Tensor, record: bool) -> Gradients:
    """backward, plus what the Playground records for its pictures when `record` is set."""
    if not record:
        return loss.backward()
    ad.snapshot()
    return loss.backward(recorder=BackwardRecorder())


def seed_api(record: bool = False) -> None:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    unused = Tensor.from_floats([5.0, 5.0], ad).require_grad()
    h = x * x
    loss = (h + x * 3.0).sum()
    grads = recorded_backward(ad, loss, record)
    lines = [
        " ".join(["x.grad       =", str(x.grad(grads).tolist())]),
        " ".join(["h.grad       =", str(h.grad(grads))]),
        " ".join(["loss.grad    =", str(loss.grad(grads))]),
        " ".join(["unused.grad  =", str(unused.grad(grads))]),
        " ".join(["x.grad_remove=", str(x.grad_remove(grads).tolist())]),
        " ".join(["x.grad again =", str(x.grad(grads))]),
    ]
    assert lines
    if record:
        ad.snapshot()


def shared_api(record: bool = False) -> None:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    shared = x.exp()
    l1 = (shared * 2.0).sum()
    (shared * 3.0).sum()
    x.grad(recorded_backward(ad, l1, record))
    fresh = x.exp()
    total = (fresh * 2.0).sum() + (fresh * 3.0).sum()
    x.grad(recorded_backward(ad, total, record))
    shared.detach()
    if record:
        ad.snapshot()


def memory_api(record: bool = False) -> None:
    ad = Device.numpy().autodiff()
    x = Tensor.random([256, 256], Distribution.Default, ad).require_grad()
    for _ in range(10):
        loss = (x.exp() * x).matmul(x).sum()
        del loss
    grads = recorded_backward(ad, (x.exp() * x).matmul(x).sum(), record)
    x.grad(grads).dims()
    if record:
        ad.snapshot()


PAIRS: dict[str, tuple[str, Callable[..., None]]] = {
    "seed: gradients": ("Seed: gradients after backward", seed_api),
    "seed: shared subgraph": ("Seed: shared subgraph", shared_api),
    "seed: memory growth": ("Seed: memory growth", memory_api),
}


def main() -> None:
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    print("parse+run through the Playground interpreter vs the same program on the Python API (target <= 2x)")
    for label, (example, api) in PAIRS.items():
        source = EXAMPLES[example]
        assert run_program(source).error is None
        number = 3 if "memory" in label else 50
        interpreted = best_of(lambda s=source: run_program(s), repeat=7, number=number)
        direct = best_of(api, repeat=7, number=number)
        recorded = best_of(lambda a=api: a(record=True), repeat=7, number=number)
        print(
            f"  {label:<24} interpreter {interpreted * 1e3:6.2f} ms | API {direct * 1e3:6.2f} ms: "
            f"{interpreted / direct:.2f}x | API recording the same pictures {recorded * 1e3:6.2f} ms: "
            f"{interpreted / recorded:.2f}x"
        )

    isolation()


def isolation() -> None:
    pool = WorkerPool(size=2)
    try:
        run_through = lambda source: pool.submit("bench", source, Limits()).wait(60)
        for name in EXAMPLES:  # warm both workers
            run_through(EXAMPLES[name])
        print("one run through a worker process vs in process (median of 15; target: overhead <= 50 ms)")
        for label, (example, _) in PAIRS.items():
            source = EXAMPLES[example]
            # the worker first: numpy's BLAS threads spin for a while after in-process work, and on a 2-core
            # machine they would slow the (lower-priority) worker that runs next
            worker = statistics.median(timed(lambda s=source: run_through(s)) for _ in range(15))
            inside = statistics.median(timed(lambda s=source: run_program(s)) for _ in range(15))
            print(
                f"  {label:<24} in process {inside * 1e3:7.2f} ms | worker {worker * 1e3:7.2f} ms: "
                f"overhead {(worker - inside) * 1e3:6.2f} ms"
            )
        source = EXAMPLES["Seed: gradients after backward"]
        start = time.perf_counter()
        jobs = [pool.submit(f"student-{k}", source, Limits()) for k in range(20)]
        assert all(job.wait(120) and job.result.error is None for job in jobs)
        print(
            f"twenty concurrent runs (twenty sessions, {pool.size} workers): all done in "
            f"{(time.perf_counter() - start) * 1e3:.0f} ms"
        )
    finally:
        pool.shutdown()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
