"""The programs the lessons run, each written once. Each is an ordinary function; the app shows its
real source, and `record_program` runs one on a fresh device with its backward recorded."""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import TypeVar

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


def traced_build(program: Program, ad: Device) -> tuple[dict[str, Tensor], Provenance]:
    """`program.build(ad)`, watching each statement of the program's own functions as it runs."""
    __autodiff_hidden__ = True  # noqa: F841 (a harness: the program's nodes show its own functions, not these)
    functions = (*program.helpers, program.build)
    return traced_call(source_offsets(functions).get, program.source, functools.partial(program.build, ad), ad)


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
    key: str, backend: str = "numpy", checkpointing: str = "none", memory_entries: int = 0
) -> ProgramRun:
    """Run a program on a fresh seeded device and record the backward of its `loss` (and, when `memory_entries` is
    set, the device's memory history, keeping that many entries)."""
    __autodiff_hidden__ = True  # noqa: F841 (a harness, not the program: see `autodiff.structure`)
    program = CHECKPOINTING_PROGRAMS[key]
    ad = Device.named(backend, seed=0).autodiff(checkpointing=checkpointing, keep_values=True)
    if memory_entries:
        ad.record_memory_history(max_entries=memory_entries)
    tensors, provenance = traced_build(program, ad)
    loss_id = tensors["loss"].node_id
    assert loss_id is not None, "a program's loss is on its autodiff device"
    graph = ad.graph_of(loss_id)
    run = recorded_backward(tensors["loss"])
    names = {**provenance.names, **node_names(tensors)}  # what it returns names a node last
    return ProgramRun(program, ad, tensors, run.before, run.recorder, run.grads, graph, names, provenance.lines)
