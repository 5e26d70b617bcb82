"""Snapshots as Graphviz DOT (laid out in the browser), and the legend that explains the colours.

Colours are set in the DOT because Graphviz charts do not follow the app theme; every fill is
light with dark text and every edge a mid-tone, so the picture reads on light and dark themes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from autodiff import GraphSnapshot, NodeSnapshot, NodeStatus, Requirement

from .format import format_bytes, format_shape

COLLAPSE_LIMIT = 150
MAX_BOXES = 60  # a collapsed graph never has more boxes: a deep chain gets several orders per box
TALL_DEPTH = 8  # deeper graphs are drawn bottom to top instead of left to right

FILL = {
    Requirement.Grad: "#b2f2bb",
    Requirement.GradInBackward: "#a5d8ff",
    Requirement.Untracked: "#e9ecef",
}
ABANDONED_FILL = "#ffd8a8"
CONSUMED_FILL = "#f8f9fa"
MUTED_TEXT = "#868e96"
TEXT = "#212529"
BORDER = "#495057"
REFUSED = "#e03131"
EDGE = "#868e96"
AGREES = "#2f9e44"

LEGEND = [
    (f"background:{FILL[Requirement.Grad]}", "Grad: a leaf marked require_grad(); its gradient is kept"),
    (f"background:{FILL[Requirement.GradInBackward]}", "GradInBackward: an op output; its gradient is consumed"),
    (f"background:{FILL[Requirement.Untracked]}", "Untracked: a constant or input; no gradient"),
    (f"background:{ABANDONED_FILL}", "Abandoned: no live tensor needs it, yet it holds memory until a backward"),
    (f"background:{CONSUMED_FILL};border:2px dashed {MUTED_TEXT}", "Consumed: its step ran; saved state freed"),
    (f"background:#fff;border:2px dotted {MUTED_TEXT}", "Freed by a sweep (or dropped) without running"),
    (f"background:#fff;border-top:2px dashed {EDGE}", "Dashed edge: untracked input (no gradient flows)"),
]
REFUSAL_LEGEND = [
    (f"background:#fff;border:3px solid {REFUSED}", "Where a backward was refused: tape already consumed")
]


@dataclass(frozen=True)
class Overlay:
    """What to draw on top of a snapshot: where a backward was refused, the cross-check's verdicts. (A
    replay's progress is drawn by the stage in the browser, on the same picture.)"""

    refused: int | None = None
    verdicts: dict[int, bool] = field(default_factory=dict)  # cross-check: True agrees, False differs


CHECK_LEGEND = [
    (f"background:#fff;border:3px solid {AGREES}", "Cross-check: the engine agrees with MLX and finite differences"),
    (f"background:#fff;border:3px solid {REFUSED}", "Cross-check: the engine disagrees (see the table)"),
]


def legend_html(cross_check: bool = False) -> str:
    entries = LEGEND + (CHECK_LEGEND if cross_check else REFUSAL_LEGEND)
    items = "".join(
        f'<div style="display:flex;align-items:center;gap:.5em;margin:.15em 0">'
        f'<span style="display:inline-block;width:1.6em;height:1em;border-radius:3px;{style}"></span>'
        f"<span>{text}</span></div>"
        for style, text in entries
    )
    return f'<div style="font-size:.85em;line-height:1.3">{items}</div>'


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _node_label(node: NodeSnapshot, names: dict[int, str], compact: bool = False) -> str:
    name = names.get(int(node.id))
    title = f"{name} · {node.id!r}" if name else repr(node.id)
    if compact:  # two short lines (colour: the requirement; rank: the order): large text in a small box
        lines = [title, f"{node.op} {format_shape(node.shape)}"]
    else:
        lines = [title, f"{node.op} {format_shape(node.shape)}", f"{node.requirement.name} · order {node.order}"]
    if node.saved_bytes and not compact:
        holds = f", holds {format_bytes(node.held_bytes)}" if node.held_bytes else ""
        lines.append(f"saves {format_bytes(node.saved_bytes)}{holds}")
    return "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)


def _node_attrs(node: NodeSnapshot, overlay: Overlay) -> dict[str, str]:
    status = node.status
    attrs = {"fillcolor": FILL[node.requirement], "color": BORDER, "fontcolor": TEXT, "style": "filled,rounded"}
    if status is NodeStatus.ABANDONED:
        attrs["fillcolor"] = ABANDONED_FILL
    elif status is NodeStatus.CONSUMED:
        attrs.update(fillcolor=CONSUMED_FILL, fontcolor=MUTED_TEXT, color=MUTED_TEXT, style="filled,rounded,dashed")
    elif status is NodeStatus.FREED:
        attrs.update(fillcolor="#ffffff", fontcolor=MUTED_TEXT, color=MUTED_TEXT, style="filled,rounded,dotted")
    if node.id == overlay.refused:
        attrs.update(color=REFUSED, penwidth="4")
    verdict = overlay.verdicts.get(int(node.id))
    if verdict is not None:
        attrs.update(color=AGREES if verdict else REFUSED, penwidth="4")
    return attrs


