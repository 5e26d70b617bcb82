"""Tables: plain rows with column labels, the `Gradients` container, the tape, what a button did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import pandas as pd
import streamlit as st

from autodiff import GraphSnapshot
from autodiff.stage.format import format_bytes, format_shape, format_values
from autodiff.stage.naming import node_name
from autodiff.stage.narration import short_names
from course.labs import HolderGroup, Outcome

# Verdict cells are tinted, not painted: 18% of a green or red over the theme's own background, under the theme's
# own text colour (about 11.7:1 in both themes), so a dark page has no glaring light cells. The ✓ or ✗ word says
# the verdict too: colour is never its only carrier.
VERDICT_TINTS = {"✓": "rgba(43, 138, 62, 0.18)", "✗": "rgba(224, 49, 49, 0.18)"}


SEED_NOTE = (
    "The seed's Rust program prints these values as `Some([5.0, 7.0])` and `None`: Rust's `Option`, either some "
    "value or none. In Python, `grad(grads)` returns the gradient, or `None` when the container has no entry."
)


TABLES_KEPT = 256  # tables whose element the server keeps: every lesson's on both backends, and some Playground runs'


# Drawn once per content on the server, then replayed (Streamlit keeps the element a cached function drew): the
# DataFrame, its Arrow bytes and a Styler's CSS cost 1-12 ms a table on every page open, the same for every student.
@st.cache_data(show_spinner=False, max_entries=TABLES_KEPT)
def data_table(rows: Sequence[Mapping[str, object]], verdict_columns: Sequence[str] = ()) -> None:
    """A small table with column labels: static HTML, light to redraw and readable on a projector. Cells of
    `verdict_columns` that start with ✓ or ✗ are tinted green or red."""
    frame = pd.DataFrame(rows)
    if verdict_columns:
        frame = frame.style.map(_verdict_tint, subset=list(verdict_columns))
    st.table(frame, hide_index=True, border="horizontal")


def _verdict_tint(value: object) -> str:
    tint = VERDICT_TINTS.get(str(value)[:1])
    return f"background-color: {tint}" if tint else ""


HOLDER_STATES = {
    "abandoned": "abandoned: no live tensor needs it, yet it holds memory until a backward's sweep",
    "live": "waiting for a backward: a live tensor (its loss) still needs it",
    "consumed": "its backward ran: nothing held",
    "freed": "freed by a backward's sweep without running",
    "mixed": "partly run, partly waiting",
}


def holder_rows(groups: list[HolderGroup]) -> list[dict[str, object]]:
    """Memory growth's "what holds memory": a row per run of passes holding the same, with counts and bytes."""
    return [
        {
            "Forward passes": f"{g.first}" if g.graphs == 1 else f"{g.first}–{g.last} ({g.graphs} graphs)",
            "Each graph's steps": ", ".join(g.ops),
            "State": HOLDER_STATES.get(g.status, g.status),
            "Holds": "nothing"
            if not g.held_bytes
            else format_bytes(g.held_bytes * g.graphs)
            + (f" ({format_bytes(g.held_bytes)} each)" if g.graphs > 1 else ""),
        }
        for g in groups
    ]


def gradients_table(
    container: dict[int, np.ndarray], names: dict[int, str], kept: set[int], replaced: AbstractSet[int] = frozenset()
) -> None:
    """The `Gradients` container after backward: one row per entry, its values apart from its shape, and
    why it is there (backward has finished, so no entry is waiting for a step)."""
    if not container:
        st.info("The Gradients container is empty.")
        return

    def why(node_id: int) -> str:
        if node_id in replaced:
            return "put in with grad_replace" + ("" if node_id in kept else "; no step is left to consume it")
        return "kept by its step (a leaf that asked for its gradient)" if node_id in kept else "left by backward"

    rows = [
        {
            "Node": node_name(node_id, names),
            "Gradient": format_values(value),
            "Shape": format_shape(np.shape(value)),
            "Why it is there": why(node_id),
        }
        for node_id, value in sorted(container.items())
    ]
    data_table(rows)


TAPE_ROWS = 10  # a longer tape shows its first and last buckets, with the ones between summarised in one row
CELL_NAMES = 6  # a bucket with more steps names its first ones and says how many


def tape_table(buckets: tuple[tuple[int, ...], ...], snapshot: GraphSnapshot, names: dict[int, str]) -> None:
    """The tape: one row per order bucket, highest order first (the order they run in); a long tape summarised
    ("orders 290 down to 6: 285 buckets, 300 steps")."""
    orders = [order for order in range(len(buckets) - 1, -1, -1) if buckets[order]]
    half = TAPE_ROWS // 2
    hidden = orders[half:-half] if len(orders) > TAPE_ROWS else []

    called = short_names(snapshot.nodes, names)  # the graph's names: `h + x·3`, never `NodeId(4)` alone

    def row(order: int) -> dict[str, object]:
        steps = buckets[order]
        listed = ", ".join(node_name(i, called) for i in steps[:CELL_NAMES])
        ops = dict.fromkeys(snapshot.node(i).op for i in steps)
        return {
            "Order": str(order),
            "Steps (in tape order)": listed if len(steps) <= CELL_NAMES else f"{listed}, … ({len(steps)} steps)",
            "Ops": ", ".join(ops),
        }

    rows = [row(order) for order in orders[:half]] if hidden else [row(order) for order in orders]
    if hidden:
        steps = sum(len(buckets[order]) for order in hidden)
        ops = dict.fromkeys(snapshot.node(i).op for order in hidden for i in buckets[order])
        rows.append(
            {
                "Order": f"{hidden[0]} down to {hidden[-1]}",
                "Steps (in tape order)": f"{len(hidden)} buckets, {steps} steps",
                "Ops": ", ".join(ops),
            }
        )
        rows += [row(order) for order in orders[-half:]]
    data_table(rows)


def outcome_message(outcome: Outcome) -> None:
    """A button's result: success with the value, or the refusal said once, in words (never a traceback, nor the
    engine's message next to the lesson's account of it)."""
    if outcome.ok:
        done = f"`{outcome.action}` ran; then `{outcome.query}`" if outcome.query else f"`{outcome.action}`"
        st.success(f"{done} → `{outcome.result}`\n\n{outcome.explanation}")
    else:
        st.error(f"`{outcome.action}` was refused.\n\n{outcome.explanation}")


def outcome_log(log: list[Outcome]) -> None:
    if not log:
        return
    rows = [{"#": i + 1, "Action": o.action, "Result": _result(o), "Why": o.explanation} for i, o in enumerate(log)]
    data_table(rows)


def _result(outcome: Outcome) -> str:
    if not outcome.ok:
        return "refused"
    return f"{outcome.query} → {outcome.result}" if outcome.query else outcome.result
