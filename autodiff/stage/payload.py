"""The stage's payload: every graph, with or without its player, as plain data. One module, one style, one legend.

`static_payload` draws a snapshot as it is (memory lessons, the cross-check, a refused backward);
`replay_payload` adds a recorded backward, stepped in the browser. Both return a `StagePayload`: the one contract
between Python and the stage's browser modules beside it (`js/`; mirrored in `js/model/contract.mjs` as a JSDoc
typedef, and checked on both sides by tests).
Element ids come from `graph_dot.py`; the replay's state machine is the browser's alone. `export_html` writes
the same player and data, with Graphviz inline, into one file that plays offline.
"""

from __future__ import annotations

import base64
import gc
import gzip
import hashlib
import json
import pickle
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypedDict

from autodiff import BackwardRecorder, GraphSnapshot, NodeSnapshot, Requirement
from autodiff.trace import GradientRegistered, StepStarted

from .bundle import bundle
from .chain_rule import GradientSum, StepCard, gradient_sums, step_cards
from .code import Segment, code_lines, token_rules
from .events import StageEvent, stage_event
from .format import ArrayTexts, TensorNumbers, TensorRange
from .graph_dot import ENTRY_WORDS, GRAD_LINES, SIZES, STATE_WORDS, Overlay, Picture, picture
from .groups import GroupRun, StageGroup, group_runs, group_tree
from .naming import GraphNames, constants_first, graph_names
from .palette import BY_KEY, EDGE_LEGEND, stage_css
from .source_lines import node_lines

HERE = Path(__file__).resolve().parent
# Graphviz in WebAssembly, pinned (see its README.md for version and checksum): in a checkout in the app's
# static/vendor/, which the app serves at GRAPHVIZ_URL; installed from the wheel, in this package's vendor/.
VENDOR = next((d for d in (HERE / "vendor", HERE.parents[1] / "static" / "vendor") if d.is_dir()), HERE / "vendor")
GRAPHVIZ = VENDOR / "wasm-graphviz-1.29.2" / "index.js"
GRAPHVIZ_URL = "app/static/vendor/wasm-graphviz-1.29.2/index.js"
GRAPHVIZ_SHA256 = "550d9cd6ff429f5bd225316fe1faed4f852038c3e1ec609ce113af1f9379ce25"
# The graph's font, pinned and served by the app too (static/vendor/liberation-sans-2.1.5/README.md): Helvetica's
# widths, which Graphviz lays a label out with, so a label fits its box whatever fonts a machine has. Weight -> URL.
GRAPH_FONT = "app/static/vendor/liberation-sans-2.1.5/LiberationSans-{}.ttf"
GRAPH_FONTS = {"400": GRAPH_FONT.format("Regular"), "700": GRAPH_FONT.format("Bold")}
STAGE_JS = bundle("streamlit")  # the stage as Streamlit's component runs it (bundle.py)
STAGE_CSS = "\n".join([stage_css(), token_rules(":where(.stage) .stage-code"), (HERE / "stage.css").read_text()])
RANKDIRS = ["BT", "LR"]  # the browser lays the graph out both ways once and keeps the one that reads larger
# what travels compressed (gzip, then base64) from Python to the browser: a 5,000-node replay is 7 MB of JSON, and
# mostly the same words again; the browser unpacks it before anything else reads it (`wire`; `unpack` in
# js/model/contract.mjs)
PACKED_KEYS = ("nodes", "edges", "events", "cards", "sums", "groups", "program")
RTOL, ATOL = 1e-3, 1e-4  # an answer to a prediction is right within these (the stage checks, and the app's tables)
Said = tuple[str, TensorNumbers | None]  # a text that may write a tensor out, and that tensor's range (format.py)


