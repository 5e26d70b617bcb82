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
from collections import deque
from dataclasses import dataclass, field
from typing import Any

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
from autodiff.ids import NodeId
from autodiff.loss import cross_entropy_with_logits
from autodiff.observer import Observer
from autodiff.stage.naming import node_names
from autodiff.stage.recording import recorded_backward, traced_call

from .programs import source_offsets

DATASETS = ("two moons", "spirals")
UPDATES = ("inner", "detach", "autodiff")  # the right way; right, with steps swept later; the mistake
MAX_ITERATIONS = 5000  # per training: each keeps its starting parameters (~100 floats) for the replay
MAX_POINTS = 500  # a student's own data: rows pasted or points added
LIVE_ROWS = 6  # of a value with one row per sample, the live picture draws this many samples, evenly spaced
LIVE_FRAMES = 256  # the newest iterations' pictures a training keeps for the page to send
KEPT_WHOLE = MAX_POINTS * 16  # numbers: every forward value of the 2 -> 16 -> 2 network is kept whole


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
    samples: int  # the training points it learned from


@dataclass(frozen=True)
class LiveNode:
    """One node of an iteration's graph as the live picture draws it."""

    name: str  # the program's name (w1, hidden, loss), or "" for an unnamed intermediate
    op: str
    ops: tuple[str, ...]  # the operations it stands for: the loss function's folded into the loss, else its own
    shape: tuple[int, ...]
    kind: str  # "parameter" (a leaf that keeps its gradient), "data" (an untracked leaf) or "op"
    inputs: tuple[int, ...]  # positions of its inputs in the frame's nodes
    value: np.ndarray  # its forward value: whole, or `LIVE_ROWS` of its rows when it has one row per sample
    grad: np.ndarray | None  # the gradient backward summed for it (the same rows); None where backward gave none


@dataclass(frozen=True)
class Frame:
    """One iteration as the live picture draws it: its graph with every value and gradient, then its update."""

    number: int
    nodes: tuple[LiveNode, ...]  # inputs before the nodes that use them
    rows: tuple[int, ...]  # which training points the rows of a per-sample value are
    parameters: dict[str, np.ndarray]  # the values the iteration started with
    gradients: dict[str, np.ndarray]  # ∂loss/∂w of each parameter
    updated: dict[str, np.ndarray]  # after its update: the next iteration's parameters


class GradientTotals(Observer):
    """The backward's hook that keeps, for each node, the gradient summed over every path that reached it."""

    def __init__(self) -> None:
        self.totals: dict[NodeId, np.ndarray] = {}

    def gradient_registered(self, node_id: NodeId, source: NodeId | None, grad: object, total: Any) -> None:
        self.totals[node_id] = np.array(total.to_numpy())


def live_nodes(
    snapshot: GraphSnapshot,
    root: NodeId,
    names: dict[int, str],
    totals: dict[NodeId, np.ndarray],
    samples: int,
    rows: np.ndarray,
) -> tuple[LiveNode, ...]:
    """The nodes `root` was computed from (through every input, data included), inputs first, as the live picture
    draws them: a value with one row per sample cut to `rows`."""
    by_id = {n.id: n for n in snapshot.nodes}
    reached, todo = set(), [root]
    while todo:
        node_id = todo.pop()
        if node_id not in reached:
            reached.add(node_id)
            todo.extend(by_id[node_id].inputs)
    ordered = sorted(reached, key=int)  # ids grow with creation: an input is older than the ops that use it
    users: dict[NodeId, list[NodeId]] = {node_id: [] for node_id in ordered}
    for node_id in ordered:
        for parent in by_id[node_id].inputs:
            users[parent].append(node_id)
    # the loss function's own steps (unnamed ops from which every path reaches the loss through unnamed ops only)
    # fold into the loss, as the program calls it once: one node, its operations listed
    folded: set[NodeId] = set()
    for node_id in reversed(ordered):
        node = by_id[node_id]
        unnamed = node_id != root and node.inputs and int(node_id) not in names and users[node_id]
        if unnamed and all(u == root or u in folded for u in users[node_id]):
            folded.add(node_id)
    shown = [node_id for node_id in ordered if node_id not in folded]
    position = {node_id: k for k, node_id in enumerate(shown)}

    def outside_inputs(node_id: NodeId) -> list[NodeId]:
        inputs: list[NodeId] = []
        for parent in by_id[node_id].inputs:
            for found in outside_inputs(parent) if parent in folded else [parent]:
                if found not in inputs:
                    inputs.append(found)
        return inputs

    def cut(array: np.ndarray) -> np.ndarray:
        per_sample = array.ndim == 2 and array.shape[0] == samples and samples > len(rows)
        return np.array(array[rows] if per_sample else array, dtype=np.float64)

    nodes = []
    for node_id in shown:
        node = by_id[node_id]
        value = node.value if isinstance(node.value, np.ndarray) else np.zeros(node.shape)
        grad = totals.get(node_id)
        kind = "op" if node.inputs else "parameter" if node.requirement is Requirement.Grad else "data"
        inputs = outside_inputs(node_id) if node_id == root else list(node.inputs)
        ops = tuple(by_id[i].op for i in ordered if i in folded) if node_id == root else ()
        nodes.append(
            LiveNode(
                names.get(int(node_id), ""),
                node.op,
                (*ops, node.op) if node.inputs else (),
                node.shape,
                kind,
                tuple(position[i] for i in inputs),
                cut(value),
                None if grad is None else cut(grad),
            )
        )
    return tuple(nodes)


