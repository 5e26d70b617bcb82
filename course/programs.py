"""The programs the lessons run, each written once. Each is an ordinary function; the app shows its
real source, and `record_program` runs one on a fresh device with its backward recorded."""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from autodiff import BackwardRecorder, Device, Distribution, Gradients, GraphSnapshot, Tensor
from autodiff.snapshot import GraphNode

from .naming import node_names


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


PROGRAMS: dict[str, Program] = {
    p.key: p
    for p in [
        Program("seed", "Seed: x·x + 3x", "The seed's first program: x is used on two paths.", seed_program),
        Program("shared", "Shared subgraph", "Two losses share `x.exp()`; combined, then one backward.",
                shared_subgraph_program, (shared_losses,)),
        Program("neuron", "Neuron: tanh(w @ x + b)", "One neuron; x is an input that needs no gradient.",
                neuron_program),
        Program("mlp", "Two-layer MLP", "A tiny MLP with a squared-error loss on a batch of 4.", mlp_program),
    ]
}  # fmt: skip

CHECKPOINTING_PROGRAMS: dict[str, Program] = {
    **PROGRAMS,
    "chain": Program("chain", "Elementwise chain (256 × 256)",
                     "A matmul, then four elementwise blocks: most of what it saves can be recomputed.",
                     elementwise_chain_program),
}  # fmt: skip


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

    @property
    def backend(self) -> str:
        return self.device.backend.name


def record_program(key: str, backend: str = "numpy", checkpointing: str = "none") -> ProgramRun:
    """Run a program on a fresh seeded device and record the backward of its `loss`."""
    program = CHECKPOINTING_PROGRAMS[key]
    ad = Device.named(backend, seed=0).autodiff(checkpointing=checkpointing, keep_values=True)
    tensors = program.build(ad)
    before = ad.snapshot()
    graph = ad.server.graph_of(tensors["loss"].node_id)
    recorder = BackwardRecorder()
    grads = tensors["loss"].backward(recorder=recorder)
    return ProgramRun(program, ad, tensors, before, recorder, grads, graph, node_names(tensors))
