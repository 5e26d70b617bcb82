"""The Training lesson: a small MLP learns a 2-D classification with softmax cross-entropy and SGD, one iteration
at a time, so a page can draw its loss curve and decision boundary live and a course's tests can run every step.

Each iteration builds a fresh graph (the forward), consumes it (the backward) and updates the parameters on the
inner device, as Burn's optimizers do (`tensor.inner()`): no step is registered for the update, so the next
iteration's graph starts again at the parameters and memory stays flat. Doing the update on the autodiff device
is the classic mistake; `Training(update="autodiff")` makes it, and stops with what the engine says.
No Streamlit here: plain Python, tested on its own."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from autodiff import (
    BackwardRecorder,
    Device,
    Distribution,
    Gradients,
    GraphSnapshot,
    MemoryUsage,
    NodeStatus,
    Requirement,
    Tensor,
)
from autodiff.activation import relu, softmax
from autodiff.loss import cross_entropy_with_logits
from autodiff.stage.naming import node_names

from .programs import traced_call

DATASETS = ("two moons", "spirals")
UPDATES = ("inner", "detach", "autodiff")  # the right way; right, with steps swept later; the mistake
MAX_ITERATIONS = 2000  # per training: each keeps its starting parameters (~100 floats) for the replay


def make_dataset(name: str, samples: int, seed: int = 0, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """`samples` points in 2-D (float32, centred near the origin) and their class, 0 or 1, half each: two
    interleaving half-circles ("two moons", as scikit-learn draws them) or two interleaving spirals."""
    if name not in DATASETS:
        raise ValueError(f"There is no dataset called {name!r}: choose one of {', '.join(DATASETS)}.")
    rng = np.random.default_rng(seed)
    half = samples // 2
    labels = np.repeat([0, 1], [half, samples - half])
    if name == "two moons":
        angle = np.concatenate([np.linspace(0, math.pi, half), np.linspace(0, math.pi, samples - half)])
        upper = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        lower = np.stack([1 - np.cos(angle), 0.5 - np.sin(angle)], axis=1)
        points = np.where(labels[:, None] == 0, upper, lower) - [0.5, 0.25]
    else:
        turn = np.concatenate([np.linspace(0.25, 1, half), np.linspace(0.25, 1, samples - half)])
        angle = turn * 3 * math.pi + labels * math.pi  # the second spiral is the first turned half a circle
        points = np.stack([turn * np.cos(angle), turn * np.sin(angle)], axis=1) * 1.5
    points = points + rng.normal(0.0, noise, points.shape)
    return points.astype(np.float32), labels


@dataclass
class Mlp:
    """Two layers: 2 inputs -> `hidden` ReLU units -> 2 logits, one per class."""

    w1: Tensor
    b1: Tensor
    w2: Tensor
    b2: Tensor

    @staticmethod
    def init(hidden: int, ad: Device) -> Mlp:
        return Mlp(
            Tensor.random([2, hidden], Distribution.normal(0.0, 1.0), ad).require_grad(),
            Tensor.zeros([1, hidden], ad).require_grad(),
            Tensor.random([hidden, 2], Distribution.normal(0.0, 1.0 / math.sqrt(hidden)), ad).require_grad(),
            Tensor.zeros([1, 2], ad).require_grad(),
        )

    def parameters(self) -> dict[str, Tensor]:
        return {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": self.b2}

    def values(self) -> dict[str, np.ndarray]:
        return {name: p.numpy().copy() for name, p in self.parameters().items()}


def forward(model: Mlp, points: Tensor, targets: Tensor) -> dict[str, Tensor]:
    """One iteration's graph: a fresh one each time, from the parameters to the loss."""
    hidden = relu(points @ model.w1 + model.b1)
    logits = hidden @ model.w2 + model.b2
    loss = cross_entropy_with_logits(logits, targets)
    return {"hidden": hidden, "logits": logits, "loss": loss}


def sgd_update(param: Tensor, grads: Gradients, learning_rate: float) -> Tensor:
    """w − lr·∂loss/∂w on the inner device: no step registered (Burn's optimizers update `tensor.inner()`)."""
    grad = param.grad(grads)
    if grad is None:
        raise MissingGradientError(param)
    updated = param.without_autodiff() - grad * learning_rate
    return Tensor.from_inner(updated, param.device).require_grad()


