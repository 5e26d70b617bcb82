"""The programs the lessons run, each written once. Each is an ordinary function; the app shows its
real source, and `record_program` runs one on a fresh device with its backward recorded."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import TypeVar

import numpy as np

from autodiff import BackwardRecorder, Device, Distribution, Gradients, GraphSnapshot, Tensor
from autodiff.snapshot import GraphNode
from autodiff.stage.naming import node_names
from autodiff.stage.recording import Provenance, recorded_backward, traced_call

T = TypeVar("T")


def seed_program(ad: Device) -> dict[str, Tensor]:
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    unused = Tensor.from_floats([5.0, 5.0], ad).require_grad()
    h = x * x  # x appears on two paths: x*x and x*3
    loss = (h + x * 3.0).sum()
    return {"x": x, "unused": unused, "h": h, "loss": loss}


def shared_losses(x: Tensor) -> dict[str, Tensor]:
    shared = x.exp()
    l1 = (shared * 2.0).sum()
    l2 = (shared * 3.0).sum()
    return {"shared": shared, "l1": l1, "l2": l2}


def shared_subgraph_program(ad: Device) -> dict[str, Tensor]:
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    losses = shared_losses(x)
    loss = losses["l1"] + losses["l2"]  # combine the losses, then one backward
    return {"x": x, **losses, "loss": loss}


def memory_forward(x: Tensor) -> Tensor:
    """The seed's `forward(x) = (x.exp() * x).matmul(x).sum()`."""
    return (x.exp() * x).matmul(x).sum()


def neuron_program(ad: Device) -> dict[str, Tensor]:
    w = Tensor.from_floats([[0.5, -0.3, 0.8]], ad).require_grad()
    x = Tensor.from_floats([[1.0], [2.0], [3.0]], ad)  # an input: no gradient needed
    b = Tensor.from_floats([[0.1]], ad).require_grad()
    out = (w @ x + b).tanh()
    loss = out.sum()
    return {"w": w, "x": x, "b": b, "out": out, "loss": loss}


def mlp_program(ad: Device) -> dict[str, Tensor]:
    batch = Tensor.from_floats([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, -1.0]], ad)
    target = Tensor.from_floats([[1.0], [1.0], [0.0], [0.5]], ad)
    w1 = Tensor.random([2, 3], Distribution.normal(0.0, 0.8), ad).require_grad()
    b1 = Tensor.zeros([1, 3], ad).require_grad()
    w2 = Tensor.random([3, 1], Distribution.normal(0.0, 0.8), ad).require_grad()
    hidden = (batch @ w1 + b1).relu()
    pred = hidden @ w2
    loss = ((pred - target) ** 2).mean()
    return {
        "batch": batch,
        "target": target,
        "w1": w1,
        "b1": b1,
        "w2": w2,
        "hidden": hidden,
        "pred": pred,
        "loss": loss,
    }