def order_buckets(snapshot: GraphSnapshot) -> dict[int, list[NodeSnapshot]]:
    """A collapsed graph's boxes: the first order each covers -> its nodes. One order a box, or, for a deep
    graph, consecutive orders together so that there are at most `MAX_BOXES` boxes."""
    depth = max((n.order for n in snapshot.nodes), default=0)
    span = max(1, -(-(depth + 1) // MAX_BOXES))
    buckets: dict[int, list[NodeSnapshot]] = {}
    for node in snapshot.nodes:
        buckets.setdefault(node.order // span * span, []).append(node)
    return dict(sorted(buckets.items()))


def bucket_label(start: int, members: list[NodeSnapshot]) -> str:
    """`order 3` or `orders 3–5`, for a box and for the picker that expands it."""
    last = max(m.order for m in members)
    return f"order {start}" if last == start else f"orders {start}–{last}"


def graph_dot(
    snapshot: GraphSnapshot,
    names: dict[int, str] | None = None,
    overlay: Overlay | None = None,
    presenter: bool = False,
    expanded_orders: frozenset[int] = frozenset(),
    collapse_limit: int = COLLAPSE_LIMIT,
    element_ids: bool = False,
) -> str:
    """DOT text for a snapshot. Above `collapse_limit` nodes, each order bucket not in
    `expanded_orders` is drawn as one box, so the browser's layout never freezes. With `element_ids` (the
    replay stage), nodes and edges carry ids in the SVG (`n3`, `order2`, `e{input}_{node}_{k}`) and node
    labels are two lines of larger text."""
    names = names or {}
    overlay = overlay or Overlay()
    collapse = len(snapshot.nodes) > collapse_limit
    depth = max((n.order for n in snapshot.nodes), default=0)
    fontsize = "20" if presenter else ("16" if element_ids else "13")
    spacing = "nodesep=0.2, ranksep=0.3" if element_ids else "nodesep=0.25, ranksep=0.45"
    lines = [
        "digraph G {",
        # A projector, or a long chain, is better served by a tall graph: scaled to the page width, its
        # text stays large.
        f'  graph [rankdir={"BT" if presenter or depth > TALL_DEPTH else "LR"}, bgcolor="transparent", {spacing}];',
        f'  node [shape=box, fontname="Helvetica", fontsize={fontsize}, margin="0.12,0.06"];',
        f'  edge [color="{EDGE}", fontname="Helvetica", fontsize={fontsize}];',
    ]
    visible: dict[int, str] = {}  # node id -> id of the box that shows it
    buckets: dict[int, list[NodeSnapshot]] = {}
    box_of = {int(m.id): start for start, ms in order_buckets(snapshot).items() for m in ms} if collapse else {}
    for node in snapshot.nodes:
        if collapse and box_of[int(node.id)] not in expanded_orders:
            buckets.setdefault(box_of[int(node.id)], []).append(node)
            visible[int(node.id)] = f"order{box_of[int(node.id)]}"
            continue
        visible[int(node.id)] = f"n{int(node.id)}"
        attrs = _node_attrs(node, overlay)
        if element_ids:
            attrs["id"] = f"n{int(node.id)}"
        attr_text = ", ".join(f"{k}={_quote(v)}" for k, v in attrs.items())
        lines.append(f'  n{int(node.id)} [label="{_node_label(node, names, element_ids)}", {attr_text}];')
    for order, members in sorted(buckets.items()):
        ops = Counter(m.op.split("(")[0] for m in members)
        op_text = ", ".join(f"{op}×{count}" for op, count in ops.most_common(4))
        held = sum(m.held_bytes for m in members)
        label = f"{bucket_label(order, members)}: {len(members)} nodes\\n{op_text}\\nholds {format_bytes(held)}"
        lines.append(f'  order{order} [label="{label}", shape=box3d, style="filled", fillcolor="#fff3bf", '
                     f'color="{BORDER}", fontcolor="{TEXT}", id="order{order}"];')  # fmt: skip
    seen_edges: set[tuple[str, str]] = set()
    edge_counts: dict[tuple[int, int], int] = {}
    for node in snapshot.nodes:
        head = visible[int(node.id)]
        tracked = list(node.parents)
        for input_id in node.inputs:
            tail = visible.get(int(input_id))
            if tail is None:
                continue
            is_tracked = input_id in tracked
            if is_tracked:
                tracked.remove(input_id)
            if head.startswith("order") or tail.startswith("order"):
                if (tail, head) in seen_edges or tail == head:
                    continue
                seen_edges.add((tail, head))
                lines.append(f"  {tail} -> {head};")
                continue
            ident = ""
            if element_ids:  # the k-th edge from this input to this node (x * x has two)
                pair = (int(input_id), int(node.id))
                edge_counts[pair] = edge_counts.get(pair, -1) + 1
                ident = f'id="e{pair[0]}_{pair[1]}_{edge_counts[pair]}", '
            if is_tracked:
                lines.append(f"  {tail} -> {head} [{ident.rstrip(', ')}];" if ident else f"  {tail} -> {head};")
            else:
                lines.append(f"  {tail} -> {head} [{ident}style=dashed, arrowhead=empty];")
    lines.append("}")
    return "\n".join(lines)
