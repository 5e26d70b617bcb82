"""The Training lesson's live stage as one Streamlit component (v2): the payload (typed here and in
training_stage.js's JSDoc, checked by tests/app/test_training_stage.py), and what the stage asks the page to do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np
import streamlit as st

from autodiff.stage.bundle import bundled
from autodiff.stage.palette import BACKGROUND, BY_KEY, EDGE, PRIMARY, TEXT
from course.training import MAX_POINTS, Frame, IterationReplay, LiveNode, Training, replay_iteration

from .state import SHARED_RESULTS

HERE = Path(__file__).parent
# the pictures' colours are the contrast-tested palette's (each a state's border: 3:1 on the background at least):
# a value's sign (and the class of a point, as the boundary is the probability of class 1), a gradient's sign
SIGN_STATES = {"pos": "current", "neg": "pending", "gpos": "leaf", "gneg": "recomputed"}
# a grid cell's fill is its colour over the background at most this opaque: the theme's text keeps 4.5:1 on it
# (tests/app/test_training_stage.py computes it)
HEAT_CEILING = {"light": 0.68, "dark": 0.47}


def palette_css() -> str:
    """The stage's colours as custom properties, light and dark (the stage sets `dark` from the page's background)."""
    rules = []
    for theme, selector in (("light", ".tl"), ("dark", ".tl.dark")):
        props = [f"--tl-{sign}:{getattr(BY_KEY[state], theme).border}" for sign, state in SIGN_STATES.items()]
        props += [
            f"--tl-bg:{BACKGROUND[theme]}",
            f"--tl-text:{TEXT[theme]}",
            f"--tl-edge:{EDGE[theme]}",
            f"--tl-primary:{PRIMARY[theme]}",
            f"--tl-heat-max:{HEAT_CEILING[theme]}",
        ]
        rules.append(f"{selector}{{{';'.join(props)}}}")
    return "\n".join(rules)


TRAINING_JS = bundled(HERE / "training_stage.js")  # with the stage's number format, DOM helpers and theme
TRAINING_CSS = palette_css() + "\n" + (HERE / "training_stage.css").read_text()
STAGE = st.components.v2.component("training_stage", html="", css=TRAINING_CSS, js=TRAINING_JS)
DIGITS = 4  # significant digits of a value or gradient in the graph's grids (a cell shows 2 or 3)


class Grid(TypedDict):
    rows: int
    cols: int
    data: list[float]


class LiveNodeWire(TypedDict):
    name: str
    op: str
    ops: list[str]
    shape: list[int]
    kind: str
    inputs: list[int]
    value: Grid
    grad: Grid | None


class FrameWire(TypedDict):
    number: int
    loss: float
    accuracy: float
    tape: int
    bytesBefore: int
    bytesAfter: int
    samples: int
    rows: list[int]
    nodes: list[LiveNodeWire]
    parameters: dict[str, Grid]
    gradients: dict[str, Grid]
    updated: dict[str, Grid]


class PreviewWire(TypedDict):  # the first iteration's forward, drawn before any press
    nodes: list[LiveNodeWire]
    tape: int
    parameters: dict[str, Grid]


class TrainingPayload(TypedDict):
    signature: str
    iterations: int
    frames: list[FrameWire]
    preview: PreviewWire | None
    losses: list[float]
    points: list[list[float]]
    labels: list[int]
    extent: float
    learningRate: float
    rate: int
    playing: bool
    canPlay: bool
    message: str | None
    serverRuns: int
    presenter: bool
    answered: int  # the id of the newest command applied: a stage ignores a picture older than its last command


class Command(TypedDict, total=False):  # what the stage sends (LiveTraining.apply checks each field)
    action: str  # play, pause, step, replay, add, clear
    at: int  # the iteration on the stage when it was asked
    id: int
    point: list[float]  # add: x, y, class


def grid(array: np.ndarray) -> Grid:
    """A tensor as rows and columns (a vector is one row), each number to `DIGITS` significant digits."""
    values = np.asarray(array, dtype=np.float64)
    matrix = values.reshape(1, -1) if values.ndim < 2 else values.reshape(-1, values.shape[-1])
    flat = matrix.ravel()
    top = float(np.max(np.abs(flat))) if flat.size else 0.0
    decimals = DIGITS - 1 - int(np.floor(np.log10(top))) if top > 0 and np.isfinite(top) else DIGITS
    return {"rows": matrix.shape[0], "cols": matrix.shape[1], "data": np.round(flat, max(0, decimals)).tolist()}


def exact(array: np.ndarray) -> Grid:
    """A parameter or its gradient as rows and columns, each number to float32's 7 significant digits: the
    update's numbers on screen are the engine's."""
    matrix = np.asarray(array).reshape(-1, np.asarray(array).shape[-1])
    return {"rows": matrix.shape[0], "cols": matrix.shape[1], "data": [float(f"{v:.7g}") for v in matrix.ravel()]}


def node_wire(node: LiveNode) -> LiveNodeWire:
    return {
        "name": node.name,
        "op": node.op,
        "ops": list(node.ops),
        "shape": list(node.shape),
        "kind": node.kind,
        "inputs": list(node.inputs),
        "value": grid(node.value),
        "grad": None if node.grad is None else grid(node.grad),
    }


def frame_wire(training: Training, frame: Frame) -> FrameWire:
    iteration = training.history[frame.number - 1]
    return {
        "number": frame.number,
        "loss": iteration.loss,
        "accuracy": iteration.accuracy,
        "tape": iteration.tape,
        "bytesBefore": iteration.graph_usage.bytes_in_use,
        "bytesAfter": iteration.usage.bytes_in_use,
        "samples": iteration.samples,
        "rows": list(frame.rows),
        "nodes": [node_wire(n) for n in frame.nodes],
        "parameters": {k: exact(v) for k, v in frame.parameters.items()},
        "gradients": {k: exact(v) for k, v in frame.gradients.items()},
        "updated": {k: exact(v) for k, v in frame.updated.items()},
    }


def preview_wire(training: Training) -> PreviewWire | None:
    """Before the first iteration, the graph it builds (its forward values): what the stage draws at open. It depends
    only on the network's inputs, and every visitor who opens the page with the default points asks for the same one:
    computed once per server (a forward was most of the page's cost at open)."""
    if training.iterations or not len(training.labels):
        return None
    parameters = training.model.values()
    key = (
        training.backend,
        training.points.tobytes(),
        training.labels.tobytes(),
        *((name, value.dtype.str, value.shape, value.tobytes()) for name, value in parameters.items()),
    )
    return _preview(key, training)


@st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)
def _preview(key: tuple[object, ...], _training: Training) -> PreviewWire:
    frame, tape = _training.preview()
    return {
        "nodes": [node_wire(n) for n in frame.nodes],
        "tape": tape,
        "parameters": {k: exact(v) for k, v in frame.parameters.items()},
    }


