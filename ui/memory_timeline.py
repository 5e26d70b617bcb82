"""The active-memory timeline, as PyTorch's memory_viz draws it: one band per buffer, stacked over time in the order
they were allocated, coloured by category (with words in the legend), from a device's memory history.

Drawn in Python as one SVG: each band is focusable, and hovering or focusing it names its node, op, bytes, the
program line that made it and why it was held, in a line under the plot (CSS only). Colours are mixed from the
theme's own text colour (`currentColor`, as `ui/theme.py` does), so they hold in light and dark. `st.html` strips
inline SVG, so a components-v2 component of a few lines puts the markup (made here, its text escaped) in its
shadow root. The markup travels as UTF-8 bytes, which Streamlit passes through as they are: as JSON, Memory
policies' 250 KB of it were escaped, hashed, parsed and written again some ten times an open (5 ms of server CPU).
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from autodiff.memory_history import Allocation, MemoryHistory
from autodiff.stage.format import format_bytes
from autodiff.stage.graph_dot import node_element
from course.labs import RecordedMemory
from course.programs import source_offsets

from .downloads import NO_RERUN
from .state import SHARED_RESULTS

# memory_viz's categories as the legend says them, and a hue for each (mixed with the text colour below)
CATEGORIES = {
    "parameter": ("parameter (a leaf that asked for its gradient)", "#4e79a7"),
    "input": ("input (an untracked leaf)", "#af7aa1"),
    "activation": ("activation (saved by a step for backward)", "#e8740c"),
    "temporary": ("temporary (an op output nothing saved)", "#3d9a94"),
    "gradient": ("gradient", "#59a14f"),
    "unknown": ("other (a backward rule's intermediate, a recomputed value, an op without autodiff)", "#8a8f98"),
}
TEXT_SHARE = 0.3  # of the theme's text colour in each band's colour: 3:1 against the background in both themes
WIDTH, HEIGHT = 720, 240  # the plot's coordinates (it stretches to the page's width)
SMALLEST = 0.004  # bands under this share of the peak are stacked but not drawn (too thin to see or to point at)

# the component that shows the markup and links its bands with the stage's nodes (ui/memory_timeline.js)
TIMELINE = st.components.v2.component(
    "memory_timeline", html="", css="", js=(Path(__file__).resolve().parent / "memory_timeline.js").read_text()
)


@dataclass(frozen=True)
class Band:
    allocation: Allocation
    start: int  # entry index (time) it was allocated at, 0 for one held before the window
    end: int | None  # when it was released; None: still held
    steps: tuple[tuple[int, int], ...]  # (time, offset in bytes): where its bottom edge moves to


def stack(history: MemoryHistory) -> tuple[list[Band], int, int]:
    """The bands of the kept entries, stacked as memory_viz stacks them (a released band's upper neighbours slide
    down), the number of time steps, and the peak bytes. Time advances at each allocation and at each run of
    releases in a row (one moment: a sweep frees its graphs at once)."""
    events = list(history.events)
    held: list[Allocation] = []  # live, in stacking order
    steps: dict[int, list[tuple[int, int]]] = {}
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    total = 0
    seen = {id(e.allocation) for e in events if e.action == "alloc"}
    # held before the window: released in it without its allocation, or still live, never seen allocated
    before = [e.allocation for e in events if e.action == "free" and id(e.allocation) not in seen]
    before += [a for a in history.live if id(a) not in seen]
    for allocation in before:
        steps[id(allocation)], starts[id(allocation)] = [(0, total)], 0
        held.append(allocation)
        total += allocation.size
    peak, t, releasing = total, 0, False
    for event in events:
        allocation = event.allocation
        if event.action == "alloc":
            t, releasing = t + 1, False
            steps[id(allocation)], starts[id(allocation)] = [(t, total)], t
            held.append(allocation)
            total += allocation.size
            peak = max(peak, total)
            continue
        if not releasing:  # releases in a row happen at one moment: a backward's sweep drops at once
            t, releasing = t + 1, True
        index = next(i for i, a in enumerate(held) if a is allocation)
        held.pop(index)
        ends[id(allocation)] = t
        for above in held[index:]:
            bottom = steps[id(above)][-1][1]
            steps[id(above)].append((t, bottom - allocation.size))
        total -= allocation.size
    bands = [
        Band(a, starts[id(a)], ends.get(id(a)), tuple(steps[id(a)]))
        for a in sorted(
            {id(a): a for a in [*before, *(e.allocation for e in events)]}.values(), key=lambda a: starts[id(a)]
        )
    ]
    return bands, t + 1, peak


def why_held(allocation: Allocation, passes: Sequence[int] = (), names: Mapping[int, str] | None = None) -> str:
    """Why the buffer was held, and what released it, in words (`passes`: the entry index each forward pass
    started at, to say which pass made it; `names`: what the stage calls each node, `h`, `exp(x)·x`)."""
    parts = [allocation.describe(names)]
    if passes and allocation.allocated_at is not None:
        number = sum(1 for start in passes if start <= allocation.allocated_at)
        if number:
            parts.append(f"made in forward pass {number}")
    released_in = {f.name for f in allocation.release_frames}  # the functions that released it
    if allocation.released_at is None:
        parts.append("still held")
    elif "cleanup" in released_in:
        parts.append("its graph was abandoned: freed by the next backward's sweep")
    elif "run_step" in released_in:
        parts.append("freed when its step ran in backward")
    elif "dropped" in released_in:
        parts.append("freed as soon as no tensor needed its graph (PyTorch's eager freeing)")
    else:
        parts.append("freed when its last tensor was dropped")
    return "; ".join(parts)


Offsets = dict[tuple[str, str], int]  # (file, function) -> what turns its file line into a line of the program shown


def program_offsets(functions: Sequence[Callable[..., object]]) -> Offsets:
    """The functions whose joined source the page shows, to say a band's line as a line of that program."""
    return {(code.co_filename, code.co_name): offset for code, offset in source_offsets(functions).items()}


