"""Per-session experiments the lesson pages drive. Each lab owns its own autodiff device, so it
lives in `st.session_state` (never in a shared cache) and two users never see each other's work."""

from __future__ import annotations

from dataclasses import dataclass, field

from autodiff import (
    AutodiffError,
    Device,
    Distribution,
    Gradients,
    MemoryUsage,
    Requirement,
    TapeConsumedError,
    Tensor,
)
from autodiff.scenarios import format_values, gradient_consumption, memory_forward


@dataclass(frozen=True)
class Outcome:
    """What one button press did, in words."""

    action: str
    ok: bool
    result: str
    explanation: str
    refused_at: int | None = None


class ConsumptionLab:
    """The seed's gradient table, then free queries on the same `Gradients` container."""

    def __init__(self, backend: str = "numpy") -> None:
        self.backend = backend
        run = gradient_consumption(Device.named(backend).autodiff())
        self.ad = run.ad
        self.rows = run.rows
        self.tensors: dict[str, Tensor] = {"x": run.x, "unused": run.unused, "h": run.h, "loss": run.loss}
        self.grads: Gradients = run.grads
        self.removed: set[str] = {"x"}  # the seed's table ends with x.grad_remove
        self.replaced: set[str] = set()
        self.log: list[Outcome] = []

    def reason(self, name: str) -> str:
        tensor = self.tensors[name]
        if tensor.grad(self.grads) is not None:
            if name in self.replaced:
                return f"{name}'s entry was replaced with grad_replace."
            return f"{name} is a Grad leaf: its step keeps its gradient in the container."
        if tensor.requirement is Requirement.GradInBackward:
            return f"{name} is an op output (GradInBackward): its own step consumed and removed its gradient."
        if name in self.removed:
            return f"{name}'s gradient was taken out with grad_remove."
        return f"{name} is not an ancestor of the loss: backward never registered a gradient for it."

    def grad(self, name: str) -> Outcome:
        value = format_values(self.tensors[name].grad(self.grads))
        return self._log(Outcome(f"{name}.grad(&grads)", True, value, self.reason(name)))

    def grad_remove(self, name: str) -> Outcome:
        value = format_values(self.tensors[name].grad_remove(self.grads))
        explanation = (
            f"The entry of {name} was taken out and returned; the container no longer has it."
            if value != "None"
            else f"Nothing to remove. {self.reason(name)}"
        )
        if value != "None":
            self.removed.add(name)
            self.replaced.discard(name)
        return self._log(Outcome(f"{name}.grad_remove(&mut grads)", True, value, explanation))

    def grad_replace(self, name: str, values: list[float]) -> Outcome:
        tensor = self.tensors[name]
        try:
            tensor.grad_replace(self.grads, Tensor.from_floats(values, self.ad.inner))
        except AutodiffError as error:
            return self._log(Outcome(f"{name}.grad_replace(&mut grads, …)", False, "refused", str(error)))
        self.replaced.add(name)
        self.removed.discard(name)
        return self._log(
            Outcome(
                f"{name}.grad_replace(&mut grads, {values})",
                True,
                format_values(tensor.grad(self.grads)),
                "grad_replace removes the old entry, then inserts the new one: it replaces, it does not add.",
            )
        )

    def _log(self, outcome: Outcome) -> Outcome:
        self.log.append(outcome)
        return outcome


LOSSES = ("l1", "l2", "l3", "l1 + l2")


