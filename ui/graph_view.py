"""The graph on a page: a snapshot drawn with its legend, collapsed into order buckets when large."""

from __future__ import annotations

import streamlit as st

from autodiff import GraphSnapshot

from .graph_dot import COLLAPSE_LIMIT, Overlay, bucket_label, graph_dot, legend_html, order_buckets
from .state import presenter_mode


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


def bucket_picker(snapshot: GraphSnapshot, key: str) -> frozenset[int]:
    """Above the collapse limit a graph is drawn one box per order bucket; this picker expands some.
    Returns the chosen buckets (their first orders); none below the limit."""
    if len(snapshot.nodes) <= COLLAPSE_LIMIT:
        return frozenset()
    buckets = order_buckets(snapshot)
    chosen = st.multiselect(
        "Expand order buckets",
        list(buckets),
        key=f"{key}_expand",
        format_func=lambda start: f"{bucket_label(start, buckets[start])} ({len(buckets[start])} nodes)",
    )
    st.caption(
        f"This graph has {len(snapshot.nodes):,} nodes: it is drawn one box per order bucket so your browser "
        "stays responsive. Pick buckets above to see their nodes."
    )
    if sum(len(buckets[b]) for b in chosen) > COLLAPSE_LIMIT:
        st.warning(f"Those buckets hold more than {COLLAPSE_LIMIT} nodes together: pick fewer to expand them.")
        return frozenset()
    return frozenset(chosen)


def snapshot_graph(
    snapshot: GraphSnapshot, names: dict[int, str], caption: str, overlay: Overlay | None = None, key: str = "graph"
) -> str:
    """Draw a snapshot with its legend; above the collapse limit, one box per order bucket, with a
    picker to expand some buckets. Returns the DOT text drawn."""
    expanded = bucket_picker(snapshot, key)
    dot = graph_dot(snapshot, names, overlay, presenter=presenter_mode(), expanded_orders=expanded)
    graph_with_legend(dot, caption, cross_check=bool(overlay and overlay.verdicts))
    return dot