def line_of(allocation: Allocation, offsets: Offsets | None = None) -> str:
    """The line that made the buffer: a line of the program shown when a frame is in it, else a file's line."""
    for frame in allocation.frames:
        offset = (offsets or {}).get((frame.filename, frame.name))
        if offset is not None:
            return f"line {frame.line + offset} of the program ({frame.name})"
    made_by = allocation.program_frame
    if made_by is None:
        return "line unknown"
    return f"{made_by.name} ({os.path.basename(made_by.filename)}:{made_by.line})"


def timeline_svg(
    history: MemoryHistory,
    label: str,
    passes: Sequence[int] = (),
    steps: int | None = None,
    peak: int | None = None,
    offsets: Offsets | None = None,
    names: Mapping[int, str] | None = None,
) -> str:
    """The timeline as HTML (an SVG, its legend, and a line per band that hovering or focusing it shows): `label`
    names it; `steps` and `peak` set a shared scale (two timelines side by side on one time axis); `offsets` say
    lines as lines of the program the page shows (`program_offsets`); `names` name the nodes as the stage does."""
    bands, own_steps, own_peak = stack(history)
    steps, peak = max(steps or 0, own_steps), max(peak or 0, own_peak, 1)
    x, y = WIDTH / steps, HEIGHT / peak
    shapes, details, rules = [], [], []
    for number, band in enumerate(b for b in bands if b.allocation.size >= SMALLEST * peak):
        a = band.allocation
        end = steps if band.end is None else band.end
        bottom: list[tuple[float, float]] = []
        for k, (t, offset) in enumerate(band.steps):
            until = band.steps[k + 1][0] if k + 1 < len(band.steps) else end
            bottom += [(t * x, HEIGHT - offset * y), (until * x, HEIGHT - offset * y)]
        top = [(px, py - a.size * y) for px, py in reversed(bottom)]
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in bottom + top)
        what = html.escape(f"{format_bytes(a.size)}, {a.category}, {line_of(a, offsets)}: {why_held(a, passes, names)}")
        node = "" if a.node is None else f' data-node="{node_element(a.node)}"'  # its box's id on the stage
        shapes.append(
            f'<g class="band b{number} c-{a.category}"{node} tabindex="0" role="img" aria-label="{what}">'
            f'<title>{what}</title><polygon points="{points}"/></g>'
        )
        details.append(f'<p class="detail d{number}">{what}</p>')
        rules.append(f".memtl:has(.b{number}:hover,.b{number}:focus) .d{number}")
    legend = "".join(
        f'<li><svg width="14" height="14" aria-hidden="true"><rect class="c-{key}" width="14" height="14"/></svg> '
        f"{html.escape(words)}</li>"
        for key, (words, _) in CATEGORIES.items()
        if any(b.allocation.category == key for b in bands)
    )
    shown = f"{','.join(rules)}{{display:block}}" if rules else ""
    return (
        f"<style>{_css()}{shown}</style>"
        f'<figure class="memtl"><svg viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" role="group" '
        f'aria-label="{html.escape(label)}: one band per buffer, stacked over time. Tab to a band to hear what it is">'
        f'<line class="axis" x1="0" y1="{HEIGHT}" x2="{WIDTH}" y2="{HEIGHT}"/>{"".join(shapes)}</svg>'
        f'<div class="details"><p class="hint">Point at a band, or Tab to it, to see what it is.</p>'
        f"{''.join(details)}</div>"
        f"<figcaption>{html.escape(label)}: peak {format_bytes(own_peak)}; time runs left to right, one step per "
        f'allocation (releases in a row are one step).<ul class="legend">{legend}</ul></figcaption></figure>'
    )


