"""Engine speed, measured side by side in one run (a benchmark, not a test).

(a) forward+backward of the seed graph on 2-element tensors vs PyTorch eager autograd
    (skipped when torch is not installed); target: at most torch's time (1.0x). Beside it, the floor: a
    bare micrograd-style engine on numpy that does nothing but backward (no node ids, no server, no
    consumption, no memory accounting, no records for the pictures).
(b) the 512x512 memory-experiment forward+backward vs the same work hand-written in numpy as Burn
    does it (exp recomputed in backward); target: at most 1.15x.
(c, d) the same two on the MLX backend vs `mx.grad` of the same function (when MLX imports).
(e) Python heap growth over 10,000 forward+backward iterations of the seed graph, per memory policy
    (tracemalloc); target: flat.
(f) the seed graph with its memory history recorded and not (the default), side by side, and what not recording
    costs: the checks of whether anything watches one forward+backward makes, times one check's time.
(g) the seed graph with keep_values=False (the course's case: no values kept, no structure recorded) side by side
    with keep_values=True (each node's value copied and what made it recorded: a walk of the call stack), per op.
(h) HIPS autograd's `benchmarks/bench_core.py` shapes, float64, the engine's default device with nothing recording,
    side by side with PyTorch eager (one thread) and `autograd` itself where they are installed: 50 chained `sin`
    on a scalar, and fan-out/fan-in (each level sends x to many products and adds them back, then a `sin`).
(i) per op (forward + backward) for both shapes at 50 and 5,000 ops, the ratio to HIPS autograd, the engine's
    pure-Python peer (target: at most 1.0), and to PyTorch (reported: a C++ engine's cost per op is below what a
    CPython engine keeping Burn's bookkeeping can reach, issue 37); the chain at 100 and 100,000 ops, the flatness
    ratio (target: at most 1.2). Measured with the cyclic collector on, as a program runs: in a process with torch
    loaded, a 5,000-op graph waiting for its backward makes the collector walk torch's heap too. Each function's
    round starts from a collection (`timing.best_of_each`): none walks the young objects another left.
(j) memory retained per recorded op while a 20,000-op chain waits for its backward: the process's resident memory
    for the engine and for PyTorch (the same measure), and the Python heap the engine holds (tracemalloc).

Run: python bench/engine.py
"""

from __future__ import annotations

import gc
import platform
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_of, best_of_each

from autodiff import Device, Distribution, Tensor
from course.programs import memory_forward


def seed_graph_engine() -> Callable[[], object]:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()

    def run() -> object:
        return x.grad(((x * x) + x * 3.0).sum().backward())

    return run


class FloorTensor:
    """The least an engine can do for the seed graph: values, parents, closures, a tape by order."""

    __slots__ = ("data", "parents", "rules", "order")

    def __init__(self, data: np.ndarray, parents: tuple = (), rules: tuple = (), order: int = 0) -> None:
        self.data, self.parents, self.rules, self.order = data, parents, rules, order

    def __mul__(self, other: FloorTensor | float) -> FloorTensor:
        if isinstance(other, FloorTensor):
            a, b = self.data, other.data
            return FloorTensor(
                a * b, (self, other), (lambda g: g * b, lambda g: g * a), max(self.order, other.order) + 1
            )
        return FloorTensor(self.data * other, (self,), (lambda g: g * other,), self.order + 1)

    def __add__(self, other: FloorTensor) -> FloorTensor:
        return FloorTensor(
            self.data + other.data, (self, other), (lambda g: g, lambda g: g), max(self.order, other.order) + 1
        )

    def sum(self) -> FloorTensor:
        shape = self.data.shape
        return FloorTensor(
            self.data.sum(keepdims=True).reshape(1), (self,), (lambda g: np.broadcast_to(g, shape),), self.order + 1
        )

    def backward(self) -> dict[int, np.ndarray]:
        seen, nodes, stack = {id(self)}, [self], [self]
        while stack:
            for parent in stack.pop().parents:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    nodes.append(parent)
                    stack.append(parent)
        nodes.sort(key=lambda n: -n.order)
        grads = {id(self): np.ones_like(self.data)}
        for node in nodes:
            grad = grads.pop(id(node)) if node.parents else grads.get(id(node))
            for parent, rule in zip(node.parents, node.rules, strict=True):
                contribution = rule(grad)
                key = id(parent)
                grads[key] = contribution if key not in grads else grads[key] + contribution
        return grads


def seed_graph_floor() -> Callable[[], object]:
    x = FloorTensor(np.array([1.0, 2.0], dtype=np.float32))
    return lambda: (((x * x) + x * 3.0).sum().backward())[id(x)]


