"""The experiments the lesson pages drive, one button press at a time. Each lab owns its own autodiff
device, so a page keeps it per session (never in a shared cache) and two users never see each other's
work. No Streamlit here: a lab is plain Python, tested on its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from autodiff import (
    AutodiffError,
    BackwardRecorder,
    Device,
    Distribution,
    Gradients,
    GraphSnapshot,
    MemoryBudgetError,
    MemoryUsage,
    NodeSnapshot,
    Requirement,
    TapeConsumedError,
    Tensor,
)
from autodiff.memory_history import MemoryHistory
from autodiff.memory_viz import snapshot_bytes
from autodiff.stage.naming import expressions, node_names, with_gone_inputs
from autodiff.stage.narration import short_names
from autodiff.stage.recording import recorded_backward
from autodiff.trace import BackwardFinished, Recomputed, SavedStateFreed, TensorPreview

if TYPE_CHECKING:
    from autodiff.crosscheck import CrossCheck
from .programs import ProgramRun, memory_forward, record_program, seed_program, shared_losses
from .scenarios import GradRow, gradient_consumption, memory_experiment, python_value


@dataclass(frozen=True)
class Outcome:
    """What one button press did, in words."""

    action: str
    ok: bool
    result: str
    explanation: str
    refused_at: int | None = None
    query: str = ""  # the expression `result` is the value of, when it is not the action itself


def seed_grad_rows(backend: str = "numpy") -> list[GradRow]:
    """The seed's gradient table: what each `grad` call returns after one backward, and why (the same for everyone)."""
    return gradient_consumption(Device.named(backend).autodiff()).rows


class ConsumptionLab:
    """The seed's gradient table, then free queries on the `Gradients` container of a fresh backward of the
    same program (on a device of its own, so the table's `grad_remove` does not carry over)."""

    def __init__(self, backend: str = "numpy") -> None:
        self.backend = backend
        self.rows = seed_grad_rows(backend)
        self.ad = Device.named(backend).autodiff(keep_values=True)  # its graph shows each value
        self.tensors: dict[str, Tensor] = seed_program(self.ad)
        self.grads: Gradients = self.tensors["loss"].backward()
        self.removed: set[str] = set()
        self.replaced: set[str] = set()
        self.log: list[Outcome] = []

    @property
    def names(self) -> dict[int, str]:
        return node_names(self.tensors)

    def container(self) -> dict[int, np.ndarray]:
        """The `Gradients` container's entries now, as arrays by node id."""
        return {int(i): buffer.to_numpy() for i in self.grads.node_ids() if (buffer := self.grads.get(i)) is not None}

    def kept_leaves(self) -> set[int]:
        """Node ids of the `Grad` leaves: their entries are kept through backward."""
        return {_node_id(t) for t in self.tensors.values() if t.requirement is Requirement.Grad}

    def replaced_ids(self) -> set[int]:
        """Node ids whose entry the student put in with grad_replace (and has not removed since)."""
        return {_node_id(self.tensors[name]) for name in self.replaced}

    def reason(self, name: str) -> str:
        tensor = self.tensors[name]
        if tensor.grad(self.grads) is not None:
            if name in self.replaced:
                return f"{name}'s entry was replaced with grad_replace."
            return f"{name} is a leaf that asked for its gradient (Burn's Grad): its step keeps it in the container."
        if tensor.requirement is Requirement.GradInBackward:
            return (
                f"{name} is an op output (Burn's GradInBackward: its gradient lives only during backward): its own "
                "step consumed and removed it."
            )
        if name in self.removed:
            return f"{name}'s gradient was taken out with grad_remove."
        return f"{name} is not an ancestor of the loss: backward never registered a gradient for it."

    def grad(self, name: str) -> Outcome:
        value = python_value(self.tensors[name].grad(self.grads))
        return self._log(Outcome(f"{name}.grad(grads)", True, value, self.reason(name)))

    def grad_remove(self, name: str) -> Outcome:
        value = python_value(self.tensors[name].grad_remove(self.grads))
        explanation = (
            f"The entry of {name} was taken out and returned; the container no longer has it."
            if value != "None"
            else f"Nothing to remove. {self.reason(name)}"
        )
        if value != "None":
            self.removed.add(name)
            self.replaced.discard(name)
        return self._log(Outcome(f"{name}.grad_remove(grads)", True, value, explanation))

    def grad_replace(self, name: str, values: list[float]) -> Outcome:
        tensor = self.tensors[name]
        try:
            tensor.grad_replace(self.grads, Tensor.from_floats(values, self.ad.inner))
        except AutodiffError as error:
            return self._log(Outcome(f"{name}.grad_replace(grads, …)", False, "refused", str(error)))
        self.replaced.add(name)
        self.removed.discard(name)
        return self._log(
            Outcome(
                f"{name}.grad_replace(grads, {values})",
                True,
                python_value(tensor.grad(self.grads)),
                "grad_replace removes the old entry, then inserts the new one: it replaces, it does not add.",
            )
        )

    def _log(self, outcome: Outcome) -> Outcome:
        self.log.append(outcome)
        return outcome