class TapeLab:
    """Backward twice, the shared-subgraph losses in any order, and detach()."""

    def __init__(self, backend: str = "numpy") -> None:
        self.backend = backend
        self.ad = Device.named(backend).autodiff()
        self.x = Tensor.from_floats([1.0, 2.0], self.ad).require_grad()
        self.unused = Tensor.from_floats([5.0, 5.0], self.ad).require_grad()  # as in the seed: same node ids
        self.h = self.x * self.x
        self.loss = (self.h + self.x * 3.0).sum()
        self.shared = self.x.exp()
        self.losses: dict[str, Tensor] = {
            "l1": (self.shared * 2.0).sum(),
            "l2": (self.shared * 3.0).sum(),
            "l3": (self.x * 4.0).sum(),
        }
        self.log: list[Outcome] = []
        self.refused_at: int | None = None

    @property
    def names(self) -> dict[int, str]:
        named = {
            "x": self.x,
            "unused": self.unused,
            "h": self.h,
            "loss": self.loss,
            "shared": self.shared,
            **self.losses,
        }
        return {int(t.node_id): name for name, t in named.items()}

    def backward(self, name: str) -> Outcome:
        if name == "loss":
            target = self.loss
        elif name == "l1 + l2":
            target = self.losses["l1"] + self.losses["l2"]
        else:
            target = self.losses[name]
        try:
            grads = target.backward()
        except TapeConsumedError as refusal:
            self.refused_at = int(refusal.node_id)
            who = self.names.get(self.refused_at, f"NodeId({self.refused_at})")
            return self._log(
                Outcome(
                    f"{name}.backward()",
                    False,
                    str(refusal),
                    f"The path from {name} to x passes through {who}, whose step an earlier backward already "
                    "ran and consumed. Burn keeps no copy (no retain_graph): recompute the forward pass, or "
                    "add the losses together before a single backward.",
                    self.refused_at,
                )
            )
        self.refused_at = None
        return self._log(
            Outcome(
                f"{name}.backward()",
                True,
                f"x.grad = {format_values(self.x.grad(grads))}",
                "Every step on the path from the loss to x ran once and is now consumed.",
            )
        )

    def detach_demo(self) -> Outcome:
        detached = self.shared.detach()
        grads = (detached * self.x).sum().backward()
        return self._log(
            Outcome(
                "(shared.detach() * x).sum().backward()",
                True,
                f"x.grad = {format_values(self.x.grad(grads))}",
                "detach() gives a new untracked leaf with the same values: gradient flows only through the "
                "direct use of x (so x.grad = exp(x)), never into shared's step, consumed or not.",
            )
        )

    def _log(self, outcome: Outcome) -> Outcome:
        self.log.append(outcome)
        return outcome


@dataclass(frozen=True)
class MemoryPoint:
    iteration: int
    label: str
    usage: MemoryUsage
    backend_bytes: int | None = None  # the backend's own counter (MLX active memory), when it has one


@dataclass
class MemoryLab:
    """The seed's memory experiment, one forward at a time, so the page can draw it live."""

    size: int
    iterations: int
    autodiff: bool
    backend: str = "numpy"
    device: Device = field(init=False)
    ad: Device = field(init=False)
    history: list[MemoryPoint] = field(init=False)
    done: int = 0

    def __post_init__(self) -> None:
        self.device = Device.named(self.backend)
        self.ad = self.device.autodiff()
        self.x = Tensor.random([self.size, self.size], Distribution.Default, self.ad).require_grad()
        self.input = self.x if self.autodiff else self.x.without_autodiff()
        self.history = [self._point(0, "x created")]

    @property
    def finished(self) -> bool:
        return self.done >= self.iterations

    def forward_once(self) -> None:
        memory_forward(self.input)  # the loss is dropped at once
        self.done += 1
        self.history.append(self._point(self.done, "forward, loss dropped"))

    def backward_now(self) -> None:
        memory_forward(self.x).backward()  # gradients dropped at once
        self.history.append(self._point(self.done, "one backward"))

    def _point(self, iteration: int, label: str) -> MemoryPoint:
        return MemoryPoint(iteration, label, self.ad.memory_usage(), self.ad.backend_memory().get("active"))


POLICIES = {
    "Burn (lazy sweep)": ("lazy", False),
    "PyTorch": ("eager", False),
    "PyTorch, retain_graph=True": ("eager", True),
}


def policy_comparison(backend: str = "numpy") -> list[dict[str, str]]:
    """The backward-twice and shared-subgraph programs under each policy, run live."""
    rows = []
    for program in ("backward twice on the same loss", "l1.backward(), then l2.backward() through shared"):
        row = {"Program": program}
        for label, (policy, retain) in POLICIES.items():
            ad = Device.named(backend).autodiff(memory_policy=policy)
            x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
            if program.startswith("backward twice"):
                first = second = ((x * x) + x * 3.0).sum()
            else:
                shared = x.exp()
                first, second = (shared * 2.0).sum(), (shared * 3.0).sum()
            grads = first.backward(retain_graph=True) if retain else first.backward()
            try:
                grads = second.backward(into=grads) if retain else second.backward()
            except TapeConsumedError as refusal:
                row[label] = f"second backward refused at NodeId({int(refusal.node_id)})"
            else:
                row[label] = f"runs; x.grad accumulates to {format_values(x.grad(grads))}"
        rows.append(row)
    return rows