class StageNode(TypedDict):
    element: str  # its id in the SVG
    id: int  # its NodeId
    name: str  # what sentences call it: its variable, else its expression
    title: str  # its first line: `h = x·x`
    value: str  # `value [1.0, 4.0]`
    # the numbers of the tensor a text beside it writes out, for a folded view's summary (format.tensor_range)
    value_range: TensorNumbers | None
    detail: str  # `NodeId(2) · mul`
    state: str  # a key of the legend
    grad: str  # its gradient line before any event
    grad_range: TensorNumbers | None
    grad_kind: Literal["leaf", "op", "none"]  # what its gradient does: kept, consumed, or there is none
    wide: str  # the longest gradient line it will show: its box is laid out that wide, so nothing moves
    wide_range: TensorNumbers | None
    group: str  # the element of the innermost group it belongs to ("" at the top)


class StageEdge(TypedDict):
    element: str
    source: int  # the input's NodeId
    target: int  # the NodeId of the node that uses it
    tracked: bool
    label: str  # the longest value that will be sent along it ("" if none): laid out with room for it
    label_range: TensorNumbers | None  # its numbers for a folded view's summary (format.tensor_range)


class StageProgram(TypedDict):
    lines: list[list[Segment]]  # the program's source, a list of (token kind, text) per line (code.py)
    spans: dict[str, tuple[int, int]]  # NodeId (as text) -> the first and last line of the statement that made it


class ClassWords(TypedDict):
    """What a class's stage says in class mode's own words, written once (classroom/words.py): a phase -> words."""

    holds: str  # a teacher's press past a question still open, refused
    room_phases: dict[str, str]  # the tally beside the graph (the room's screen)
    student_phases: dict[str, str]  # a student's status


class ClassroomLink(TypedDict):
    """A stage in a class (issue 27): a student's follows the room's step, a teacher's posts each step and shows the
    answers as they come, both through the push route beside the app (classroom/routes.py)."""

    role: Literal["teacher", "student"]
    room: str
    secret: str  # the teacher key or the student's seat: sent in a header, never in a URL
    api: str  # the push route, relative to the page: "class/api/"
    join: str  # the teacher's stage: how to join (the link and the code), kept in view on a projector; else ""
    asked: dict[str, int]  # a question's key -> the NodeId it asks about (the teacher's tallies are drawn there)
    mistakes: dict[str, str]  # a mistake group -> the words the teacher reads
    # the teacher's page: the room's newest question and phase its controls were drawn for (`<id>:<phase>`, "none");
    # a stage that sees the room elsewhere (another teacher device moved it) asks the page to draw them again
    phase: str
    histogram: bool  # the teacher chose to show the room vote 1's answers (without a mark) once vote 1 is closed
    said: ClassWords


class StagePayload(TypedDict):
    mode: Literal["static", "replay"]
    # the browser writes the DOT of what it draws (groups folded or not), lays it out each of `rankdirs` way, with
    # and without each node's `NodeId · op` line, and keeps the one that reads larger
    rankdirs: list[str]
    fonts: list[int]  # point sizes: a node's title, its value and gradient, its detail line
    nodes: list[StageNode]
    edges: list[StageEdge]
    groups: list[StageGroup]  # the program's parts, outer before inner (groups.py)
    events: list[StageEvent]
    index: int
    presenter: bool
    embed: bool  # the stage alone in its window (an iframe in a slide deck): it takes the window's height
    legend: dict[str, str]  # state -> the legend's sentence (the browser shows those present)
    # state -> the words a node carries in that state; `grad_*` a gradient line (`{}` its value), `entry_*` what the
    # container says of an entry: the stage says no word of its own about a node's gradient
    words: dict[str, str]
    graphviz_url: str
    graph_fonts: dict[str, str]  # the graph's font face, weight -> URL (the app's; a notebook's host has its own)
    signature: str
    program: StageProgram | None  # the program beside the graph, its running line lit
    cards: dict[str, StepCard]  # the event index of each StepStarted -> the chain rule of that step in numbers
    sums: dict[str, GradientSum]  # NodeId (as text) -> every gradient it received, added up
    exercise: bool  # ask each step's sends before showing them
    tolerance: tuple[float, float]  # an answer's (rtol, atol)
    classroom: ClassroomLink | None  # a stage in a class, else None
    file_stem: str  # what the stage's downloads are named after (the program): `seed.dot`, `seed-event-3.svg`