LOSSES = ("l1", "l2", "l3", "l1 + l2")


def backward_code(name: str) -> str:
    """The Python that runs backward on `name`: `l1.backward()`, `(l1 + l2).backward()`."""
    return f"({name}).backward()" if "+" in name else f"{name}.backward()"


class TapeLab:
    """Backward twice, the shared-subgraph losses in any order, and detach()."""

    def __init__(self, backend: str = "numpy") -> None:
        self.backend = backend
        self.ad = Device.named(backend).autodiff(keep_values=True)
        self.seed = seed_program(self.ad)  # as in the seed: the same node ids
        self.x, self.loss = self.seed["x"], self.seed["loss"]
        shared = shared_losses(self.x)
        self.shared = shared.pop("shared")
        self.losses: dict[str, Tensor] = {**shared, "l3": (self.x * 4.0).sum()}
        self.log: list[Outcome] = []
        self.refused_at: int | None = None
        # the last backward that ran: its code, the graph before it, and its recorded events (for a replay)
        self.last_backward: tuple[str, GraphSnapshot, BackwardRecorder] | None = None
        self.remembered: dict[int, str] = {}  # each node's expression, as of the last backward

    @property
    def names(self) -> dict[int, str]:
        """Each node's variable, and for an input a backward's sweep removed its expression as it was (so the loss
        still reads `loss = sum(h + x·3)`, not `sum(#4)`)."""
        variables = node_names({**self.seed, "shared": self.shared, **self.losses})
        return with_gone_inputs(self.ad.snapshot().nodes, variables, self.remembered)

    def backward(self, name: str) -> Outcome:
        """`name.backward()` for the seed's loss, one of `LOSSES`, or their sum ("l1 + l2")."""
        if name == "loss":
            target = self.loss
        elif name == "l1 + l2":
            target = self.losses["l1"] + self.losses["l2"]
        else:
            target = self.losses[name]
        action = backward_code(name)
        self.remembered.update(expressions(self.ad.snapshot().nodes, self.names))
        try:
            run = recorded_backward(target)
        except TapeConsumedError as refusal:
            self.refused_at = int(refusal.node_id)
            who = self.names.get(self.refused_at, f"NodeId({self.refused_at})")
            where = (
                f"{name}'s own step was already run by an earlier backward, and consumed."
                if who == name
                else f"The path from {name} to x passes through {who}, whose step an earlier backward already ran "
                "and consumed."
            )
            return self._log(
                Outcome(
                    action,
                    False,
                    str(refusal),
                    f"{where} Burn keeps no copy of a step that ran. (PyTorch's `retain_graph=True` would keep it "
                    "for a second backward; Burn has no such option.) Recompute the forward pass, or add the losses "
                    "together before a single backward.",
                    self.refused_at,
                )
            )
        self.refused_at = None
        self.last_backward = (action, run.before, run.recorder)
        return self._log(
            Outcome(
                action,
                True,
                python_value(self.x.grad(run.grads)),
                f"Every step on the path from {name} to x ran once and is now consumed.",
                query="x.grad(grads)",
            )
        )

    def last_gradients(self) -> dict[int, np.ndarray | TensorPreview] | None:
        """The `Gradients` container the last backward that ran returned (None before any ran)."""
        if self.last_backward is None:
            return None
        recorder = self.last_backward[2]
        return {int(k): v for k, v in recorder.container_after(len(recorder.events) - 1).items()}

    def detach_demo(self) -> Outcome:
        action = "(shared.detach() * x).sum().backward()"
        detached = self.shared.detach()
        run = recorded_backward((detached * self.x).sum())
        self.refused_at = None
        self.last_backward = (action, run.before, run.recorder)
        return self._log(
            Outcome(
                action,
                True,
                python_value(self.x.grad(run.grads)),
                "detach() gives a new untracked leaf with the same values: gradient flows only through the "
                "direct use of x (so x's gradient is exp(x)), never into shared's step, consumed or not.",
                query="x.grad(grads)",
            )
        )

    def _log(self, outcome: Outcome) -> Outcome:
        self.log.append(outcome)
        return outcome


