"""The seed's scenarios, as importable functions, and `python -m course.scenarios` to print
them in the seed's form.

The seed ran every program in one Rust process, so node ids continue from one scenario to the
next: the shared-subgraph scenario reuses the first scenario's `x` (a leaf may be reused freely),
which is why its refusal names NodeId(6).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from autodiff import Device, Distribution, Gradients, MemoryUsage, TapeConsumedError, Tensor

from .programs import memory_forward, seed_program, shared_losses

LABEL_WIDTH = 35


def python_value(tensor: Tensor | None) -> str:
    """A gradient as Python returns it, in the app's words: its values `[5.0, 7.0]` (float32's shortest form, as the
    seed prints them), or `None`."""
    if tensor is None:
        return "None"
    values = tensor.numpy().astype(np.float32).ravel()
    return "[" + ", ".join(str(np.float32(v)) for v in values) + "]"


def format_option(tensor: Tensor | None) -> str:
    """A gradient as the seed's Rust prints it: `Some([5.0, 7.0])` or `None` (only where the seed is quoted)."""
    return "None" if tensor is None else f"Some({python_value(tensor)})"


def format_dims(tensor: Tensor | None) -> str:
    return "None" if tensor is None else f"Some({tensor.dims()})"


@dataclass(frozen=True)
class GradRow:
    """One line of the gradient-consumption table, with the reason in plain words."""

    expression: str  # as the seed labels it: `x.grad`, `x.grad again`
    value: str  # as the seed prints it: `Some([5.0, 7.0])`
    reason: str

    @property
    def call(self) -> str:
        """The Python call: `x.grad(grads)`, `x.grad(grads)  # again`."""
        name, _, rest = self.expression.partition(".")
        method, _, note = rest.partition(" ")
        return f"{name}.{method}(grads)" + (f"  # {note}" if note else "")

    @property
    def returns(self) -> str:
        """What Python returns: `[5.0, 7.0]` or `None` (the seed's `Some(…)` is Rust's way to say there is one)."""
        return self.value.removeprefix("Some(").removesuffix(")") if self.value.startswith("Some(") else self.value


@dataclass
class ConsumptionRun:
    ad: Device
    x: Tensor
    unused: Tensor
    h: Tensor
    loss: Tensor
    grads: Gradients
    rows: list[GradRow]


def gradient_consumption(ad: Device) -> ConsumptionRun:
    """The seed's first program: x used on two paths, an unused leaf, the grad table."""
    x, unused, h, loss = seed_program(ad).values()
    grads = loss.backward()
    rows = [
        GradRow(
            "x.grad",
            format_option(x.grad(grads)),
            "x is a leaf that asked for its gradient (require_grad, Burn's Grad): its step keeps it; both paths "
            "(x·x and x·3) added up.",
        ),
        GradRow(
            "h.grad",
            format_option(h.grad(grads)),
            "h is an op output (Burn's GradInBackward: its gradient lives only during backward): its step "
            "consumed (removed) it.",
        ),
        GradRow(
            "loss.grad",
            format_dims(loss.grad(grads)),
            "The loss is an op output too: its seed gradient was consumed by its own step.",
        ),
        GradRow(
            "unused.grad",
            format_option(unused.grad(grads)),
            "unused is not an ancestor of the loss: backward never registered a gradient for it.",
        ),
        GradRow(
            "x.grad_remove",
            format_option(x.grad_remove(grads)),
            "grad_remove takes the gradient out of the container and returns it.",
        ),
        GradRow("x.grad again", format_option(x.grad(grads)), "It was removed, so the container no longer has it."),
    ]
    return ConsumptionRun(ad, x, unused, h, loss, grads, rows)


def try_backward(loss: Tensor) -> TapeConsumedError | None:
    """Run backward, returning the refusal instead of raising it (None when it ran)."""
    try:
        loss.backward()
    except TapeConsumedError as refusal:
        return refusal
    return None


@dataclass
class SharedSubgraphRun:
    l1_grad: str
    l2_refusal: TapeConsumedError | None
    l3_grad: str
    combined_grad: str
    detached_tracked: bool
    detached_require_grad: bool


def shared_subgraph(ad: Device, x: Tensor) -> SharedSubgraphRun:
    """Two losses over one `shared = x.exp()`: the first backward consumes `shared`'s step."""
    shared, l1, l2 = shared_losses(x).values()
    l1_grad = format_option(x.grad(l1.backward()))
    refusal = try_backward(l2)
    l3_grad = format_option(x.grad((x * 4.0).sum().backward()))
    fresh = x.exp()  # the consumed step cannot be reused: recompute, then combine the losses
    combined = (fresh * 2.0).sum() + (fresh * 3.0).sum()
    combined_grad = format_option(x.grad(combined.backward()))
    detached = shared.detach()
    return SharedSubgraphRun(l1_grad, refusal, l3_grad, combined_grad, detached.is_tracked, detached.is_require_grad)


