"""A graph that does not replay (a snapshot as it is) on a page: drawn by the stage, like every graph (a big one
folded into the program's parts, which the stage opens in place)."""

from __future__ import annotations

import streamlit as st

from autodiff import GraphSnapshot
from autodiff.stage import static_payload
from autodiff.stage.graph_dot import Overlay

from .stage import stage
from .state import presenter_mode


def snapshot_graph(
    snapshot: GraphSnapshot, names: dict[int, str], caption: str, overlay: Overlay | None = None, key: str = "graph"
) -> None:
    """Draw a snapshot on the stage (no player): each node's name, value and state, and a legend of the states
    shown."""
    payload = static_payload(snapshot, names, overlay, presenter_mode())
    stage(payload, key=f"{key}_stage_{payload['signature']}")
    st.caption(caption)