PAYLOAD_KEYS = frozenset(StagePayload.__annotations__)


def static_payload(
    snapshot: GraphSnapshot,
    names: dict[int, str],
    overlay: Overlay | None = None,
    presenter: bool = False,
) -> StagePayload:
    """A snapshot drawn as it is: each node's state, value and what happened to its gradient."""
    named = graph_names(snapshot.nodes, names)
    pic = picture(snapshot, names, overlay, titles=named.titles)
    return _payload("static", pic, snapshot, names, named, [], presenter, {}, {}, None, None)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a replay's payload is built. Its lists and dicts (60,000 for 5,000 nodes) all
    live on in the payload, and the collector runs again each time enough new ones have piled up: it walked every
    object not frozen two or three times per build, a fifth of a 5,000-node build's time, and found no garbage.
    Reference counting frees as before; a collector someone else turned off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@_collector_paused()
def replay_payload(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    presenter: bool = False,
    source: str | None = None,
    lines: dict[int, tuple[int, int]] | None = None,
) -> StagePayload:
    """Everything the player needs, as plain data: the picture is laid out from `dot` once. With the program's
    `source`, the stage shows it beside the graph and lights the line of the running step: `lines` says which
    statement made each node (watched while it ran, `course.programs.traced_build`), else it is read from the
    text (`source_lines`)."""
    if lines is None and source is not None:
        lines = node_lines(source, before.nodes, names)
    # once: the picture, events, cards, sums and groups all read them; `1 + c` as the program wrote it
    named = graph_names(before.nodes, names, constants_first(before.nodes, source, lines))
    called = named.called
    exact = ArrayTexts()  # every recorded gradient's numbers written once, wherever the payload shows them
    pic = picture(before, names, titles=named.titles, texts=exact)
    element_of = {node.id: node.element for node in pic.nodes}
    kind_of = {int(node.id): _grad_kind(node) for node in before.nodes}
    edges_left: dict[tuple[int, int], list[str]] = {}
    for edge in pic.edges:
        edges_left.setdefault((edge.source, edge.target), []).append(edge.element)
    events: list[StageEvent] = []
    grad_widths: dict[str, Said] = {}
    edge_labels: dict[str, Said] = {}
    used: dict[tuple[int, int], int] = {}
    for event in recorder.events:
        along: str | None = None  # the edge's element
        if isinstance(event, StepStarted):
            used = {}
        elif isinstance(event, GradientRegistered) and event.source is not None:
            pair = (int(event.node_id), int(event.source))
            k = used.get(pair, 0)
            used[pair] = k + 1
            elements = edges_left.get(pair, [])
            along = elements[k] if k < len(elements) else None
        record = stage_event(event, called, along, exact)
        if record["kind"] == "GradientRegistered":
            if along:
                label = edge_labels.get(along)
                if label is None or len(record["value"]) > len(label[0]):
                    edge_labels[along] = (record["value"], record["value_range"])
            element = element_of[record["node"]]
            longest = _grad_line(record["total"], kind_of[record["node"]])
            widest = grad_widths.get(element)
            if widest is None or len(longest) > len(widest[0]):
                grad_widths[element] = (longest, record["total_range"])
        events.append(record)
    payload = _payload("replay", pic, before, names, named, events, presenter, grad_widths, edge_labels, source, lines)
    payload["cards"] = {str(k): card for k, card in step_cards(before, recorder, names, named, exact).items()}
    payload["sums"] = {str(k): total for k, total in gradient_sums(before, recorder, names, named, exact).items()}
    group_runs(payload["groups"], {node["id"]: node["group"] for node in payload["nodes"]}, recorder, called, exact)
    return payload