def seed_graph_torch() -> Callable[[], object] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def run() -> object:
        x.grad = None
        ((x * x) + x * 3.0).sum().backward()
        return x.grad

    return run


def memory_graph_engine(size: int) -> Callable[[], object]:
    ad = Device.numpy().autodiff()
    x = Tensor.random([size, size], Distribution.Default, ad).require_grad()
    return lambda: x.grad(memory_forward(x).backward())


def rounded_exp(a: np.ndarray) -> np.ndarray:
    """The engine's float32 exp: computed in float64 and rounded (correctly rounded, as the seed)."""
    return np.exp(a, out=np.empty_like(a), dtype=np.float64, casting="unsafe")


def memory_graph_numpy(
    size: int, recompute: bool = True, exp: Callable[[np.ndarray], np.ndarray] = np.exp
) -> Callable[[], object]:
    """Hand-written forward+backward. `recompute`: exp(x) computed again in backward, as Burn does
    (it saves x, not exp(x)); `exp=rounded_exp` uses the engine's correctly rounded exp."""
    x = np.random.default_rng(0).random((size, size), dtype=np.float32)

    def run() -> np.ndarray:
        # forward: e = exp(x); m = e * x; y = m @ x; loss = sum(y)
        e = exp(x)
        m = e * x
        y = m @ x
        y.sum()
        # backward, by hand
        gy = np.ones_like(y)
        gm = gy @ x.T
        gx = m.T @ gy
        gx += gm * e  # through m = e * x (rhs)
        gx += gm * x * (exp(x) if recompute else e)  # through e = exp(x)
        return gx

    return run


def seed_graph_on(backend: str) -> Callable[[], object]:
    ad = Device.named(backend).autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    return lambda: x.grad(((x * x) + x * 3.0).sum().backward())


def memory_graph_on(backend: str, size: int) -> Callable[[], object]:
    ad = Device.named(backend).autodiff()
    x = Tensor.random([size, size], Distribution.Default, ad).require_grad()
    return lambda: x.grad(memory_forward(x).backward())