def layer1(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return (x @ w + b).tanh()


def layer2(h: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return (h @ w + b).tanh()


def layer3(h: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return h @ w + b


# fmt: skip in its last line: its source is the lesson's, and a student reads the returned names in one glance
def mlp3_program(ad: Device) -> dict[str, Tensor]:
    batch = Tensor.from_floats([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, -1.0]], ad)
    target = Tensor.from_floats([[1.0], [1.0], [0.0], [0.5]], ad)
    w1 = Tensor.random([2, 4], Distribution.normal(0.0, 0.8), ad).require_grad()
    b1 = Tensor.zeros([1, 4], ad).require_grad()
    w2 = Tensor.random([4, 4], Distribution.normal(0.0, 0.8), ad).require_grad()
    b2 = Tensor.zeros([1, 4], ad).require_grad()
    w3 = Tensor.random([4, 1], Distribution.normal(0.0, 0.8), ad).require_grad()
    b3 = Tensor.zeros([1, 1], ad).require_grad()
    h1 = layer1(batch, w1, b1)
    h2 = layer2(h1, w2, b2)
    pred = layer3(h2, w3, b3)
    loss = ((pred - target) ** 2).mean()
    return {"batch": batch, "target": target, "w1": w1, "b1": b1, "w2": w2, "b2": b2, "w3": w3, "b3": b3,
            "h1": h1, "h2": h2, "pred": pred, "loss": loss}  # fmt: skip


def elementwise_chain_program(ad: Device) -> dict[str, Tensor]:
    x = Tensor.random([256, 256], Distribution.normal(0.0, 0.5), ad).require_grad()
    w = Tensor.random([256, 256], Distribution.normal(0.0, 0.05), ad).require_grad()
    y = x @ w
    for _ in range(4):
        y = (y * 0.5).tanh() * y + y.sigmoid()
    loss = y.mean()
    return {"x": x, "w": w, "loss": loss}


@dataclass(frozen=True)
class Program:
    key: str
    title: str
    summary: str
    build: Callable[[Device], dict[str, Tensor]]
    helpers: tuple[Callable[..., object], ...] = ()  # functions `build` calls, shown before it

    @functools.cached_property  # read on every page open: inspect reads the file each time
    def source(self) -> str:
        return "\n\n".join(textwrap.dedent(inspect.getsource(f)) for f in (*self.helpers, self.build))


# fmt: skip below: a table, one program per row
PROGRAMS: dict[str, Program] = {
    p.key: p
    for p in [
        Program("seed", "Seed: x·x + 3x", "The seed's first program: x is used on two paths.", seed_program),
        Program("shared", "Shared subgraph", "Two losses share `x.exp()`; combined, then one backward.",
                shared_subgraph_program, (shared_losses,)),
        Program("neuron", "Neuron: tanh(w @ x + b)", "One neuron; x is an input that needs no gradient.",
                neuron_program),
        Program("mlp", "Two-layer MLP", "A tiny MLP with a squared-error loss on a batch of 4.", mlp_program),
        Program("mlp3", "Three-layer MLP (a function per layer)",
                "Three layers, each its own function (2 → 4 → 4 → 1), with a squared-error loss on a batch of 4.",
                mlp3_program, (layer1, layer2, layer3)),
    ]
}  # fmt: skip

# fmt: skip below: a table, one program per row
CHECKPOINTING_PROGRAMS: dict[str, Program] = {
    **PROGRAMS,
    "chain": Program("chain", "Elementwise chain (256 × 256)",
                     "A matmul, then four elementwise blocks: most of what it saves can be recomputed.",
                     elementwise_chain_program),
}  # fmt: skip


def source_offsets(functions: Sequence[Callable[..., object]]) -> dict[CodeType, int]:
    """Each function's code -> what turns its file line into a line of the functions' joined source (as
    `Program.source` joins them, or one function's source alone)."""
    offsets: dict[CodeType, int] = {}
    line = 0
    for function in functions:
        lines, first = inspect.getsourcelines(function)
        offsets[function.__code__] = line + 1 - first
        line += len(lines) + 2  # `source` joins the functions with "\n\n" after their own last "\n"
    return offsets


@dataclass(frozen=True)
class DrawnNumbers:
    """A program's numbers drawn anew (a class's own, `draw_numbers`): each function's source with its
    `Tensor.from_floats` literals replaced, and the seed of the device its `Tensor.random` tensors are drawn on."""

    functions: tuple[str, ...]  # each of the program's functions (helpers first), as `Program.source` shows it
    device_seed: int

    @property
    def source(self) -> str:
        return "\n\n".join(self.functions)


def draw_numbers(program: Program, rng: np.random.Generator) -> DrawnNumbers:
    """`program` with numbers of its own: each literal given to `Tensor.from_floats` becomes small, readable values of
    the same shape (whole numbers where it had whole numbers, else one decimal; never 0, so no question's answer
    collapses onto a mistake's), and its random tensors come from another device seed."""
    functions = tuple(
        _drawn_literals(textwrap.dedent(inspect.getsource(f)), rng) for f in (*program.helpers, program.build)
    )
    return DrawnNumbers(functions, int(rng.integers(1, 2**31)))


def _drawn_literals(text: str, rng: np.random.Generator) -> str:
    """`text` (one function's source) with the list literal of each `Tensor.from_floats(...)` call drawn anew, on
    the same lines (the statements keep their line numbers)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.List):
            continue
        literal = node.args[0]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "from_floats":
            assert literal.end_lineno is not None and literal.end_col_offset is not None
            span = (
                starts[literal.lineno - 1] + literal.col_offset,
                starts[literal.end_lineno - 1] + literal.end_col_offset,
            )
            found.append((span, ast.literal_eval(literal)))
    encoded = text.encode()
    for (start, end), values in sorted(found, reverse=True):  # from the end: earlier offsets stay right
        original = np.array(values, dtype=np.float64)
        drawn = _nice_values(original, rng)
        while np.array_equal(drawn, original):  # never the lesson's own numbers
            drawn = _nice_values(original, rng)
        encoded = encoded[:start] + _literal_text(drawn.tolist()).encode() + encoded[end:]
    return encoded.decode()


def _nice_values(original: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values of `original`'s shape, as readable as its own: halves up to 4 (or its largest) where it has whole numbers
    only (exact in float32, so every sum and product reads short), else tenths up to 1 (or its largest); each with a
    random sign, none 0. A two-number input has 255 draws besides the lesson's."""
    top = max(float(np.abs(original).max()), 1.0)
    whole = bool(np.all(original == np.round(original)))
    step = 0.5 if whole else 0.1
    steps = int(round(max(top, 4.0 if whole else 1.0) / step))
    size = rng.integers(1, steps + 1, size=original.shape) * rng.choice([-1, 1], size=original.shape)
    return np.round(size * step, 1)


def _literal_text(values: object) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_literal_text(v) for v in values) + "]"
    return repr(float(values))  # type: ignore[arg-type]


def traced_build(
    program: Program, ad: Device, numbers: DrawnNumbers | None = None
) -> tuple[dict[str, Tensor], Provenance]:
    """`program.build(ad)`, watching each statement of the program's own functions as it runs; with `numbers`, its
    functions as `numbers` wrote them, compiled where the originals are (their file and lines: what the engine reads
    of a function's source, its loops, is the same), so the same statements make the same nodes."""
    __autodiff_hidden__ = True  # noqa: F841 (a harness: the program's nodes show its own functions, not these)
    functions = (*program.helpers, program.build)
    offsets = source_offsets(functions)
    if numbers is None:
        return traced_call(offsets.get, program.source, functools.partial(program.build, ad), ad)
    namespace = dict(vars(sys.modules[__name__]))  # what the programs name: Tensor, Distribution, their helpers
    drawn_offsets: dict[CodeType, int] = {}
    for function, text in zip(functions, numbers.functions, strict=True):
        first = inspect.getsourcelines(function)[1]
        # our own source with the numbers we drew, nothing a visitor wrote: compiled at the original's lines
        exec(compile("\n" * (first - 1) + text, function.__code__.co_filename, "exec"), namespace)
        drawn_offsets[namespace[function.__name__].__code__] = offsets[function.__code__]
    build = namespace[program.build.__name__]
    return traced_call(drawn_offsets.get, numbers.source, functools.partial(build, ad), ad)


@dataclass
class ProgramRun:
    """A program built on a fresh device, with its graph before backward and a recorded backward."""

    program: Program
    device: Device
    tensors: dict[str, Tensor]
    before: GraphSnapshot
    recorder: BackwardRecorder
    grads: Gradients
    graph: list[GraphNode]  # the loss's graph, captured before backward (for the MLX cross-check)
    names: dict[int, str] = field(default_factory=dict)
    lines: dict[int, tuple[int, int]] = field(default_factory=dict)  # NodeId -> the statement that made it

    @property
    def backend(self) -> str:
        return self.device.backend.name


def record_program(
    key: str,
    backend: str = "numpy",
    checkpointing: str = "none",
    memory_entries: int = 0,
    numbers: DrawnNumbers | None = None,
) -> ProgramRun:
    """Run a program on a fresh seeded device and record the backward of its `loss` (and, when `memory_entries` is
    set, the device's memory history, keeping that many entries); with `numbers`, on numbers of its own (a class's)."""
    __autodiff_hidden__ = True  # noqa: F841 (a harness, not the program: see `autodiff.structure`)
    program = CHECKPOINTING_PROGRAMS[key]
    seed = 0 if numbers is None else numbers.device_seed
    ad = Device.named(backend, seed=seed).autodiff(checkpointing=checkpointing, keep_values=True)
    if memory_entries:
        ad.record_memory_history(max_entries=memory_entries)
    tensors, provenance = traced_build(program, ad, numbers)
    loss_id = tensors["loss"].node_id
    assert loss_id is not None, "a program's loss is on its autodiff device"
    graph = ad.graph_of(loss_id)
    run = recorded_backward(tensors["loss"])
    names = {**provenance.names, **node_names(tensors)}  # what it returns names a node last
    return ProgramRun(program, ad, tensors, run.before, run.recorder, run.grads, graph, names, provenance.lines)
