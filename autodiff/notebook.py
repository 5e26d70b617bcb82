"""The stage in a notebook (JupyterLab, Notebook 7, VS Code, Colab, marimo): a backward replayed step by step, or a
graph drawn as it is, as the cell's value.

    from autodiff.notebook import replay
    ad = Device.numpy().autodiff(keep_values=True)  # keep_values: the nodes and the chain rule show numbers
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    loss = ((x * x) + x * 3.0).sum()
    replay(loss)  # the stage, with its player; → steps; `.grads` holds the Gradients

The widget is an anywidget (the Anywidget Front-End Module standard: one ES module that any of those hosts runs).
Its module is the app's own stage, bundled with `autodiff/stage/js/hosts/notebook.mjs` as its entry; the pinned
Graphviz (WebAssembly) is one model per kernel that every stage names, so a page loads it once and a cell draws
offline. Before the live stage, each output keeps a still (`autodiff/stage/still.py`) for wherever no kernel runs.
Nodes are named after the notebook's variables that hold them, as the app names a program's.
"""

from __future__ import annotations

import dataclasses
import inspect
import secrets
from typing import Any

try:
    import anywidget
    import ipywidgets
    import traitlets
except ImportError as missing:  # the engine alone is numpy only; the widget is the `notebook` extra
    raise ImportError(
        "autodiff.notebook draws the stage with anywidget, which is not installed. Install the engine with its "
        'notebook extra: pip install "seeing-autodiff[notebook]" (or pip install anywidget), then restart the kernel.'
    ) from missing

from . import Gradients, GraphSnapshot, Tensor, UntrackedBackwardError
from .snapshot import snapshot as snapshot_of
from .stage import GRAPHVIZ, GRAPHVIZ_SHA256, STAGE_CSS, StagePayload, replay_payload, static_payload, wire, with_view
from .stage.bundle import bundle
from .stage.format import compact
from .stage.graph_dot import picture
from .stage.naming import node_names
from .stage.recording import recorded_backward
from .stage.still import Still, kept_gradients, last_frame_picture

__all__ = ["GraphvizSource", "Replay", "Stage", "graph", "replay"]

GRAPHVIZ_ANSWERS = 4  # a stage's asks for Graphviz answered (each view of it asks once, when the page lacks it)
LIVE_TEXT = "The live stage draws here where the notebook runs with its kernel; the picture above is its last frame."


class GraphvizSource(ipywidgets.Widget):
    """Graphviz's module (about 815 KB of JavaScript and WebAssembly): one model per kernel, which every stage
    names, so a page loads it once and a saved notebook's widget state holds it once."""

    source = traitlets.Unicode().tag(sync=True)
    sha256 = traitlets.Unicode().tag(sync=True)


_graphviz: GraphvizSource | None = None


def graphviz_source() -> GraphvizSource:
    """The kernel's one Graphviz model; made again if its host closed it (marimo does when its cell runs again)."""
    global _graphviz
    comm = getattr(_graphviz, "comm", None)
    if _graphviz is None or comm is None or getattr(comm, "_closed", False):
        _graphviz = GraphvizSource(source=GRAPHVIZ.read_text(), sha256=GRAPHVIZ_SHA256)
    return _graphviz


class Stage(anywidget.AnyWidget):
    """A graph on the stage: `payload` is the stage's whole contract (`autodiff.stage.StagePayload`); `event` and
    `answers` are what the stage reports back (the event it stopped at, its predictions' verdicts so far).

    Displayed, it is two outputs: a still picture with its numbers as text (`still.py`), for wherever no kernel
    or widget manager runs (nbconvert's HTML, a grader, GitHub), then the live stage, which hides the still."""

    _esm = bundle("notebook")  # autodiff/stage/js/hosts/notebook.mjs and the stage's modules it imports
    _css = STAGE_CSS
    payload = traitlets.Dict().tag(sync=True)
    event = traitlets.Int(None, allow_none=True).tag(sync=True)
    answers = traitlets.Dict(None, allow_none=True).tag(sync=True)
    graphviz = traitlets.Instance(GraphvizSource).tag(sync=True, **ipywidgets.widget_serialization)
    still = traitlets.Unicode().tag(sync=True)  # the still's marker: the live stage finds it by it

    def __init__(self, payload: StagePayload, still: Still) -> None:
        marker = secrets.token_hex(8)
        super().__init__(payload=wire(payload), event=payload["index"], graphviz=graphviz_source(), still=marker)
        self._still = still
        self._graphviz_sent = 0
        self.on_msg(self._send_graphviz)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display({"text/html": self._still.html(self.still), "text/plain": self._still.text()}, raw=True)
        bundle = self._repr_mimebundle_()  # anywidget's: with its metadata (Colab's widget manager)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        display({**data, "text/plain": LIVE_TEXT}, metadata=metadata, raw=True)

    def _send_graphviz(self, _widget: object, content: object, _buffers: object) -> None:
        # a page whose widget manager lacks the shared `GraphvizSource` asks this stage for it (`graphvizSource`)
        if content != {"want": "graphviz"} or self._graphviz_sent >= GRAPHVIZ_ANSWERS:
            return
        self._graphviz_sent += 1
        self.send({"graphviz": GRAPHVIZ_SHA256}, buffers=[GRAPHVIZ.read_bytes()])