def mlx_grad_runs(size: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """mx.grad of the same two functions, evaluated each call (MLX is lazy)."""
    import mlx.core as mx

    seed_grad = mx.grad(lambda x: mx.sum(x * x + x * 3.0))
    memory_grad = mx.grad(lambda x: mx.sum(mx.matmul(mx.exp(x) * x, x)))
    small = mx.array([1.0, 2.0])
    big = mx.array(np.random.default_rng(0).random((size, size), dtype=np.float32))
    return (lambda: mx.eval(seed_grad(small))), (lambda: mx.eval(memory_grad(big)))


def mlx_section() -> None:
    from autodiff.device import mlx_unavailable_reason

    if mlx_unavailable_reason():
        print(f"(c) MLX backend: skipped ({mlx_unavailable_reason()})")
        return
    seed_reference, memory_reference = mlx_grad_runs(512)
    engine = best_of(seed_graph_on("mlx"), repeat=5, number=500)
    reference = best_of(seed_reference, repeat=5, number=500)
    print(
        f"(c) seed graph on the MLX backend: engine {engine * 1e6:.1f} us, mx.grad {reference * 1e6:.1f} us, "
        f"ratio {engine / reference:.2f}x"
    )
    engine = best_of(memory_graph_on("mlx", 512), repeat=5, number=5)
    reference = best_of(memory_reference, repeat=5, number=5)
    print(
        f"(d) 512x512 experiment on the MLX backend: engine {engine * 1e3:.2f} ms, mx.grad "
        f"{reference * 1e3:.2f} ms, ratio {engine / reference:.2f}x"
    )


def seed_graph_recorded(max_entries: int | None) -> tuple[Callable[[], object], Device]:
    """The seed graph's fwd+bwd on a device recording its memory history (None: not recording)."""
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    if max_entries is not None:
        ad.record_memory_history(max_entries=max_entries)
    return (lambda: x.grad(((x * x) + x * 3.0).sum().backward())), ad


def recording_section() -> None:
    (off, _), (on, _) = seed_graph_recorded(None), seed_graph_recorded(1000)
    off_time, on_time = best_of_each([off, on], repeat=7, number=2000)
    print(
        f"(f) seed graph fwd+bwd, memory history not recorded {off_time * 1e6:.1f} us, recorded "
        f"{on_time * 1e6:.1f} us, ratio {on_time / off_time:.2f}x"
    )
    once, ad = seed_graph_recorded(10_000)
    nodes = ad.server.nodes_created
    once()
    history = ad.memory_history
    assert history is not None
    # each allocation and release asks the pool once whether anything watches, each registration of a node or a
    # gradient once (a flag: a call of the observer that does nothing cost more, so it is not made)
    gradients = sum(e.action == "alloc" and e.allocation.role == "gradient" for e in history.events)
    checks = history.recorded + (ad.server.nodes_created - nodes) + gradients
    scope = {"pool": Device.numpy().backend.pool}
    check = min(timeit.repeat("if pool.watched: pass", globals=scope, repeat=7, number=1_000_000)) / 1e6
    empty = min(timeit.repeat("pool", globals=scope, repeat=7, number=1_000_000)) / 1e6
    cost = checks * max(check - empty, 0.0)
    print(
        f"    not recording costs {checks} checks of whether anything watches per fwd+bwd, "
        f"{(check - empty) * 1e9:.1f} ns each: {cost * 1e9:.0f} ns, {cost / off_time:.2%} of its time"
    )


def seed_graph_kept(keep_values: bool) -> Callable[[], object]:
    ad = Device.numpy().autodiff(keep_values=keep_values)
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    return lambda: x.grad(((x * x) + x * 3.0).sum().backward())


def structure_section() -> None:
    ops = 4  # x*x, x*3, +, sum: the nodes one forward makes
    off, on = best_of_each([seed_graph_kept(False), seed_graph_kept(True)], repeat=7, number=2000)
    print(
        f"(g) seed graph fwd+bwd, keep_values=False {off * 1e6:.1f} us ({off / ops * 1e6:.1f} us per op), "
        f"keep_values=True (values and structure recorded) {on * 1e6:.1f} us ({on / ops * 1e6:.1f} us per op), "
        f"recording costs {(on - off) / ops * 1e6:.1f} us per op"
    )


def sin_chain(ops: int) -> Callable[[], object]:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([2.0], ad, dtype="float64").require_grad()

    def run() -> object:
        y = x
        for _ in range(ops):
            y = y.sin()
        return x.grad(y.backward())

    return run


def fan_out_fan_in(x: Any, ops: int, sin: Callable[[Any], Any] = lambda t: t.sin()) -> Any:
    """`fan_op_count(ops)` ops in levels: x goes to `width` products `x * k`, which are added back, then a `sin`."""
    width = 5 if ops <= 100 else 250
    for _ in range(max(1, ops // (2 * width))):
        total = x * 1.0
        for k in range(1, width):
            total = total + x * float(k + 1)
        x = sin(total)
    return x


def fan_engine(ops: int) -> Callable[[], object]:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([0.001], ad, dtype="float64").require_grad()
    return lambda: x.grad(fan_out_fan_in(x, ops).backward())


def torch_runs(ops: int) -> tuple[Callable[[], object], Callable[[], object]] | None:
    """The chain and fan-out/fan-in in PyTorch eager, one thread (None without torch)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([0.001], dtype=torch.float64, requires_grad=True)

    def chain() -> object:
        x.grad = None
        y = x
        for _ in range(ops):
            y = y.sin()
        y.sum().backward()
        return x.grad

    def fan() -> object:
        w.grad = None
        fan_out_fan_in(w, ops).sum().backward()
        return w.grad

    return chain, fan


def autograd_runs(ops: int) -> tuple[Callable[[], object], Callable[[], object]] | None:
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None

    def chain(x: Any) -> Any:
        for _ in range(ops):
            x = anp.sin(x)
        return x

    chain_grad, fan_grad = autograd.grad(chain), autograd.grad(lambda x: fan_out_fan_in(x, ops, anp.sin))
    return (lambda: chain_grad(2.0)), (lambda: fan_grad(0.001))


def per_op_section() -> None:
    number = {50: 200, 5_000: 3}
    for ops in (50, 5_000):
        engine_runs = [sin_chain(ops), fan_engine(ops)]
        references = torch_runs(ops)
        others = autograd_runs(ops)
        runs = engine_runs + list(references or ()) + list(others or ())
        times = best_of_each(runs, repeat=7, number=number[ops])
        fan_ops = fan_op_count(ops)
        for case, k, count in (("chained sin", 0, ops), ("fan-out/fan-in", 1, fan_ops)):
            line = f"    {case}, {count:,} ops: engine {times[k] / count * 1e6:.2f} us/op"
            if others is not None:
                peer = times[len(runs) - 2 + k]
                line += f", HIPS autograd {peer / count * 1e6:.2f} us/op, ratio {times[k] / peer:.2f}x (target <= 1.0)"
            else:
                line += "; autograd not installed (pip install autograd), no ratio"
            if references is not None:
                line += f"; torch {times[2 + k] / count * 1e6:.2f} us/op, {times[k] / times[2 + k]:.2f}x"
            print(line)
        if ops == 50:
            print(
                f"    (HIPS's own case, 50 chained sin, forward+backward: engine {times[0] * 1e6:.0f} us"
                + (f", torch {times[2] * 1e6:.0f} us" if references else "")
                + (f", autograd {times[len(runs) - 2] * 1e6:.0f} us" if others else "")
                + ")"
            )


def fan_op_count(ops: int) -> int:
    width = 5 if ops <= 100 else 250
    return max(1, ops // (2 * width)) * (2 * width)


def flatness_section() -> None:
    small, large = best_of(sin_chain(100), repeat=7, number=100) / 100, best_of(sin_chain(100_000), 3, 1) / 100_000
    print(
        f"(i) chained sin per op at 100 ops {small * 1e6:.2f} us, at 100,000 ops {large * 1e6:.2f} us: "
        f"flatness {large / small:.2f}x (target <= 1.2)"
    )


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def retained_section(ops: int = 20_000) -> None:
    gc.collect()
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([2.0], ad, dtype="float64").require_grad()
    before, heap_before = resident_bytes(), (tracemalloc.start(), tracemalloc.get_traced_memory()[0])[1]
    y = x
    for _ in range(ops):
        y = y.sin()
    engine_rss, heap = resident_bytes() - before, tracemalloc.get_traced_memory()[0] - heap_before
    tracemalloc.stop()
    line = f"(j) retained per recorded op: engine {engine_rss / ops:.0f} B resident, {heap / ops:.0f} B of Python heap"
    del y
    try:
        import torch
    except ImportError:
        print(line + "; torch not installed")
        return
    t = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    before = resident_bytes()
    z = t
    for _ in range(ops):
        z = z.sin()
    print(line + f"; torch {(resident_bytes() - before) / ops:.0f} B resident")
    del z


def heap_growth(policy: str, iterations: int = 10_000) -> tuple[int, int]:
    """Bytes the Python heap grew over the first and over all `iterations` of the seed graph's
    forward+backward (a dropped constant each time too), after a warm-up."""
    ad = Device.numpy().autodiff(memory_policy=policy)
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()

    def iterate(n: int) -> None:
        for _ in range(n):
            x.grad(((x * x) + x * 3.0).sum().backward())
            Tensor.from_floats([1.0], ad)

    iterate(100)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    iterate(1000)
    gc.collect()
    early = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(start, "filename"))
    iterate(iterations - 1000)
    gc.collect()
    total = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    return early, total


def main() -> None:
    print(
        f"# {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )
    torch_run = seed_graph_torch()
    if torch_run is None:
        engine, floor = best_of_each([seed_graph_engine(), seed_graph_floor()], repeat=7, number=2000)
        print(
            f"(a) seed graph fwd+bwd: engine {engine * 1e6:.1f} us, bare floor {floor * 1e6:.1f} us; "
            "torch not installed, no ratio"
        )
    else:
        import torch

        engine, floor, reference = best_of_each(
            [seed_graph_engine(), seed_graph_floor(), torch_run], repeat=7, number=2000
        )
        print(
            f"(a) seed graph fwd+bwd: engine {engine * 1e6:.1f} us, torch {torch.__version__} "
            f"{reference * 1e6:.1f} us, ratio {engine / reference:.2f}x (target <= 1.0x)"
        )
        print(
            f"    the floor, a bare micrograd-style engine on numpy: {floor * 1e6:.1f} us, "
            f"{floor / reference:.2f}x torch; the engine costs {engine / floor:.1f}x the floor"
        )
    engine, burn_work, kept_exp, same_math = best_of_each(
        [
            memory_graph_engine(512),
            memory_graph_numpy(512),
            memory_graph_numpy(512, recompute=False),
            memory_graph_numpy(512, exp=rounded_exp),
        ],
        repeat=9,
        number=5,
    )
    print(
        f"(b) 512x512 experiment fwd+bwd: engine {engine * 1e3:.2f} ms, hand-written numpy doing Burn's work "
        f"(exp recomputed in backward) {burn_work * 1e3:.2f} ms, ratio {engine / burn_work:.2f}x (target <= 1.15x)"
    )
    print(
        f"    hand-written numpy keeping exp(x) instead: {kept_exp * 1e3:.2f} ms ({engine / kept_exp:.2f}x); "
        f"with the engine's correctly rounded exp: {same_math * 1e3:.2f} ms ({engine / same_math:.2f}x)"
    )
    mlx_section()
    for policy in ("lazy", "eager"):
        early, total = heap_growth(policy)
        print(
            f"(e) Python heap growth, {policy} policy: {early / 1024:+.1f} KiB after 1,000 iterations, "
            f"{total / 1024:+.1f} KiB after 10,000 (target: flat)"
        )
    recording_section()
    structure_section()
    print("(h) HIPS autograd's bench_core shapes, per op, forward + backward:")
    per_op_section()
    flatness_section()
    retained_section()


if __name__ == "__main__":
    main()
