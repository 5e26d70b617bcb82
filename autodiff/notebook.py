"""The stage in a notebook (JupyterLab, Notebook 7, VS Code, Colab, marimo): a backward replayed step by step, or a
graph drawn as it is, as the cell's value.

    from autodiff.notebook import replay
    ad = Device.numpy().autodiff(keep_values=True)  # keep_values: the nodes and the chain rule show numbers
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    loss = ((x * x) + x * 3.0).sum()
    replay(loss)  # the stage, with its player; → steps; `.grads` holds the Gradients

The widget is an anywidget (the Anywidget Front-End Module standard: one ES module that any of those hosts runs).
Its module is `autodiff/stage/stage.js`, the app's own, with the pinned Graphviz (WebAssembly) inside it: a cell
draws offline. Nodes are named after the notebook's variables that hold them, as the app names a program's.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any

try:
    import anywidget
    import traitlets
except ImportError as missing:  # the engine alone is numpy only; the widget is the `notebook` extra
    raise ImportError(
        "autodiff.notebook draws the stage with anywidget, which is not installed. Install the engine with its "
        'notebook extra: pip install "seeing-autodiff[notebook]" (or pip install anywidget), then restart the kernel.'
    ) from missing

from . import BackwardRecorder, Gradients, GraphSnapshot, Tensor, UntrackedBackwardError
from .snapshot import snapshot as snapshot_of
from .stage import GRAPHVIZ, STAGE_CSS, StagePayload, replay_payload, static_payload, wire, with_view
from .stage.naming import node_names
from .stage.payload import hosted_module

__all__ = ["Replay", "Stage", "graph", "replay"]

# The notebook's entry point: AFM's `render` mounts the stage in the cell's element and returns its cleanup; a new
# payload (`change:payload`) mounts a new one. Graphviz travels as text in the module and is imported from a Blob.
_ENTRY = """
const GRAPHVIZ_SOURCE = __GRAPHVIZ__;
let graphvizUrl = null;

function graphvizModule() {
  if (!graphvizUrl) graphvizUrl = URL.createObjectURL(new Blob([GRAPHVIZ_SOURCE], { type: "text/javascript" }));
  return loadGraphvizFrom(graphvizUrl);
}

export default {
  render({ model, el }) {
    const report = (name, value) => { model.set(name, value); model.save_changes(); };
    let cleanup = null;
    const mount = () => {
      if (cleanup) cleanup();
      cleanup = mountStage({ data: model.get("payload"), parentElement: el, setStateValue: report }, graphvizModule,
                           false);
    };
    mount();
    model.on("change:payload", mount);
    return () => {
      model.off("change:payload", mount);
      if (cleanup) cleanup();
    };
  },
};
"""


def _module() -> str:
    return hosted_module(_ENTRY.replace("__GRAPHVIZ__", json.dumps(GRAPHVIZ.read_text())))


class Stage(anywidget.AnyWidget):
    """A graph on the stage: `payload` is the stage's whole contract (`autodiff.stage.StagePayload`); `event` and
    `answers` are what the stage reports back (the event it stopped at, its predictions' verdicts so far)."""

    _esm = _module()
    _css = STAGE_CSS
    payload = traitlets.Dict().tag(sync=True)
    event = traitlets.Int(None, allow_none=True).tag(sync=True)
    answers = traitlets.Dict(None, allow_none=True).tag(sync=True)

    def __init__(self, payload: StagePayload) -> None:
        super().__init__(payload=wire(payload), event=payload["index"])


class Replay(Stage):
    """A recorded backward on the stage; `grads` holds the backward's Gradients, as `loss.backward()` returns them."""

    def __init__(self, payload: StagePayload, grads: Gradients) -> None:
        super().__init__(payload)
        self.grads = grads


def replay(loss: Tensor, names: dict[str, object] | None = None, exercise: bool = False) -> Replay:
    """Run `loss.backward()` with a recorder and show it on the stage, one step per press of →. Nodes are named
    after `names` (variable name -> tensor), by default the caller's variables (the notebook's). With `exercise`,
    each step asks what it sends before showing it."""
    server = _server_of(loss, "replay")
    before = _graph_snapshot(snapshot_of(server), server, loss)
    called = _names_in(before, server, names if names is not None else _callers_variables())
    recorder = BackwardRecorder()
    grads = loss.backward(recorder=recorder)
    return Replay(with_view(replay_payload(before, recorder, called), exercise=exercise), grads)


def graph(tensor: Tensor, names: dict[str, object] | None = None) -> Stage:
    """Draw the graph that made `tensor`, as it is now (no backward runs): each node's value, state and gradient."""
    server = _server_of(tensor, "graph")
    snapshot = _graph_snapshot(snapshot_of(server), server, tensor)
    return Stage(
        static_payload(snapshot, _names_in(snapshot, server, names if names is not None else _callers_variables()))
    )


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