MemoryRow = tuple[str, MemoryUsage]


def memory_experiment(
    device: Device | None = None,
    size: int = 512,
    iterations: int = 20,
    report_every: int = 5,
    memory_policy: str = "lazy",
) -> Iterator[MemoryRow]:
    """The seed's memory experiment, one row at a time (a generator, so a UI can draw it live). `device` may be an
    autodiff device already (its own policy then), so that the caller can snapshot its graph afterwards."""
    device = device or Device.numpy()
    ad = device if device.is_autodiff else device.autodiff(memory_policy)
    x = Tensor.random([size, size], Distribution.Default, ad).require_grad()
    yield f"after creating x ({_size_text(x)})", ad.memory_usage()
    for i in range(1, iterations + 1):
        loss = memory_forward(x)
        del loss
        if i % report_every == 0:
            yield f"forward-only x{i}, loss dropped", ad.memory_usage()
    grads = memory_forward(x).backward()
    yield "after one backward", ad.memory_usage()
    del grads
    yield "grads dropped", ad.memory_usage()
    xi = x.without_autodiff()
    for i in range(1, iterations + 1):
        loss = memory_forward(xi)
        del loss
        if i % (2 * report_every) == 0:
            yield f"without_autodiff forward x{i}", ad.memory_usage()


def abandoned_graphs_experiment(
    device: Device | None = None, size: int = 512, graphs: int = 5, memory_policy: str = "lazy"
) -> Iterator[MemoryRow]:
    """The seed's second experiment: abandoned graphs keep their memory; an untracked op and a
    read free nothing; one unrelated backward frees all of it."""
    device = device or Device.numpy()
    ad = device.autodiff(memory_policy)
    for _ in range(graphs):
        x = Tensor.random([size, size], Distribution.Default, ad).require_grad()
        memory_forward(x)
    del x
    yield f"{graphs} abandoned graphs", ad.memory_usage()
    for i in (1, 2):
        constant = Tensor.ones([size, size], ad)
        (constant.exp() * 2.0).sum().item()
        del constant
        yield f"control: untracked op + read #{i}", ad.memory_usage()
    y = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    (y * y).sum().backward()
    yield "after unrelated backward #1", ad.memory_usage()


def _size_text(tensor: Tensor) -> str:
    nbytes = tensor.data.allocation.owned_bytes
    return f"{nbytes / 2**20:g} MiB" if nbytes >= 2**20 else f"{nbytes} B"


def format_memory_row(row: MemoryRow) -> str:
    label, usage = row
    return f"{label:<{LABEL_WIDTH}}{usage}"


def run_all(backend: str = "numpy", print_line: Callable[[str], None] = print) -> None:
    ad = Device.named(backend).autodiff()
    run = gradient_consumption(ad)
    for row in run.rows:
        print_line(f"{row.expression:<13}= {row.value}")
    print_line("")
    refusal = try_backward(run.loss)
    print_line(f"TapeConsumedError: {refusal}")
    print_line(f"backward twice on the same loss: {'refused' if refusal else 'ran'}")
    shared = shared_subgraph(ad, run.x)
    print_line(f"l1 -> x.grad = {shared.l1_grad}")
    print_line("")
    print_line(f"TapeConsumedError: {shared.l2_refusal}")
    print_line(f"l2.backward after l1 consumed `shared`: {'refused' if shared.l2_refusal else 'ran'}")
    print_line(f"l3 -> x.grad = {shared.l3_grad}")
    print_line(f"l1+l2 -> x.grad = {shared.combined_grad}")
    print_line(
        f"detached: is_tracked={str(shared.detached_tracked).lower()} "
        f"is_require_grad={str(shared.detached_require_grad).lower()}"
    )
    print_line("")
    for memory_row in memory_experiment(Device.named(backend)):
        print_line(format_memory_row(memory_row))
    print_line("")
    for memory_row in abandoned_graphs_experiment(Device.named(backend)):
        print_line(format_memory_row(memory_row))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Run every seed scenario and print it in the seed's form.")
    parser.add_argument("--backend", choices=["numpy", "mlx"], default="numpy")
    run_all(parser.parse_args().backend)