def with_view(payload: StagePayload, exercise: bool = False, embed: bool = False) -> StagePayload:
    """`payload` for a view of it: an exercise, or the stage alone (a new signature: the browser mounts a new
    stage for it). The stage in place turns an exercise on or off where it is."""
    signature = hashlib.sha256(f"{payload['signature']}{embed}".encode()).hexdigest()[:16] if embed else None
    return {**payload, "exercise": exercise, "embed": embed, "signature": signature or payload["signature"]}


def in_classroom(payload: StagePayload, link: ClassroomLink) -> StagePayload:
    """`payload` as a class's teacher or student sees it: a new stage per room and role."""
    kept = f"{payload['signature']}{link['role']}{link['room']}"
    signature = hashlib.sha256(kept.encode()).hexdigest()[:16]
    return {**payload, "classroom": link, "exercise": False, "signature": signature}


class RevealedEvents(TypedDict):
    """Events `start` on of a class's replay, as the room reaches them: what a student's stage fills in."""

    start: int
    events: list[StageEvent]
    cards: dict[str, StepCard]
    sums: dict[str, GradientSum]
    runs: list[list[GroupRun]]  # each group's runs, their gradients in and out once the room has run them


_NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# what stands for each number a student's stage holds before the room reaches it: one width for every number, as wide as
# float32's shortest form of most (`-0.016636703`), so that neither its sign, nor a zero, nor its digits show
MASKED_NUMBER = "0.0000000000"
_REPLAY_STATES = [STATE_WORDS["unreached"], STATE_WORDS["none_yet"], STATE_WORDS["swept"]]  # a replay's node may say
_REPLAY_WIDEST = max(_REPLAY_STATES, key=len)
_NO_LABEL: Said = ("", None)  # an edge nothing is sent along
_WORDS: dict[str, object] = {
    "kept": None,
    "text": "",
    "op": "",
    "value": "",
    "value_range": None,
    "total": "",
    "total_range": None,
    "total_full": "",
    "numbers": None,
    "rules": [],
}


def redacted(payload: StagePayload, upto: int) -> StagePayload:
    """`payload` as a class's student holds it while the room is at event `upto`: each later event keeps its kind and
    the nodes and edges it touches (so the player counts the steps to come) but not its words or numbers, no card or
    sum of a step still to run is there, and the room laid out for the numbers to come is worked out from their shapes
    alone (`MASKED_NUMBER` per number). The stage never holds an answer before the room reaches it (`revealed_events`
    fills it in)."""
    events = [e if k <= upto else _blank(e) for k, e in enumerate(payload["events"])]
    totals: dict[int, list[Said]] = {}  # each node's gradients, as its gradient line will say them
    for e in payload["events"]:
        if e["kind"] == "GradientRegistered":
            totals.setdefault(e["node"], []).append((e["total"], e["total_range"]))
    return {
        **payload,
        "events": events,
        "cards": {k: card for k, card in payload["cards"].items() if int(k) <= upto},
        "sums": _sums_known(payload, upto),
        "groups": [{**group, "runs": _runs_known(group, upto)} for group in payload["groups"]],
        "nodes": [_masked_wide(node, totals.get(node["id"], [])) for node in payload["nodes"]],
        "edges": [
            {**edge, "label": masked_numbers(edge["label"]), "label_range": _masked_range(edge["label_range"])}
            for edge in payload["edges"]
        ],
    }


def masked_numbers(text: str) -> str:
    """`text` with each number `MASKED_NUMBER`: its width says how many numbers there are, nothing of what they are."""
    return _NUMBER.sub(MASKED_NUMBER, text)


def _masked_range(numbers: TensorNumbers | None) -> TensorRange | None:
    """A tensor's numbers as a student's stage holds them before the room reaches them: a summary's shape (the room
    its words take), none of its numbers; none of four numbers or fewer, which the masked text already lays out (and
    whether Python sent them would tell whether they are short)."""
    if not isinstance(numbers, dict):
        return None
    return {**numbers, "low": 0.0, "high": 0.0}


