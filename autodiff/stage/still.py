"""A still picture of a graph for where no kernel runs (issue 39): a notebook exported by nbconvert, a course's
grader, GitHub's viewer. Plain HTML with an inline SVG, its caption and its gradients as text; no script, no style
sheet, no font to fetch, so it reads the same in any page that keeps it. Where the live widget mounts, it takes
this picture's place (`autodiff/notebook.py`).

Graphviz runs in the browser only, so the layout is made here, the way Graphviz's `dot` does it in small: nodes in
ranks by their longest path from the inputs (inputs at the bottom, as the stage draws them), a point on every rank an
edge crosses, and each rank ordered by its neighbours' mean position, a few sweeps up and down.
"""

from __future__ import annotations

import dataclasses
import html
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autodiff import BackwardRecorder, Gradients, GraphSnapshot
from autodiff.trace import GradientRegistered

from .format import brief, tensor_range
from .graph_dot import GRAD_LINES, HeldGradient, Overlay, Picture, PictureNode, picture
from .palette import BACKGROUND, BY_KEY, EDGE, MUTED, TEXT

# type sizes (px) of a node's lines, and the width of a character relative to its size (Helvetica's mean, about
# 0.55; a little more, so a label never overflows its box in a wider fallback font)
TITLE_PX, LINE_PX, DETAIL_PX = 15, 13, 11
CHAR_EM = 0.6
PAD_X, PAD_Y, LINE_GAP = 10, 6, 4
NODE_GAP, RANK_GAP, MARGIN = 24, 44, 8
PORT_GAP = 16  # between two edges' ends on one side of a box
BEND_WIDTH = 12.0  # the room an edge takes where it crosses a rank: it passes between boxes, not over one
SWEEPS = 4  # barycentre sweeps, down then up; small graphs settle in two
FONT = "Liberation Sans, Helvetica, Arial, sans-serif"


@dataclass
class _Box:
    key: str  # a node's element id, or a bend point's
    rank: int
    width: float
    height: float
    node: PictureNode | None  # None: a point an edge passes through on a rank it crosses
    x: float = 0.0
    y: float = 0.0


def _lines(node: PictureNode) -> list[tuple[str, int, bool]]:
    """A node's box, row by row: (its text, its size, bold)."""
    return [
        (node.title, TITLE_PX, True),
        (node.value, LINE_PX, False),
        (node.grad, LINE_PX, False),
        (node.detail, DETAIL_PX, False),
    ]


def _node_box(node: PictureNode, rank: int) -> _Box:
    lines = _lines(node)
    width = max(len(text) * size * CHAR_EM for text, size, _ in lines) + 2 * PAD_X
    height = sum(size + LINE_GAP for _, size, _ in lines) + 2 * PAD_Y
    return _Box(node.element, rank, width, height, node)


def _ranks(pic: Picture) -> dict[int, int]:
    """Each node's rank: 0 for an input, else one more than its highest input (the longest path to it)."""
    inputs: dict[int, list[int]] = defaultdict(list)
    for edge in pic.edges:
        inputs[edge.target].append(edge.source)
    rank: dict[int, int] = {}

    def rank_of(node_id: int) -> int:
        stack = [node_id]
        while stack:  # iterative: a 5,000-node chain is deeper than Python's recursion
            top = stack[-1]
            waiting = [i for i in inputs[top] if i not in rank]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            rank[top] = 1 + max((rank[i] for i in inputs[top]), default=-1)
        return rank[node_id]

    return {node.id: rank_of(node.id) for node in pic.nodes}


def layout(pic: Picture) -> tuple[list[_Box], list[tuple[str, list[_Box], bool]], float, float]:
    """Boxes placed (y grows down; rank 0 at the bottom), each edge as the boxes it passes through (its tail, its
    bend points, its head) with whether it is tracked, and the drawing's width and height."""
    ranks = _ranks(pic)
    boxes = {node.element: _node_box(node, ranks[node.id]) for node in pic.nodes}
    by_id = {node.id: node.element for node in pic.nodes}
    paths: list[tuple[str, list[_Box], bool]] = []
    for edge in pic.edges:
        tail, head = boxes[by_id[edge.source]], boxes[by_id[edge.target]]
        bends = [_Box(f"{edge.element}.{r}", r, BEND_WIDTH, 0.0, None) for r in range(tail.rank + 1, head.rank)]
        for bend in bends:
            boxes[bend.key] = bend
        paths.append((edge.element, [tail, *bends, head], edge.tracked))
    rows: dict[int, list[_Box]] = defaultdict(list)
    for box in boxes.values():
        rows[box.rank].append(box)
    below: dict[str, list[str]] = defaultdict(list)  # neighbours one rank down, one rank up
    above: dict[str, list[str]] = defaultdict(list)
    for _, chain, _ in paths:
        for low, high in zip(chain, chain[1:], strict=False):
            below[high.key].append(low.key)
            above[low.key].append(high.key)
    order = {box.key: i for row in rows.values() for i, box in enumerate(row)}
    top = max(rows, default=0)
    for sweep in range(SWEEPS):
        upward = sweep % 2 == 0
        for rank in range(1, top + 1) if upward else range(top - 1, -1, -1):
            neighbours = below if upward else above
            row = rows[rank]
            mean = {b.key: _mean([order[k] for k in neighbours[b.key]], order[b.key]) for b in row}
            row.sort(key=lambda b: mean[b.key])
            order.update({b.key: i for i, b in enumerate(row)})
    _place_across(rows, below, above)
    left = min((b.x - b.width / 2 for b in boxes.values()), default=0.0)
    for box in boxes.values():
        box.x += MARGIN - left
    width = max((b.x + b.width / 2 for b in boxes.values()), default=0.0) + MARGIN
    heights = {rank: max((b.height for b in row), default=0.0) for rank, row in rows.items()}
    y = float(MARGIN)
    for rank in range(top, -1, -1):  # the loss at the top, the inputs at the bottom
        for box in rows[rank]:
            box.y = y + heights.get(rank, 0.0) / 2
        y += heights.get(rank, 0.0) + RANK_GAP
    placed = [box for box in boxes.values() if box.node is not None]
    return placed, paths, width, y - RANK_GAP + MARGIN