def sgd_update_detached(param: Tensor, grads: Gradients, learning_rate: float) -> Tensor:
    """On the autodiff device, then detach(): a new leaf, but the ops' steps wait for the next backward's sweep."""
    grad = param.grad(grads)
    if grad is None:
        raise MissingGradientError(param)
    return (param - Tensor.from_inner(grad, param.device) * learning_rate).detach().require_grad()


def sgd_update_on_autodiff(param: Tensor, grads: Gradients, learning_rate: float) -> Tensor:
    """The mistake: the new w is the output of a tracked subtraction, not a leaf, so it gets no gradient."""
    grad = param.grad(grads)
    if grad is None:
        raise MissingGradientError(param)
    return param - Tensor.from_inner(grad, param.device) * learning_rate


UPDATE_RULES = {"inner": sgd_update, "detach": sgd_update_detached, "autodiff": sgd_update_on_autodiff}


class MissingGradientError(Exception):
    """A parameter has no gradient after backward: it stopped being a leaf (the update ran on the autodiff device)."""

    def __init__(self, param: Tensor) -> None:
        super().__init__(
            "It is no longer a leaf but the output of the previous update's subtraction, an intermediate, and "
            "backward keeps no gradient for intermediates. Do the update on the inner device (without_autodiff(), "
            "as Burn's optimizers do) or detach() its result."
        )
        self.param = param


def tape_steps(snapshot: GraphSnapshot, loss: Tensor) -> int:
    """How many operations the loss was computed from, through tracked inputs: the steps its backward runs."""
    by_id = {n.id: n for n in snapshot.nodes}
    assert loss.node_id is not None, "the loss is on the training's autodiff device"
    seen, todo = set(), [loss.node_id]
    while todo:
        node = by_id[todo.pop()]
        if node.id not in seen and node.requirement is Requirement.GradInBackward:
            seen.add(node.id)
            todo.extend(node.parents)
    return len(seen)


@dataclass(frozen=True)
class Iteration:
    """What one iteration did, measured after its update."""

    number: int  # 1 for the first
    loss: float
    accuracy: float  # on the training points, with the parameters the loss was computed with
    tape: int  # operations backward runs: the steps the loss was computed from (not the leaves)
    abandoned: int  # steps no live tensor needs (an update's, made on the autodiff device): this backward sweeps them
    graph_usage: MemoryUsage  # before backward: the parameters, the data and what the forward's steps saved
    usage: MemoryUsage  # after the update: the parameters and the data


