"""A graph that does not replay (a snapshot as it is) on a page: drawn by the stage, like every graph, with a picker
for the order buckets of a large one."""

from __future__ import annotations

import streamlit as st

from autodiff import GraphSnapshot
from autodiff.stage import static_payload
from autodiff.stage.graph_dot import COLLAPSE_LIMIT, Overlay, bucket_label, order_buckets

from .stage import stage
from .state import presenter_mode


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
) -> None:
    """Draw a snapshot on the stage (no player): each node's name, value and state, and a legend of the states
    shown. Above the collapse limit, one box per order bucket, with a picker to expand some buckets."""
    expanded = bucket_picker(snapshot, key)
    payload = static_payload(snapshot, names, overlay, presenter_mode(), expanded)
    stage(payload, key=f"{key}_stage_{payload['signature']}")
    st.caption(caption)
