"""Shared widgets: the graph with its legend, tables, the step player, the memory chart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from autodiff import GraphSnapshot

from .format import format_values
from .graph import COLLAPSE_LIMIT, Overlay, graph_dot, legend_html
from .labs import MemoryPoint, Outcome
from .replay import node_name
from .state import presenter_mode

SPEEDS = {"slow": 1.5, "normal": 0.8, "fast": 0.35}


def lesson_intro(title: str, text: str) -> None:
    st.title(title)
    st.markdown(text)


def graph_with_legend(dot: str, caption: str, cross_check: bool = False) -> None:
    """The graph beside the legend that explains its colours (the legend folds away in presenter mode)."""
    if presenter_mode():
        st.graphviz_chart(dot, width="stretch")
        st.caption(caption)
        return
    left, right = st.columns([3, 1])
    with left:
        st.graphviz_chart(dot, width="stretch")
        st.caption(caption)
    with right:
        st.markdown("**Legend**")
        st.markdown(legend_html(cross_check), unsafe_allow_html=True)


def data_table(rows: list[dict[str, object]]) -> None:
    """A small table with column labels: static HTML, light to redraw and readable on a projector."""
    st.table(pd.DataFrame(rows), hide_index=True, border="horizontal")


def snapshot_graph(
    snapshot: GraphSnapshot, names: dict[int, str], caption: str, overlay: Overlay | None = None, key: str = "graph"
) -> str:
    """Draw a snapshot with its legend; above the collapse limit, one box per order bucket, with a
    picker to expand some buckets. Returns the DOT text drawn."""
    expanded: frozenset[int] = frozenset()
    if len(snapshot.nodes) > COLLAPSE_LIMIT:
        sizes: dict[int, int] = {}
        for node in snapshot.nodes:
            sizes[node.order] = sizes.get(node.order, 0) + 1
        chosen = st.multiselect(
            "Expand order buckets",
            sorted(sizes),
            key=f"{key}_expand",
            format_func=lambda order: f"order {order} ({sizes[order]} nodes)",
        )
        st.caption(
            f"This graph has {len(snapshot.nodes):,} nodes: it is drawn one box per order bucket so your browser "
            "stays responsive. Pick buckets above to see their nodes."
        )
        if sum(sizes[o] for o in chosen) > COLLAPSE_LIMIT:
            st.warning(f"Those buckets hold more than {COLLAPSE_LIMIT} nodes together: pick fewer to expand them.")
        else:
            expanded = frozenset(chosen)
    dot = graph_dot(snapshot, names, overlay, presenter=presenter_mode(), expanded_orders=expanded)
    graph_with_legend(dot, caption, cross_check=bool(overlay and overlay.verdicts))
    return dot


def gradients_table(container: dict[int, np.ndarray], names: dict[int, str], kept: set[int]) -> None:
    """The `Gradients` container: one row per entry."""
    if not container:
        st.info("The Gradients container is empty.")
        return
    rows = [
        {
            "Node": node_name(node_id, names),
            "Shape": str(list(np.shape(value))),
            "Gradient": format_values(value),
            "Kind": "kept (Grad leaf)" if node_id in kept else "registered, awaiting its step",
        }
        for node_id, value in sorted(container.items())
    ]
    data_table(rows)


def tape_table(buckets: tuple[tuple[int, ...], ...], snapshot: GraphSnapshot, names: dict[int, str]) -> None:
    """The tape: one row per order bucket, highest order first (the order they run in)."""
    rows = []
    for order in range(len(buckets) - 1, -1, -1):
        if not buckets[order]:
            continue
        rows.append(
            {
                "Order": order,
                "Steps (in tape order)": ", ".join(node_name(i, names) for i in buckets[order]),
                "Ops": ", ".join(snapshot.node(i).op for i in buckets[order]),
            }
        )
    data_table(rows)


def step_player(total: int, key: str) -> int:
    """First / previous / next / last, play-pause with speed, and a scrubber. Returns the index."""
    ss = st.session_state
    index_key, slider_key, playing_key = f"{key}_index", f"{key}_slider", f"{key}_playing"
    ss.setdefault(index_key, 0)
    ss[index_key] = max(0, min(ss[index_key], total - 1))

    def go(target: int) -> None:
        ss[index_key] = max(0, min(target, total - 1))

    cols = st.columns([1, 1, 1, 1, 1.2, 1.6])
    cols[0].button("« First", key=f"{key}_first", on_click=go, args=(0,), width="stretch")
    cols[1].button("◀ Prev", key=f"{key}_prev", on_click=lambda: go(ss[index_key] - 1), width="stretch")
    cols[2].button("Next ▶", key=f"{key}_next", on_click=lambda: go(ss[index_key] + 1), width="stretch")
    cols[3].button("Last »", key=f"{key}_last", on_click=go, args=(total - 1,), width="stretch")
    playing = ss.get(playing_key, False)
    if cols[4].button("Pause" if playing else "Play ▶", key=f"{key}_play", width="stretch"):
        ss[playing_key] = not playing
        if not playing and ss[index_key] >= total - 1:
            ss[index_key] = 0
        st.rerun()  # a full rerun: the player's timer is set when the page is drawn
    if not presenter_mode():
        cols[5].select_slider("Speed", options=list(SPEEDS), value="normal", key=f"{key}_speed",
                              label_visibility="collapsed")  # fmt: skip
    ss[slider_key] = ss[index_key] + 1  # people count events from 1, as the caption does
    st.slider(
        "Event",
        1,
        max(total, 2),
        key=slider_key,
        on_change=lambda: go(ss[slider_key] - 1),
        disabled=total <= 1,
        help="Drag to jump to any event of the recorded backward.",
    )
    return ss[index_key]


def play_interval(key: str) -> float | None:
    """The player's timer period while playing, else None (no timer)."""
    if not st.session_state.get(f"{key}_playing", False):
        return None
    return SPEEDS[st.session_state.get(f"{key}_speed", "normal")]


