"""The replay stage: a recorded backward sent to the browser once, laid out once, stepped there.

`stage_payload` turns a snapshot and a recorder into plain data (DOT with element ids, one record per
event with its values already formatted, node names). `replay_stage` mounts the player
(`ui/stage/stage.js`, a components-v2 component: no iframe, no build step) and gets the current event
back when stepping stops. `export_html` writes the same player and data, with Graphviz inline, into one
file that plays offline.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from autodiff import BackwardRecorder, GraphSnapshot, Requirement
from autodiff.trace import (
    GradientConsumed,
    GradientRegistered,
    SavedStateFreed,
    StepStarted,
    SweepFreed,
)
from course.naming import node_name

from .format import format_values
from .graph_dot import COLLAPSE_LIMIT, graph_dot, order_buckets
from .replay_state import describe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GRAPHVIZ = "static/vendor/wasm-graphviz-1.29.2/index.js"  # pinned: see its README.md for version and checksum
GRAPHVIZ_SHA256 = "550d9cd6ff429f5bd225316fe1faed4f852038c3e1ec609ce113af1f9379ce25"
STAGE_JS = (HERE / "stage" / "stage.js").read_text()
STAGE_CSS = (HERE / "stage" / "stage.css").read_text()
LEGEND = [
    ("grad", "Grad leaf: gradient kept"), ("inbackward", "op output: gradient consumed"),
    ("untracked", "untracked input"), ("abandoned", "abandoned: holds memory"), ("consumed", "consumed"),
    ("swept", "freed without running"), ("current", "the step running now"), ("flow", "gradient sent"),
]  # fmt: skip

STAGE = st.components.v2.component("replay_stage", html="", css=STAGE_CSS, js=STAGE_JS)


def stage_payload(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    index: int = 0,
    presenter: bool = False,
    expanded_orders: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Everything the player needs, as plain data: the picture is laid out from `dot` once."""
    dot = graph_dot(before, names, presenter=presenter, expanded_orders=expanded_orders, element_ids=True)
    buckets = order_buckets(before) if len(before.nodes) > COLLAPSE_LIMIT else {}
    box_of = {int(m.id): f"order{start}" for start, ms in buckets.items() if start not in expanded_orders for m in ms}
    events = [_event(e, names) for e in recorder.events]
    signature = hashlib.sha256((dot + json.dumps(events)).encode()).hexdigest()[:16]
    return {
        "dot": dot,
        "rankdirs": ["BT", "LR"],
        "events": events,
        "names": {int(n.id): node_name(n.id, names) for n in before.nodes},
        "kept": [int(n.id) for n in before.nodes if n.requirement is Requirement.Grad],
        "box_of": box_of,
        "index": index,
        "legend": LEGEND,
        "graphviz_url": f"app/{GRAPHVIZ}",
        "signature": signature,
    }


def _event(event: object, names: dict[int, str]) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": type(event).__name__, "text": describe(event, names)}
    if isinstance(event, StepStarted):
        record |= {"node": int(event.node_id), "op": event.op, "order": event.order,
                   "parents": [int(p) for p in event.parents], "rules": list(event.rules)}  # fmt: skip
    elif isinstance(event, GradientRegistered):
        record |= {"node": int(event.node_id), "source": None if event.source is None else int(event.source),
                   "value": format_values(event.value), "total": format_values(event.total),
                   "shape": str(list(np.shape(event.total))), "accumulated": event.accumulated}  # fmt: skip
    elif isinstance(event, GradientConsumed):
        record |= {"node": int(event.node_id), "kept": event.kept}
    elif isinstance(event, SavedStateFreed):
        record |= {"node": int(event.node_id)}
    elif isinstance(event, SweepFreed):
        record |= {"nodes": [int(n) for n in event.node_ids]}
    return record


def replay_stage(payload: dict[str, Any], key: str) -> int | None:
    """Mount the player; returns the event it reported last (None until it has)."""
    result = STAGE(data=payload, key=key, default={"event": payload["index"]}, on_event_change=lambda: None)
    return getattr(result, "event", None)


def export_html(payload: dict[str, Any], title: str) -> str:
    """One self-contained HTML file: the player, its styles, the data and Graphviz inline. It makes no
    network request, so it plays offline in any browser (slides, course pages)."""
    module = (ROOT / GRAPHVIZ).read_text().replace("</script", "<\\/script")
    data = json.dumps({**payload, "index": 0}).replace("</", "<\\/")
    player = STAGE_JS.replace("export default function (component) {", "function mountInPage(component) {")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{_escape(title)}</title>
<style>{STAGE_CSS} body {{ margin: 1rem; }} .stage {{ height: calc(100vh - 2rem); }}</style></head>
<body>
<script type="text/plain" id="graphviz-module">{module}</script>
<script type="application/json" id="replay-data">{data}</script>
<script type="module">
{player}
const data = JSON.parse(document.getElementById("replay-data").textContent);
const source = document.getElementById("graphviz-module").textContent;
const url = URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }}));
mountStage({{ data, parentElement: document.body, setStateValue() {{}} }}, () => loadGraphvizFrom(url));
</script>
</body></html>
"""


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