def _masked_wide(node: StageNode, totals: list[Said]) -> StageNode:
    """`node` with the longest line its gradient will say masked: chosen among the masked lines, since which line is
    longest unmasked depends on how wide its numbers are."""
    grad_lines = [(_grad_line(total, node["grad_kind"]), numbers) for total, numbers in totals]
    states = [(words, None) for words in _REPLAY_STATES] if node["grad_kind"] != "none" else []
    possible: list[Said] = [(node["grad"], node["grad_range"]), *grad_lines, *states]
    line, numbers = max(((masked_numbers(line), numbers) for line, numbers in possible), key=_text_length)
    return {**node, "wide": line, "wide_range": _masked_range(numbers)}


def _grad_line(total: str, kind: Literal["leaf", "op", "none"]) -> str:
    """The widest a node's gradient line says `total`: as it says it once its step has run (a leaf keeps it)."""
    return GRAD_LINES["grad_kept" if kind == "leaf" else "grad_consumed"].format(total)


def _text_length(said: Said) -> int:
    return len(said[0])


def _grad_kind(node: NodeSnapshot) -> Literal["leaf", "op", "none"]:
    """What a node's gradient does: kept (a leaf that asked for it), consumed (an op's output), or there is none."""
    if node.requirement is Requirement.GradInBackward:
        return "op"
    return "leaf" if node.requirement is Requirement.Grad else "none"


def revealed_events(payload: StagePayload, start: int, end: int) -> RevealedEvents:
    """Events `start` to `end` whole, with the cards and sums the room now knows: what a student's stage, redacted
    up to `start - 1`, fills in as the room moves on to `end`."""
    return {
        "start": start,
        "events": payload["events"][start : end + 1],
        "cards": {k: card for k, card in payload["cards"].items() if start <= int(k) <= end},
        "sums": _sums_known(payload, end),
        "runs": [_runs_known(group, end) for group in payload["groups"]],
    }


def _blank(event: StageEvent) -> StageEvent:
    kept = {key: value for key, value in event.items() if key not in _WORDS}
    return {**kept, **{key: _WORDS[key] for key in event if key in _WORDS}}  # type: ignore[return-value]


def _runs_known(group: StageGroup, upto: int) -> list[GroupRun]:
    """A folded part's runs: what came in and went out added up, once the room has run the whole run."""
    return [run if run["last"] <= upto else _run_blank(run) for run in group["runs"]]


def _run_blank(run: GroupRun) -> GroupRun:
    return {
        **run,
        "came_in": [{**f, "value": "", "value_range": None} for f in run["came_in"]],
        "sent": [{**f, "value": "", "value_range": None} for f in run["sent"]],
    }


def _sums_known(payload: StagePayload, upto: int) -> dict[str, GradientSum]:
    """A node's gradient is whole once its step starts (every path into it has sent), a leaf's at the end."""
    events = payload["events"]
    if upto >= len(events) - 1:
        return dict(payload["sums"])
    started = {e["node"] for e in events[: upto + 1] if e["kind"] == "StepStarted"}
    return {k: total for k, total in payload["sums"].items() if total["node"] in started}