def extent(training: Training) -> float:
    """Half the plane's side: the data's (a point added stays where it was clicked), at least 2."""
    reach = float(np.abs(training.points).max()) + 0.3 if len(training.points) else 0.0
    return max(2.0, round(reach, 1))


def training_stage(payload: TrainingPayload, *, key: str, on_command: Callable[[], None]) -> None:
    """Mount the stage; `on_command` runs before the rerun a stage's command causes (`st.session_state[key]
    ["command"]` is the command), so the stage gets the state after it."""
    STAGE(data=payload, key=key, on_command_change=on_command)


RATE = 30  # iterations a second on the stage while playing
AHEAD = RATE  # iterations the server computes past the one on the stage: a second of play
ACTIONS = ("play", "more", "pause", "step", "replay", "add", "clear")


@dataclass
class LiveTraining:
    """One session's training as the live stage drives it. Playing, the stage shows `RATE` iterations a second
    from chunks the server computes ahead, and asks for the next chunk ("more") when it has half a second left: no
    timer on the server, no run per iteration. Every other command applies to the iteration on the stage's screen."""

    training: Training
    signature: str
    playing: bool = False
    sent: int = 0  # the newest iteration whose picture the stage has
    runs: int = 0  # the server's runs of the stage, counted: not one per iteration
    replayed: IterationReplay | None = None
    message: str | None = None
    edited: bool = False  # the points are a student's own (the link keeps them)
    answered: int = 0  # the id of the newest command applied

    def apply(self, command: object) -> None:
        """A command from the stage; anything else a visitor could send is ignored, and one command computes at
        most `AHEAD` iterations."""
        if not isinstance(command, dict) or command.get("action") not in ACTIONS:
            return
        training, action = self.training, command["action"]
        if isinstance(command.get("id"), int):
            self.answered = command["id"]
        at = command.get("at")
        at = min(max(at, 0), training.iterations) if isinstance(at, int) else training.iterations
        if action == "more":  # the stage plays on through what was computed: nothing to go back to
            if self.playing:
                self.ahead(at)
            return
        if training.update != "autodiff":  # the mistake's graph reaches back through updates: never rebuilt
            training.rewind(at)
        self.sent = min(self.sent, training.iterations)
        self.message = None
        # a point added while playing is trained on at once: play goes on from the iteration on the stage (the stage
        # keeps its clock running and waits for this answer's chunk)
        added_while_playing = action == "add" and self.playing
        if action == "add":
            self.add(command.get("point"))
        self.playing = (
            (action == "play" or added_while_playing) and training.stopped is None and len(training.labels) > 0
        )
        if self.playing:
            self.ahead(at)
        elif action == "step" and len(training.labels):
            training.step()
        elif action == "replay" and training.iterations:
            self.replayed = replay_iteration(training, training.iterations)
        elif action == "clear":
            self.use(np.zeros((0, 2), np.float32), np.zeros(0, np.int64))
            self.message = "No points: click on the plane to add some (pick the class first), or paste rows below."

    def ahead(self, at: int) -> None:
        """Compute up to `AHEAD` iterations past `at`, the one on the stage."""
        for _ in range(at + AHEAD - self.training.iterations):
            if self.training.step() is None:
                break
        if self.training.stopped is not None:
            self.playing = False

    def back_to_training(self) -> None:
        self.replayed = None

    def add(self, point: object) -> None:
        training = self.training
        if not (isinstance(point, list) and len(point) == 3 and all(isinstance(v, (int, float)) for v in point)):
            return
        x, y, label = point
        if not (np.isfinite(x) and np.isfinite(y)) or label not in (0, 1):
            return
        if len(training.labels) >= MAX_POINTS:
            self.message = f"There are {MAX_POINTS} points already, as many as this lesson trains on."
            return
        limit = extent(training) + 0.5
        points = np.vstack([training.points, [[np.clip(x, -limit, limit), np.clip(y, -limit, limit)]]])
        self.use(points.astype(np.float32), np.append(training.labels, int(label)))

    def use(self, points: np.ndarray, labels: np.ndarray) -> None:
        self.training.use_points(points, labels)
        self.edited = True

    def unsent(self) -> list[Frame]:
        frames = [f for f in self.training.frames if f.number > self.sent]
        self.sent = self.training.iterations
        return frames

    def payload(self, *, presenter: bool) -> TrainingPayload:
        """What the stage draws next: the frames not sent yet, and the one on screen when paused."""
        training, frames = self.training, self.unsent()
        latest = training.frames[-1] if training.frames else None
        if latest is not None and latest not in frames:
            frames = [*frames, latest]  # the iteration on screen when paused, whatever was sent before
        return {
            "signature": self.signature,
            "iterations": training.iterations,
            "frames": [frame_wire(training, f) for f in frames],
            "preview": preview_wire(training),
            "losses": [i.loss for i in training.history],
            "points": training.points.astype(np.float64).round(4).tolist(),
            "labels": training.labels.tolist(),
            "extent": extent(training),
            "learningRate": training.learning_rate,
            "rate": RATE,
            "playing": self.playing,
            "canPlay": training.stopped is None and len(training.labels) > 0,
            "message": self.message or training.stopped,
            "serverRuns": self.runs,
            "presenter": presenter,
            "answered": self.answered,
        }