def _place_across(rows: dict[int, list[_Box]], below: dict[str, list[str]], above: dict[str, list[str]]) -> None:
    """Each box's x: packed in its rank's order, then pulled toward its neighbours' mean x, a rank at a time,
    without two boxes of a rank ever closer than NODE_GAP (so edges run as straight as the order allows)."""
    for row in rows.values():
        x = 0.0
        for box in row:
            box.x = x + box.width / 2
            x += box.width + NODE_GAP
    widest = max((row[-1].x + row[-1].width / 2 for row in rows.values() if row), default=0.0)
    for row in rows.values():
        shift = (widest - (row[-1].x + row[-1].width / 2)) / 2 if row else 0.0
        for box in row:
            box.x += shift
    xs = {box.key: box for row in rows.values() for box in row}
    ranks = sorted(rows)
    for sweep in range(2 * SWEEPS):
        for rank in ranks if sweep % 2 == 0 else reversed(ranks):
            row = rows[rank]
            wanted = [_mean_x([xs[k].x for k in below[b.key] + above[b.key]], b.x) for b in row]
            placed = list(wanted)
            for i in range(1, len(row)):  # keep the order and the gaps: push right where two come too close
                placed[i] = max(placed[i], placed[i - 1] + (row[i - 1].width + row[i].width) / 2 + NODE_GAP)
            shift = sum(w - p for w, p in zip(wanted, placed, strict=True)) / max(len(row), 1)
            for box, x in zip(row, placed, strict=True):
                box.x = x + shift  # the row as a whole sits where its boxes want, on average


def _mean_x(values: list[float], otherwise: float) -> float:
    return sum(values) / len(values) if values else otherwise


def _mean(values: list[int], otherwise: int) -> float:
    return sum(values) / len(values) if values else float(otherwise)


def _node_svg(box: _Box) -> str:
    node = box.node
    assert node is not None
    state = BY_KEY[node.state]
    left, top = box.x - box.width / 2, box.y - box.height / 2
    dash = f' stroke-dasharray="{state.dash}"' if state.dash else ""
    parts = [
        f'<g id="still-{node.element}"><title>{html.escape(node.title)}</title>',
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" rx="6" '
        f'fill="{state.light.fill}" stroke="{state.light.border}" stroke-width="{state.width}"{dash}/>',
    ]
    y = top + PAD_Y
    for text, size, bold in _lines(node):
        y += size
        weight = ' font-weight="bold"' if bold else ""
        colour = TEXT["light"] if bold or size == LINE_PX else MUTED["light"]
        parts.append(
            f'<text x="{box.x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="{size}"{weight} '
            f'fill="{colour}">{html.escape(text)}</text>'
        )
        y += LINE_GAP
    parts.append("</g>")
    return "".join(parts)


def _ports(paths: list[tuple[str, list[_Box], bool]]) -> dict[tuple[str, int], float]:
    """Where each edge leaves its input's box and enters its user's: spread along the box's side in the order of
    where they come from, so two edges of one pair (`x * x`) are two lines, not one."""
    ends: dict[str, list[tuple[float, str, int]]] = defaultdict(list)  # box key -> (the far end's x, edge, end)
    for element, chain, _ in paths:
        ends[f"{chain[0].key}/top"].append((chain[1].x, element, 0))
        ends[f"{chain[-1].key}/bottom"].append((chain[-2].x, element, -1))
    by_key = {chain[i].key: chain[i] for _, chain, _ in paths for i in (0, -1)}
    ports = {}
    for side, found in ends.items():
        box = by_key[side.split("/")[0]]
        found.sort()
        span = min(box.width * 0.5, PORT_GAP * (len(found) - 1))
        for i, (_, element, end) in enumerate(found):
            ports[(element, end)] = box.x - span / 2 + (span * i / (len(found) - 1) if len(found) > 1 else span / 2)
    return ports