@dataclass(frozen=True)
class HolderGroup:
    """Forward passes whose graphs hold the same steps in the same state: one row of "what holds memory"."""

    first: int  # the passes it covers, counted from 1 in the order they ran
    last: int
    ops: tuple[str, ...]  # each graph's steps, in the order they were made
    status: str  # a NodeStatus value (abandoned, live, consumed, freed), or "mixed"
    held_bytes: int  # what one graph holds that no live tensor shares

    @property
    def graphs(self) -> int:
        return self.last - self.first + 1


def memory_holders(snapshot: GraphSnapshot) -> list[HolderGroup]:
    """The graphs of a snapshot, one per forward pass (the steps connected to each other, leaves aside), grouped where
    consecutive passes hold the same: 20 abandoned passes are one row, never 80 boxes."""
    steps = [n for n in snapshot.nodes if n.inputs]
    graph_of = {int(n.id): int(n.id) for n in steps}

    def root(node_id: int) -> int:
        while graph_of[node_id] != node_id:
            node_id = graph_of[node_id]
        return node_id

    for node in steps:
        for input_id in node.inputs:
            if int(input_id) in graph_of:
                graph_of[root(int(node.id))] = root(int(input_id))
    graphs: dict[int, list[NodeSnapshot]] = {}
    for node in steps:
        graphs.setdefault(root(int(node.id)), []).append(node)
    groups: list[HolderGroup] = []
    for number, nodes in enumerate(sorted(graphs.values(), key=lambda g: min(int(n.id) for n in g)), start=1):
        nodes.sort(key=lambda n: int(n.id))
        statuses = {n.status.value for n in nodes}
        status = statuses.pop() if len(statuses) == 1 else "mixed"
        group = HolderGroup(number, number, tuple(n.op for n in nodes), status, sum(n.held_bytes for n in nodes))
        previous = groups[-1] if groups else None
        if previous and (previous.ops, previous.status, previous.held_bytes) == (group.ops, status, group.held_bytes):
            groups[-1] = HolderGroup(previous.first, number, group.ops, status, group.held_bytes)
        else:
            groups.append(group)
    return groups


def last_pass(snapshot: GraphSnapshot) -> GraphSnapshot:
    """The snapshot with the leaves and the newest forward pass's graph only: one pass drawn, the others in a table."""
    steps = [n for n in snapshot.nodes if n.inputs]
    if not steps:
        return snapshot
    keep = {int(steps[-1].id)}
    for node in sorted(steps, key=lambda n: -int(n.id)):  # users come after their inputs
        if int(node.id) in keep:
            keep.update(int(i) for i in node.inputs)
    nodes = tuple(n for n in snapshot.nodes if int(n.id) in keep or not n.inputs and n.status.value != "freed")
    return replace(snapshot, nodes=nodes)


@dataclass(frozen=True)
class MemoryPoint:
    iteration: int
    label: str
    usage: MemoryUsage
    backend_bytes: int | None = None  # the backend's own counter (MLX active memory), when it has one


HISTORY_ENTRIES = 20_000  # a lab's memory history keeps this many entries (40 passes and a backward: ~700)


@dataclass(frozen=True)
class RecordedMemory:
    """A run's memory history and its memory_viz snapshot (pickled, for a download): plain data, no device."""

    label: str
    history: MemoryHistory
    snapshot: bytes
    names: dict[int, str] = field(default_factory=dict)  # what the stage calls each node: `h`, `exp(x)·x`