def live_rows(samples: int) -> np.ndarray:
    """Which training points a per-sample value's rows show: `LIVE_ROWS` of them, evenly spaced."""
    return np.unique(np.linspace(0, samples - 1, min(LIVE_ROWS, samples)).round().astype(int))


@dataclass
class Training:
    """SGD on one dataset, one iteration per `step()`: its own autodiff device, so a page keeps it per session. The
    data can change between iterations (`use_points`), and training can go back to an earlier iteration (`rewind`)."""

    dataset: str = "two moons"
    samples: int = 200
    hidden: int = 16
    learning_rate: float = 0.5
    update: str = "inner"
    seed: int = 0
    backend: str = "numpy"
    history: list[Iteration] = field(init=False, default_factory=list)
    checkpoints: list[dict[str, np.ndarray]] = field(init=False, default_factory=list)  # before each iteration
    trained_on: list[tuple[np.ndarray, np.ndarray]] = field(init=False, default_factory=list)  # each one's data
    stopped: str | None = field(init=False, default=None)  # why training stopped early, in a sentence

    def __post_init__(self) -> None:
        if self.update not in UPDATE_RULES:
            raise ValueError(f"There is no update called {self.update!r}: choose one of {', '.join(UPDATES)}.")
        # values kept whole, for the live picture: a copy per op, outside the device's memory
        self.ad = Device.named(self.backend, seed=self.seed).autodiff(keep_values=True, whole_values=KEPT_WHOLE)
        self._use(*make_dataset(self.dataset, self.samples, self.seed))
        self.model = Mlp.init(self.hidden, self.ad)
        self.start_usage = self.ad.memory_usage()
        self.frames: deque[Frame] = deque(maxlen=LIVE_FRAMES)  # the newest iterations' pictures
        self.earlier_names: dict[int, str] = {}

    def _use(self, points: np.ndarray, labels: np.ndarray) -> None:
        self.points, self.labels = points, labels
        if len(labels):  # data: untracked leaves, no gradient kept (a tensor has at least one number)
            self.inputs = Tensor.from_floats(points, self.ad)
            self.targets = Tensor.from_floats(np.eye(2, dtype=np.float32)[labels], self.ad)

    def use_points(self, points: np.ndarray, labels: np.ndarray) -> None:
        """Train on these points from the next iteration on (the parameters stay as they are)."""
        points = np.asarray(points, dtype=np.float32).reshape(-1, 2)
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
        if len(points) != len(labels) or not set(labels.tolist()) <= {0, 1}:
            raise ValueError("Each point needs an x, a y and a class, 0 or 1.")
        if len(points) > MAX_POINTS:
            raise ValueError(f"{len(points)} points are more than this lesson trains on: at most {MAX_POINTS}.")
        self._use(points, labels)

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
        if not len(self.labels):
            raise ValueError("There are no training points: add some, then train.")
        parameters = self.model.values()
        self.checkpoints.append(parameters)
        self.trained_on.append((self.points, self.labels))
        outputs = forward(self.model, self.inputs, self.targets)
        pending = self.ad.snapshot()
        tape = tape_steps(pending, outputs["loss"])
        abandoned = sum(n.status is NodeStatus.ABANDONED for n in pending.nodes if n.id in pending.pending_steps)
        accuracy = float((outputs["logits"].numpy().argmax(axis=1) == self.labels).mean())
        loss = outputs["loss"].item()
        names = {
            **self.earlier_names,  # the parameters before the previous update, when the graph reaches back to them
            **node_names({**self.model.parameters(), "points": self.inputs, "targets": self.targets, **outputs}),
        }
        root = outputs["loss"].node_id
        assert root is not None, "the loss is on the training's autodiff device"
        totals = GradientTotals()
        grads = outputs["loss"].backward(recorder=totals)
        del outputs  # the forward's tensors: only the parameters outlive an iteration
        leaves = {name: p.node_id for name, p in self.model.parameters().items()}
        self.earlier_names = {int(i): f"{name} before update {self.iterations + 1}" for name, i in leaves.items() if i}
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
            len(self.labels),
        )
        self.history.append(iteration)
        rows = live_rows(len(self.labels))
        self.frames.append(
            Frame(
                iteration.number,
                live_nodes(pending, root, names, totals.totals, len(self.labels), rows),
                tuple(int(r) for r in rows),
                parameters,
                {name: totals.totals[i] for name, i in leaves.items() if i is not None and i in totals.totals},
                self.model.values(),
            )
        )
        return iteration

    def preview(self) -> tuple[Frame, int]:
        """The graph the first iteration builds, before it runs: its forward on a fresh device (this training's own
        stays untouched, so iteration 1 measures what it always did), values only, no gradient yet. A page draws it
        at open, before any press. Frame number 1, empty gradients and update (backward has not run), and the
        operations on its tape."""
        if self.iterations or not len(self.labels):
            raise ValueError("Only an untrained network with points has a first iteration to preview.")
        parameters = self.model.values()
        ad = Device.named(self.backend, seed=self.seed).autodiff(keep_values=True, whole_values=KEPT_WHOLE)
        points = Tensor.from_floats(self.points, ad)  # the data first, as a training makes it: the same node order
        targets = Tensor.from_floats(np.eye(2, dtype=np.float32)[self.labels], ad)
        model = Mlp(**{name: Tensor.from_floats(v, ad).require_grad() for name, v in parameters.items()})
        outputs = forward(model, points, targets)
        names = node_names({**model.parameters(), "points": points, "targets": targets, **outputs})
        root = outputs["loss"].node_id
        assert root is not None, "the loss is on the preview's autodiff device"
        rows = live_rows(len(self.labels))
        snapshot = ad.snapshot()
        nodes = live_nodes(snapshot, root, names, {}, len(self.labels), rows)
        return Frame(1, nodes, tuple(int(r) for r in rows), parameters, {}, {}), tape_steps(snapshot, outputs["loss"])

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

    def rewind(self, to: int) -> None:
        """Back to just after iteration `to` (0: before the first): later iterations are forgotten, and the parameters
        and data are those iteration `to + 1` started with. (A page computes ahead of what it shows; a student's pause
        or edit applies to the iteration they see.) New leaves: on the autodiff update, the graph that reached back
        through earlier updates is not rebuilt."""
        if not 0 <= to <= self.iterations:
            raise ValueError(f"There is no iteration {to} to go back to: training has run {self.iterations}.")
        if to == self.iterations:
            return
        values, data = self.checkpoints[to], self.trained_on[to]
        del self.history[to:], self.checkpoints[to:], self.trained_on[to:]
        self.frames = deque((f for f in self.frames if f.number <= to), maxlen=LIVE_FRAMES)
        self.stopped = None
        self.model = Mlp(**{name: Tensor.from_floats(v, self.ad).require_grad() for name, v in values.items()})
        self._use(*data)

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
    # one call per parameter, not a comprehension: the replay's picture groups nodes by the code that made them
    w1, b1 = Tensor.from_floats(values["w1"], ad).require_grad(), Tensor.from_floats(values["b1"], ad).require_grad()
    w2, b2 = Tensor.from_floats(values["w2"], ad).require_grad(), Tensor.from_floats(values["b2"], ad).require_grad()
    model = Mlp(w1, b1, w2, b2)
    trained_points, trained_labels = training.trained_on[number - 1]
    points = Tensor.from_floats(trained_points, ad)
    targets = Tensor.from_floats(np.eye(2, dtype=np.float32)[trained_labels], ad)
    offsets = source_offsets((forward,)).get
    outputs, provenance = traced_call(offsets, IterationReplay.source, lambda: forward(model, points, targets), ad)
    run = recorded_backward(outputs["loss"])
    names = {**provenance.names, **node_names({**model.parameters(), "points": points, "targets": targets, **outputs})}
    return IterationReplay(number, run.before, run.recorder, names, provenance.lines, outputs["loss"].item())
