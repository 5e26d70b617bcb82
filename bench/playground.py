"""Playground speed: compile+run of the seed programs in the sandbox vs the same code written against the Python
API, side by side in one run (target: at most 2x); a run through a worker process vs in the server's process
(isolation overhead, target <= 50 ms); twenty concurrent runs; and the worker pool's throughput (runs a second, two
workers) for the seed program and micrograd's MLP, here and on an earlier commit side by side in one run (`--before
REF`, checked out into a temporary worktree: issue 52's before and after).

Run: python bench/playground.py [--before cd8e1b4] [--throughput-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
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


ROOT = Path(__file__).resolve().parents[1]
THROUGHPUT = {"seed program": "Seed: gradients after backward", "micrograd's MLP": "micrograd's MLP, with classes"}
THROUGHPUT_RUNS = 40
# runs in the tree on sys.argv[1]: its pool, two workers, warmed; then each program `runs` times from as many sessions
MEASURE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from playground import Limits
from playground.workers import WorkerPool
sources, runs = json.loads(sys.stdin.read()), int(sys.argv[2])
pool = WorkerPool(size=2)
out = {}
try:
    for name, source in sources.items():
        for k in range(4):
            pool.submit(f"warm-{k}", source, Limits(), client=f"warm-{k}").wait(120)
        start = time.perf_counter()
        jobs = [pool.submit(f"session-{k}", source, Limits(), client=f"client-{k}") for k in range(runs)]
        assert all(job.wait(300) for job in jobs)
        took = time.perf_counter() - start
        error = next((job.result.error for job in jobs if job.result.error is not None), None)
        out[name] = [runs / took, None if error is None else error.message[:120]]
finally:
    pool.shutdown()
print(json.dumps(out))
"""


def throughput(tree: Path, runs: int = THROUGHPUT_RUNS) -> dict[str, list]:
    """Runs a second through `tree`'s worker pool for each program of THROUGHPUT (this checkout's text of it)."""
    sources = {label: EXAMPLES[name] for label, name in THROUGHPUT.items()}
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tree), str(runs)],
        input=json.dumps(sources), capture_output=True, text=True, env=env, cwd=tree, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_throughput(before: str | None) -> None:
    trees = {"this checkout": ROOT}
    with tempfile.TemporaryDirectory() as scratch:
        if before:
            worktree = Path(scratch) / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), before], check=True,
                           capture_output=True)  # fmt: skip
            trees = {f"before ({before})": worktree, **trees}
        try:
            print(f"worker pool throughput, two workers, {THROUGHPUT_RUNS} runs from as many sessions")
            for label, tree in trees.items():
                for program, (per_second, error) in throughput(tree).items():
                    outcome = f"{per_second:6.1f} runs/s" + (f" (each refused: {error})" if error else "")
                    print(f"  {label:<22} {program:<16} {outcome}")
        finally:
            if before:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a commit whose pool to measure beside this checkout's")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    compare_throughput(args.before)
    if args.throughput_only:
        return
    print("compile+run in the Playground's sandbox vs the same program on the Python API (target <= 2x)")
    for label, (example, api) in PAIRS.items():
        source = EXAMPLES[example]
        assert run_program(source).error is None
        number = 3 if "memory" in label else 50
        interpreted = best_of(lambda s=source: run_program(s), repeat=7, number=number)
        direct = best_of(api, repeat=7, number=number)
        recorded = best_of(lambda a=api: a(record=True), repeat=7, number=number)
        print(
            f"  {label:<24} sandbox {interpreted * 1e3:6.2f} ms | API {direct * 1e3:6.2f} ms: "
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
        jobs = [pool.submit(f"student-{k}", source, Limits(), client=f"student-{k}") for k in range(20)]
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