def memory_timeline(
    history: MemoryHistory,
    label: str,
    snapshot: bytes | None,
    file_stem: str,
    passes: Sequence[int] = (),
    program: Sequence[Callable[..., object]] = (),
    names: Mapping[int, str] | None = None,
) -> None:
    """Draw the timeline, and under it "Download memory snapshot (memory_viz)" when `snapshot` is given. `program`:
    the functions whose source the page shows, so that a band's line is a line of it; `names`: what the stage calls
    each node (`short_names`), so that a band says `h (mul) output, saved by loss`, not node ids."""
    markup = timeline_svg(history, label, passes, offsets=program_offsets(program), names=names)
    _draw(markup.encode(), snapshot, file_stem)


def memory_timelines(
    recorded: Sequence[RecordedMemory],
    file_stems: Sequence[str],
    shared: Hashable,
    program: Sequence[Callable[..., object]] = (),
) -> None:
    """Timelines drawn together, on one time axis and one memory scale, each with its download. `shared` names
    recordings that are the same for every student (a lesson's shared result on a backend): their markup is made
    once per server."""
    for one, stem, markup in zip(recorded, file_stems, _shared_markup(shared, recorded, program), strict=True):
        _draw(markup, one.snapshot, stem)


@st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)
def _shared_markup(
    identity: Hashable, _recorded: Sequence[RecordedMemory], _program: Sequence[Callable[..., object]]
) -> tuple[bytes, ...]:
    """Each timeline's markup, scaled together: 2-6 ms a timeline (the stacking walks every entry of the history),
    made once for `identity` (Streamlit does not hash the arguments that start with `_`)."""
    steps, peak = shared_scale([one.history for one in _recorded])
    offsets = program_offsets(_program)
    return tuple(
        timeline_svg(one.history, one.label, (), steps, peak, offsets, one.names).encode() for one in _recorded
    )


def _draw(markup: bytes, snapshot: bytes | None, file_stem: str) -> None:
    TIMELINE(data=markup, key=f"{file_stem}_timeline")  # the browser replaces its copy only when it changed
    if snapshot is not None:
        st.download_button(
            "Download memory snapshot (memory_viz)",
            snapshot,
            file_name=f"{file_stem}.pickle",
            mime="application/octet-stream",
            on_click=NO_RERUN,
            key=f"{file_stem}_snapshot",
            icon=":material/download:",
            help="Drag the file onto https://pytorch.org/memory_viz to see the same timeline in PyTorch's own tool.",
        )


def shared_scale(histories: Sequence[MemoryHistory]) -> tuple[int, int]:
    """One time axis and one memory axis for timelines drawn together."""
    stacked = [stack(h) for h in histories]
    return max(s[1] for s in stacked), max(s[2] for s in stacked)


def _css() -> str:
    colours = "".join(
        f".memtl .c-{key}{{fill:color-mix(in srgb,currentColor {TEXT_SHARE:.0%},{hue})}}"
        for key, (_, hue) in CATEGORIES.items()
    )
    return (
        ".memtl{margin:0 0 1rem}.memtl>svg{width:100%;height:14rem;display:block}"
        ".memtl polygon{stroke:color-mix(in srgb,currentColor 50%,transparent);stroke-width:0.5;"
        "vector-effect:non-scaling-stroke}.memtl .axis{stroke:currentColor;vector-effect:non-scaling-stroke}"
        ".memtl .details{min-height:3em}.memtl .detail{display:none;margin:0.25rem 0}"
        ".memtl .hint{margin:0.25rem 0;opacity:0.8}.memtl:has(.band:hover,.band:focus) .hint{display:none}"
        ".memtl .band:focus{outline:none}.memtl .band:hover polygon,.memtl .band:focus polygon"
        "{stroke:currentColor;stroke-width:3}.memtl .band.linked polygon{stroke:currentColor;stroke-width:3;"
        "stroke-dasharray:6 3}"
        ".memtl .legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:0.25rem 1rem;margin:0.25rem 0 0}"
        ".memtl .legend svg{width:14px;vertical-align:middle}" + colours
    )