def _payload(
    mode: Literal["static", "replay"],
    pic: Picture,
    snapshot: GraphSnapshot,
    names: dict[int, str],
    named: GraphNames,
    events: list[StageEvent],
    presenter: bool,
    grad_widths: dict[str, Said],
    edge_labels: dict[str, Said],
    source: str | None,
    lines: dict[int, tuple[int, int]] | None,
) -> StagePayload:
    called = named.called
    by_id = {int(n.id): n for n in snapshot.nodes}
    spans: dict[int, tuple[int, int]] = {}
    program = None
    if source is not None:
        spans = lines if lines is not None else node_lines(source, snapshot.nodes, names)
        program = StageProgram(lines=code_lines(source), spans={str(k): v for k, v in spans.items()})
    groups, group_of = group_tree(snapshot.nodes, spans, source, called)
    # each node and edge written as a dict display: a TypedDict called with keywords costs 4 ms more at 5,000 nodes
    nodes: list[StageNode] = []
    for node in pic.nodes:
        kind = _grad_kind(by_id[node.id])
        # the longest it may say, the first of lines as long: its own line, its widest gradient, a replay's states
        wide, wide_range = node.grad, node.grad_range
        widest = grad_widths.get(node.element)
        if widest is not None and len(widest[0]) > len(wide):
            wide, wide_range = widest
        if mode == "replay" and kind != "none" and len(_REPLAY_WIDEST) > len(wide):
            wide, wide_range = _REPLAY_WIDEST, None
        nodes.append(
            {
                "element": node.element,
                "id": node.id,
                "name": called[node.id],
                "title": node.title,
                "value": node.value,
                "value_range": node.value_range,
                "detail": node.detail,
                "state": node.state,
                "grad": node.grad,
                "grad_range": node.grad_range,
                "grad_kind": kind,
                "wide": wide,
                "wide_range": wide_range,
                "group": group_of.get(node.id, ""),
            }
        )
    edges: list[StageEdge] = []
    for e in pic.edges:
        label, label_range = edge_labels.get(e.element, _NO_LABEL)
        edges.append(
            {
                "element": e.element,
                "source": e.source,
                "target": e.target,
                "tracked": e.tracked,
                "label": label,
                "label_range": label_range,
            }
        )
    # the replay's identity (the same replay built again keeps its stage; another one mounts a new stage): its plain
    # data pickled, which writes the same values the same way, in a third of JSON's time (40 ms at 5,000 nodes)
    content = pickle.dumps((nodes, edges, groups, events, mode, source, presenter), protocol=5)
    signature = hashlib.sha256(content).hexdigest()[:16]
    return StagePayload(
        mode=mode,
        rankdirs=RANKDIRS,
        fonts=list(SIZES[presenter]),
        nodes=nodes,
        edges=edges,
        groups=groups,
        events=events,
        index=0,
        presenter=presenter,
        embed=False,
        legend={**{state.key: state.legend for state in BY_KEY.values()}, **EDGE_LEGEND},
        words={**STATE_WORDS, **GRAD_LINES, **ENTRY_WORDS},
        graphviz_url=GRAPHVIZ_URL,
        graph_fonts=GRAPH_FONTS,
        signature=signature,
        program=program,
        cards={},
        sums={},
        exercise=False,
        tolerance=(RTOL, ATOL),
        classroom=None,
        file_stem="graph",
    )


def export_html(payload: StagePayload, title: str) -> str:
    """One self-contained HTML file: the player, its styles, the data and Graphviz inline. It makes no
    network request, so it plays offline in any browser (slides, course pages)."""
    module = GRAPHVIZ.read_text().replace("</script", "<\\/script")
    data = json.dumps(wire({**payload, "index": 0})).replace("<", "\\u003c")  # no `</script` nor `<!--` in it
    player = bundle("page")  # js/hosts/page.mjs: mounts the stage from the two elements above it
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_escape(title)}</title>
<style>{STAGE_CSS} body {{ margin: 1rem; background: #fff; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #0e1117; }} }}</style></head>
<body><main><h1 style="font: 600 1.4rem sans-serif; margin: 0 0 .5rem">{_escape(title)}</h1>
<script type="text/plain" id="graphviz-module">{module}</script>
<script type="application/json" id="replay-data">{data}</script>
<script type="module">
{player}</script></main>
</body></html>
"""


def wire(payload: StagePayload) -> dict[str, object]:
    """`payload` as it travels to the browser: `PACKED_KEYS` gzip-compressed in one base64 text, `packed` (the
    rest stays readable: the host's reruns compare and update it). contract.mjs's `unpack` restores the payload."""
    heavy = {key: payload[key] for key in PACKED_KEYS}  # type: ignore[literal-required]
    text = base64.b64encode(gzip.compress(json.dumps(heavy, separators=(",", ":")).encode(), 6, mtime=0)).decode()
    return {**{k: v for k, v in payload.items() if k not in PACKED_KEYS}, "packed": text}


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