def _edge_svg(element: str, chain: list[_Box], tracked: bool, ports: dict[tuple[str, int], float]) -> str:
    """From the top of the input's box up to the bottom of its user's, through the bend points between."""
    tail, head = chain[0], chain[-1]
    bends = [(b.x, b.y) for b in chain[1:-1]]
    points = [(ports[(element, 0)], tail.y - tail.height / 2), *bends, (ports[(element, -1)], head.y + head.height / 2)]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))
    dash = ' stroke-dasharray="5 4"' if not tracked else ""
    arrow = "still-arrow" if tracked else "still-open"
    stroke = f'fill="none" stroke="{EDGE["light"]}" stroke-width="1.5"{dash}'
    return f'<path d="{path}" {stroke} marker-end="url(#{arrow})"/>'


def still_svg(pic: Picture, label: str) -> str:
    """The graph as an inline SVG: scales to its box's width, never wider than its own size."""
    placed, paths, width, height = layout(pic)
    edge = EDGE["light"]
    markers = (
        '<defs><marker id="still-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{edge}"/></marker>'
        '<marker id="still-open" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{BACKGROUND["light"]}" stroke="{edge}"/></marker></defs>'
    )
    ports = _ports(paths)
    edges = "".join(_edge_svg(element, chain, tracked, ports) for element, chain, tracked in paths)
    body = edges + "".join(map(_node_svg, placed))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(label)}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'style="max-width:100%;height:auto" font-family="{FONT}">{markers}{body}</svg>'
    )


def kept_gradients(grads: Gradients) -> dict[int, Any]:
    """What a backward's container holds after it: NodeId -> the gradient's numbers (a leaf's, kept)."""
    return {int(node_id): grad.to_numpy() for node_id in grads.node_ids() if (grad := grads.get(node_id)) is not None}


def last_frame_picture(
    before: GraphSnapshot,
    after: GraphSnapshot,
    names: dict[int, str],
    kept: Mapping[int, Any],
    recorder: BackwardRecorder,
) -> Picture:
    """The graph as a replay's last frame leaves it (a notebook replay's still): the nodes `before` held, as they
    are `after` the backward; a leaf says the gradient the container `kept` (`kept_gradients`), an op whose step ran
    the one it consumed (the `recorder`'s last for it), in the picture's numbers (`brief`). The stage's last frame
    says the same of each node (tests/js/steps.test.mjs)."""
    ids = {int(node.id) for node in before.nodes}
    shown = dataclasses.replace(after, nodes=tuple(n for n in after.nodes if int(n.id) in ids))
    held = {node_id: HeldGradient(brief(values), tensor_range(values)) for node_id, values in kept.items()}
    pic = picture(shown, names, Overlay(gradients=held))
    received = {int(e.node_id): e.total for e in recorder.events if isinstance(e, GradientRegistered)}
    nodes = tuple(
        dataclasses.replace(
            node,
            grad=GRAD_LINES["grad_consumed"].format(brief(received[node.id])),
            grad_range=tensor_range(received[node.id]),
        )
        if node.state == "consumed" and node.id in received
        else node
        for node in pic.nodes
    )
    return dataclasses.replace(pic, nodes=nodes)


@dataclass(frozen=True)
class Still:
    """A graph's still: its picture, its caption, and each gradient the container kept (name, values)."""

    picture: Picture
    caption: str
    gradients: tuple[tuple[str, str], ...]

    def html(self, marker: str) -> str:
        """The picture, its caption, and the gradients as a table; `marker` names it, so the live stage that
        replaces it can find it."""
        rows = "".join(
            f'<tr><th scope="row" style="text-align:left;padding:2px 12px 2px 0">{html.escape(name)}</th>'
            f'<td style="font-family:monospace;padding:2px 0">{html.escape(values)}</td></tr>'
            for name, values in self.gradients
        )
        table = (
            f'<p style="margin:6px 0 2px;font-weight:bold">Gradients kept</p>'
            f'<table style="border-collapse:collapse">{rows}</table>'
            if self.gradients
            else f"<p>{NO_GRADIENTS}</p>"
        )
        return (
            f'<div data-autodiff-still="{html.escape(marker)}" style="background:{BACKGROUND["light"]};'
            f'color:{TEXT["light"]};padding:8px;font-family:{FONT}">'
            f"{still_svg(self.picture, self.caption)}"
            f'<p style="margin:6px 0">{html.escape(self.caption)}</p>{table}</div>'
        )

    def text(self) -> str:
        """The same as plain text (a terminal's IPython, a text-only viewer)."""
        kept = [f"  {name}: {values}" for name, values in self.gradients]
        return "\n".join([self.caption, "Gradients kept:", *kept] if kept else [self.caption, NO_GRADIENTS])


NO_GRADIENTS = "No gradients are kept: no backward has run on this graph."