def recorded_memory(label: str, device: Device, names: dict[int, str] | None = None) -> RecordedMemory:
    history = device.memory_history
    assert history is not None, "the device records its memory history"
    return RecordedMemory(label, history, snapshot_bytes(device), names or {})


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
    refusal: str | None = None  # why the experiment stopped early (a memory budget said no)
    pass_starts: list[int] = field(default_factory=list)  # the memory history's entry count as each pass began

    def __post_init__(self) -> None:
        self.device = Device.named(self.backend)
        self.device.record_memory_history(max_entries=HISTORY_ENTRIES)  # for the timeline, bounded
        self.ad = self.device.autodiff(keep_values=True)  # its graph shows each value
        self.x = Tensor.random([self.size, self.size], Distribution.Default, self.ad).require_grad()
        self.input = self.x if self.autodiff else self.x.without_autodiff()
        self.history = [self._point(0, "x created")]

    @property
    def finished(self) -> bool:
        return self.done >= self.iterations or self.refusal is not None

    @property
    def memory_history(self) -> MemoryHistory:
        history = self.device.memory_history
        assert history is not None, "a lab records from its start"
        return history

    def memory_snapshot(self) -> bytes:
        """The memory history as a file PyTorch's memory_viz opens."""
        return snapshot_bytes(self.device)

    def forward_once(self) -> None:
        self.pass_starts.append(self.memory_history.recorded)
        if self._refused(lambda: memory_forward(self.input)):  # the loss is dropped at once
            return
        self.done += 1
        self.history.append(self._point(self.done, "forward, loss dropped"))

    def catch_up(self, elapsed: float, tick: float, most: int = 4) -> None:
        """The passes due `elapsed` seconds after the start at one per `tick`: at least one more, at most `most`
        at once. A late tick (a busy machine) catches up, so the run takes its ticks' time, not more."""
        due = min(self.iterations, max(self.done + 1, min(int(elapsed / tick), self.done + most)))
        while self.done < due and not self.finished:
            self.forward_once()

    def backward_now(self) -> None:
        if not self._refused(lambda: memory_forward(self.x).backward()):  # gradients dropped at once
            self.history.append(self._point(self.done, "one backward"))

    def _refused(self, work: Callable[[], object]) -> bool:
        """Run `work`; when a memory budget refuses it, keep the reason and stop the experiment."""
        try:
            work()
        except MemoryBudgetError as refusal:
            self.refusal = str(refusal)
            return True
        return False

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
            seed = seed_program(ad)
            x = seed["x"]
            if program.startswith("backward twice"):
                first = second = seed["loss"]
                names = node_names(seed)
            else:
                losses = shared_losses(x)
                first, second = losses["l1"], losses["l2"]
                names = node_names({"x": x, **losses})
            called = short_names(ad.snapshot().nodes, names)  # as the stage names them, before a backward runs
            grads = first.backward(retain_graph=True) if retain else first.backward()
            try:
                grads = second.backward(into=grads) if retain else second.backward()
            except TapeConsumedError as refusal:
                at = int(refusal.node_id)
                row[label] = f"second backward refused at {called.get(at, f'NodeId({at})')}: its step already ran"
            else:
                row[label] = f"runs; x.grad accumulates to {python_value(x.grad(grads))}"
        rows.append(row)
    return rows


CHECKPOINTING_STRATEGIES = {"none": "No checkpointing (default)", "balanced": "Balanced checkpointing"}


@dataclass
class CheckpointingComparison:
    """One program recorded without and with balanced checkpointing: memory, recomputations, gradients."""

    key: str
    backend: str = "numpy"
    runs: dict[str, ProgramRun] = field(init=False)

    def __post_init__(self) -> None:
        self.runs = {
            mode: record_program(self.key, self.backend, mode, HISTORY_ENTRIES) for mode in CHECKPOINTING_STRATEGIES
        }

    def summary(self) -> list[dict[str, object]]:
        """Per strategy: memory held by the graph, device memory before backward, peak, recomputations."""
        rows = []
        for mode, label in CHECKPOINTING_STRATEGIES.items():
            run = self.runs[mode]
            events = run.recorder.events
            finished = next(e for e in events if isinstance(e, BackwardFinished))
            rows.append(
                {
                    "Strategy": label,
                    "Held only by the graph": sum(n.held_bytes for n in run.before.nodes),
                    "Device memory before backward": run.before.memory.bytes_in_use,
                    "Peak during backward": finished.peak_bytes,
                    "Ops recomputed": sum(isinstance(e, Recomputed) for e in events),
                }
            )
        return rows

    def memory_curves(self) -> list[dict[str, object]]:
        """Bytes in use after each backward step ran and dropped its saved state, per strategy."""
        return [
            {"Step": k, "Strategy": label, "Bytes in use": e.memory_after.bytes_in_use}
            for mode, label in CHECKPOINTING_STRATEGIES.items()
            for k, e in enumerate((e for e in self.runs[mode].recorder.events if isinstance(e, SavedStateFreed)), 1)
        ]

    def same_gradients(self) -> bool:
        """Whether every leaf's gradient is bit-identical under both strategies."""
        plain, balanced = self.runs["none"], self.runs["balanced"]

        def leaf_grads(run: ProgramRun) -> dict[str, np.ndarray | None]:
            return {
                name: None if (g := t.grad(run.grads)) is None else g.numpy()
                for name, t in run.tensors.items()
                if t.is_require_grad
            }

        def same(x: np.ndarray | None, y: np.ndarray | None) -> bool:
            return x is None and y is None or x is not None and y is not None and bool(np.array_equal(x, y))

        a, b = leaf_grads(plain), leaf_grads(balanced)
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