class Replay(Stage):
    """A recorded backward on the stage; `grads` holds the backward's Gradients, as `loss.backward()` returns them."""

    def __init__(self, payload: StagePayload, still: Still, grads: Gradients) -> None:
        super().__init__(payload, still)
        self.grads = grads


def replay(loss: Tensor, names: dict[str, object] | None = None, exercise: bool = False) -> Replay:
    """Run `loss.backward()` with a recorder and show it on the stage, one step per press of →. Nodes are named
    after `names` (variable name -> tensor), by default the caller's variables (the notebook's). With `exercise`,
    each step asks what it sends before showing it."""
    server = _server_of(loss, "replay")
    before = _graph_snapshot(snapshot_of(server), server, loss)
    called = _names_in(before, server, names if names is not None else _callers_variables())
    run = recorded_backward(loss, before)
    grads = run.grads
    payload = with_view(replay_payload(before, run.recorder, called), exercise=exercise)
    # the still: the graph as the replay's last frame leaves it, and what the container kept
    kept = kept_gradients(grads)
    said = {node["id"]: node["name"] for node in payload["nodes"]}
    still = Still(
        last_frame_picture(before, snapshot_of(server), called, kept, run.recorder),
        payload["events"][-1]["text"] if payload["events"] else "The backward recorded no event.",
        tuple((said.get(node_id, f"NodeId({node_id})"), compact(values)) for node_id, values in kept.items()),
    )
    return Replay(payload, still, grads)


def graph(tensor: Tensor, names: dict[str, object] | None = None) -> Stage:
    """Draw the graph that made `tensor`, as it is now (no backward runs): each node's value, state and gradient."""
    server = _server_of(tensor, "graph")
    snapshot = _graph_snapshot(snapshot_of(server), server, tensor)
    called = _names_in(snapshot, server, names if names is not None else _callers_variables())
    payload = static_payload(snapshot, called)
    said = {node["id"]: node["name"] for node in payload["nodes"]}
    caption = f"The graph that made {said.get(int(tensor.node_id or 0), 'this tensor')}, as it is now."
    return Stage(payload, Still(picture(snapshot, called), caption, ()))


def _server_of(tensor: Tensor, what: str) -> Any:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what}() takes a Tensor, not {type(tensor).__name__}.")
    server = tensor.device.server
    if server is None or tensor.node_id is None:
        raise UntrackedBackwardError(
            f"{what}() draws a tensor computed on an autodiff device; this one is on '{tensor.device.name}'. "
            "Create the inputs on device.autodiff()."
        )
    return server


def _graph_snapshot(snapshot: GraphSnapshot, server: Any, tensor: Tensor) -> GraphSnapshot:
    """Only `tensor`'s graph: a notebook's device often holds others (earlier cells). Found by following each
    node's inputs, so an input a loop dropped (`x` made anew each iteration) is still drawn."""
    inputs = {int(node.id): node.inputs for node in snapshot.nodes}
    ids: set[int] = set()
    stack = [int(tensor.node_id)] if tensor.node_id is not None else []
    while stack:
        node_id = stack.pop()
        if node_id not in ids and node_id in inputs:
            ids.add(node_id)
            stack.extend(int(i) for i in inputs[node_id])
    return dataclasses.replace(snapshot, nodes=tuple(n for n in snapshot.nodes if int(n.id) in ids))


def _names_in(snapshot: GraphSnapshot, server: Any, variables: dict[str, object]) -> dict[int, str]:
    """The variables that hold this graph's own tensors: node ids are counted per device, so a tensor of another
    device (an earlier cell's) must not name a node; IPython's output history (`_`, `_2`) names nothing."""
    ids = {int(node.id) for node in snapshot.nodes}
    own = {
        name: value
        for name, value in variables.items()
        if isinstance(value, Tensor) and value.device.server is server and not name.startswith("_")
    }
    return {node_id: name for node_id, name in node_names(own).items() if node_id in ids}


def _callers_variables() -> dict[str, object]:
    """The variables where `replay` or `graph` was called: a notebook's globals, or a function's locals."""
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame and frame.f_back else None
    if caller is None:
        return {}
    try:
        return {**caller.f_globals, **caller.f_locals}
    finally:
        del frame, caller