def advance_player(key: str, total: int) -> None:
    """One tick of the player's timer: move on, and stop at the end."""
    ss = st.session_state
    if ss.get(f"{key}_playing", False):
        if ss[f"{key}_index"] < total - 1:
            ss[f"{key}_index"] += 1
        else:
            ss[f"{key}_playing"] = False
            st.rerun()


def outcome_message(outcome: Outcome) -> None:
    """A button's result: success with the value, or an explained error (never a traceback)."""
    if outcome.ok:
        st.success(f"`{outcome.action}` → `{outcome.result}`\n\n{outcome.explanation}")
    else:
        st.error(f"`{outcome.action}` was refused.\n\n> {outcome.result}\n\n**Why:** {outcome.explanation}")


def outcome_log(log: list[Outcome]) -> None:
    if not log:
        return
    rows = [
        {"#": i + 1, "Action": o.action, "Result": o.result if o.ok else "refused", "Why": o.explanation}
        for i, o in enumerate(log)
    ]
    data_table(rows)


def memory_charts(history: list[MemoryPoint], iterations: int) -> None:
    """MiB in use and live buffers per forward pass, with fixed axes so the curves grow in place.
    On MLX, MLX's own active-memory counter is drawn beside the engine's accounting."""
    rows = []
    for p in history:
        common = {"Iteration": p.iteration, "Event": p.label}
        rows.append({**common, "Counter": "engine: MiB in use", "Value": p.usage.mib})
        rows.append({**common, "Counter": "engine: live buffers", "Value": p.usage.allocations})
        if p.backend_bytes is not None:
            rows.append({**common, "Counter": "MLX: active MiB", "Value": p.backend_bytes / 2**20})
    data = pd.DataFrame(rows)
    left, right = st.columns(2)
    charts = (
        (left, ["engine: MiB in use", "MLX: active MiB"], "Memory in use (MiB)"),
        (right, ["engine: live buffers"], "Live buffers"),
    )
    present = set(data["Counter"])
    for column, wanted, title in charts:
        counters = [c for c in wanted if c in present]  # MLX's counter only on the MLX backend
        part = data[data["Counter"].isin(counters)]
        top = max(1.0, float(part["Value"].max()) * 1.15)
        spec = {
            "title": title,
            "height": 260,
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "Iteration", "type": "quantitative", "scale": {"domain": [0, iterations]}},
                "y": {"field": "Value", "type": "quantitative", "scale": {"domain": [0, top]}, "title": title},
                "color": {
                    "field": "Counter",
                    "type": "nominal",
                    "scale": {"domain": counters, "range": ["#e8590c", "#1971c2"][: len(counters)]},
                    "legend": {"orient": "bottom", "title": None},
                },
                "strokeDash": {"field": "Counter", "type": "nominal", "legend": None},
                "tooltip": [{"field": "Iteration"}, {"field": "Event"}, {"field": "Counter"},
                            {"field": "Value", "format": ".2f"}],
            },
        }  # fmt: skip
        column.vega_lite_chart(part, spec, width="stretch")