@dataclass
class Training:
    """SGD on one dataset, one iteration per `step()`: its own autodiff device, so a page keeps it per session."""

    dataset: str = "two moons"
    samples: int = 200
    hidden: int = 16
    learning_rate: float = 0.5
    update: str = "inner"
    seed: int = 0
    backend: str = "numpy"
    history: list[Iteration] = field(init=False, default_factory=list)
    checkpoints: list[dict[str, np.ndarray]] = field(init=False, default_factory=list)  # before each iteration
    stopped: str | None = field(init=False, default=None)  # why training stopped early, in a sentence

    def __post_init__(self) -> None:
        if self.update not in UPDATE_RULES:
            raise ValueError(f"There is no update called {self.update!r}: choose one of {', '.join(UPDATES)}.")
        self.points, self.labels = make_dataset(self.dataset, self.samples, self.seed)
        self.ad = Device.named(self.backend, seed=self.seed).autodiff()
        self.inputs = Tensor.from_floats(self.points, self.ad)  # data: untracked leaves, no gradient kept
        self.targets = Tensor.from_floats(np.eye(2, dtype=np.float32)[self.labels], self.ad)
        self.model = Mlp.init(self.hidden, self.ad)
        self.start_usage = self.ad.memory_usage()

    @property
    def iterations(self) -> int:
        return len(self.history)

    def step(self) -> Iteration | None:
        """One iteration: forward (a fresh graph), backward (consumes it), SGD update. None once stopped."""
        if self.stopped is not None:
            return None
        if self.iterations >= MAX_ITERATIONS:
            self.stopped = f"Training stopped after {MAX_ITERATIONS} iterations: start over to train again."
            return None
        self.checkpoints.append(self.model.values())
        outputs = forward(self.model, self.inputs, self.targets)
        pending = self.ad.snapshot()
        tape = tape_steps(pending, outputs["loss"])
        abandoned = sum(n.status is NodeStatus.ABANDONED for n in pending.nodes if n.id in pending.pending_steps)
        accuracy = float((outputs["logits"].numpy().argmax(axis=1) == self.labels).mean())
        loss = outputs["loss"].item()
        grads = outputs["loss"].backward()
        del outputs  # the forward's tensors: only the parameters outlive an iteration
        self.stopped = self._update(grads)
        del grads
        iteration = Iteration(
            self.iterations + 1,
            loss,
            accuracy,
            tape,
            abandoned,
            pending.memory,
            self.ad.memory_usage(),
        )
        self.history.append(iteration)
        return iteration

    def _update(self, grads: Gradients) -> str | None:
        """Every parameter updated by the chosen rule; why training cannot go on, if a parameter has no gradient.
        (A method, so the old parameters die with its frame before memory is measured.)"""
        rule = UPDATE_RULES[self.update]
        updated = {}
        for name, param in self.model.parameters().items():
            try:
                updated[name] = rule(param, grads, self.learning_rate)
            except MissingGradientError as missing:
                return (
                    f"Iteration {self.iterations + 2} cannot run: {name} has no gradient after iteration "
                    f"{self.iterations + 1}'s backward. {missing}"
                )
        self.model = Mlp(**updated)
        return None

    def predict(self, points: np.ndarray, values: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Class probabilities for `points` with the current parameters (or `values`), computed by the engine on the
        inner device: no graph, nothing held."""
        values = values if values is not None else self.model.values()
        inner = self.ad.inner
        w1, b1, w2, b2 = (Tensor.from_floats(values[k], inner) for k in ("w1", "b1", "w2", "b2"))
        hidden = relu(Tensor.from_floats(points.astype(np.float32), inner) @ w1 + b1)
        return softmax(hidden @ w2 + b2, 1).numpy()

    def boundary(self, cells: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The probability of class 1 on a `cells` × `cells` grid over the data (its x and y edges too)."""
        low, high = self.points.min(axis=0) - 0.3, self.points.max(axis=0) + 0.3
        xs, ys = np.linspace(low[0], high[0], cells + 1), np.linspace(low[1], high[1], cells + 1)
        centres = np.stack(np.meshgrid((xs[:-1] + xs[1:]) / 2, (ys[:-1] + ys[1:]) / 2), axis=-1).reshape(-1, 2)
        return self.predict(centres)[:, 1].reshape(cells, cells), xs, ys


@dataclass(frozen=True)
class IterationReplay:
    """One iteration's forward rebuilt from its checkpoint on a fresh device, with its backward recorded."""

    number: int
    before: GraphSnapshot
    recorder: BackwardRecorder
    names: dict[int, str]
    lines: dict[int, tuple[int, int]]
    loss: float

    source = inspect.getsource(forward)


def replay_iteration(training: Training, number: int) -> IterationReplay:
    """Iteration `number` (1-based) again, on a fresh device that keeps values for the picture: the same parameters,
    the same data, so the same loss and gradients as when it ran."""
    if not 1 <= number <= len(training.checkpoints):
        raise ValueError(f"There is no iteration {number}: training has run {len(training.checkpoints)}.")
    values = training.checkpoints[number - 1]
    ad = Device.named(training.backend, seed=training.seed).autodiff(keep_values=True)
    model = Mlp(**{name: Tensor.from_floats(v, ad).require_grad() for name, v in values.items()})
    points, targets = Tensor.from_floats(training.points, ad), Tensor.from_floats(training.targets.numpy(), ad)
    outputs, provenance = traced_call((forward,), IterationReplay.source, lambda: forward(model, points, targets), ad)
    before = ad.snapshot()
    recorder = BackwardRecorder()
    outputs["loss"].backward(recorder=recorder)
    names = {**provenance.names, **node_names({**model.parameters(), "points": points, "targets": targets, **outputs})}
    return IterationReplay(number, before, recorder, names, provenance.lines, outputs["loss"].item())