@dataclass(frozen=True)
class CheckpointingLesson:
    """What the Checkpointing lesson shows, as plain data: no device, no live tensor. The same for every student,
    so the app computes it once per program and backend and hands every session the same object."""

    summary: list[dict[str, object]]
    same_gradients: bool
    memory_curves: list[dict[str, object]]
    before: GraphSnapshot  # the balanced run's graph before backward, and its recorded backward
    recorder: BackwardRecorder
    names: dict[int, str]
    lines: dict[int, tuple[int, int]]  # NodeId -> the statement of the program that made it
    timelines: list[RecordedMemory]  # the device's memory history under each strategy, forward and backward


def checkpointing_lesson(key: str, backend: str = "numpy") -> CheckpointingLesson:
    """`key` recorded without and with balanced checkpointing, reduced to what the lesson shows."""
    comparison = CheckpointingComparison(key, backend)
    balanced = comparison.runs["balanced"]
    return CheckpointingLesson(
        comparison.summary(),
        comparison.same_gradients(),
        comparison.memory_curves(),
        balanced.before,
        balanced.recorder,
        balanced.names,
        balanced.lines,
        [
            recorded_memory(label, run.device, short_names(run.before.nodes, run.names))
            for label, run in zip(CHECKPOINTING_STRATEGIES.values(), comparison.runs.values(), strict=True)
        ],
    )


def policy_memory_curves(size: int, backend: str = "numpy") -> list[dict[str, object]]:
    """The seed's memory experiment under Burn's lazy sweep and PyTorch's eager freeing: bytes per moment."""
    return [
        {"Moment": moment, "Policy": label, "Bytes in use": usage.bytes_in_use}
        for policy, label in (("lazy", "Burn (lazy sweep)"), ("eager", "PyTorch (eager)"))
        for moment, usage in memory_experiment(Device.named(backend), size=size, memory_policy=policy)
    ]


def policy_timelines(size: int, backend: str = "numpy") -> list[RecordedMemory]:
    """The seed's memory experiment recorded under Burn's lazy sweep and PyTorch's eager freeing."""
    runs: list[tuple[str, Device]] = []
    names: dict[int, str] = {}
    for policy, label in (("lazy", "Burn (lazy sweep)"), ("eager", "PyTorch (eager)")):
        device = Device.named(backend)
        device.record_memory_history(max_entries=HISTORY_ENTRIES)
        ad = device.autodiff(policy)
        for _ in memory_experiment(ad, size=size):
            pass
        nodes = ad.snapshot().nodes  # the lazy sweep keeps a record of each node it freed; eager forgets them
        present = {int(n.id) for n in nodes}
        leaves = {int(n.id) for n in nodes if not n.inputs} | {int(i) for n in nodes for i in n.inputs} - present
        names = {**short_names(nodes, dict.fromkeys(leaves, "x")), **names}  # its one leaf (gone or not) is x
        runs.append((label, device))
    # the same program makes the same nodes under either policy: the lazy run's names are the eager run's too
    return [recorded_memory(label, device, names) for label, device in runs]


@dataclass(frozen=True)
class CheckedProgram:
    """What the MLX check shows of a program, as plain data: no device, no live tensor. The same for every student,
    so the app computes it once per program and backend."""

    before: GraphSnapshot  # the graph before backward
    names: dict[int, str]
    gradients: dict[int, np.ndarray]  # NodeId -> what backward left in the Gradients container
    check: CrossCheck


def cross_checked_program(key: str, backend: str = "numpy") -> CheckedProgram:
    """A program recorded, then every gradient checked against MLX and finite differences (needs MLX)."""
    from autodiff.crosscheck import cross_check  # imports MLX: only when asked

    run = record_program(key, backend)
    held = {int(i): buffer.to_numpy() for i in run.grads.node_ids() if (buffer := run.grads.get(i)) is not None}
    return CheckedProgram(run.before, run.names, held, cross_check(run.graph, run.recorder))


def _node_id(tensor: Tensor) -> int:
    assert tensor.node_id is not None, "a lesson's tensors are on its autodiff device"
    return int(tensor.node_id)
