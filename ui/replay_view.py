"""The replay of a recorded backward: player, graph, current step and `Gradients` container.
Shared by the Backward traversal and Playground pages."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from autodiff import BackwardRecorder, GraphSnapshot, Requirement
from autodiff.trace import StepStarted, TapeBuilt
from course.naming import node_name

from .exercise import predict_step, score_caption
from .format import format_values
from .graph_dot import replay_overlay
from .graph_view import snapshot_graph
from .player import advance_player, event_player, play_interval
from .replay_state import ReplayState, describe, replay_state
from .state import presenter_mode
from .tables import data_table, gradients_table, tape_table


def tape_view(before: GraphSnapshot, recorder: BackwardRecorder, names: dict[int, str]) -> None:
    tape = next(e for e in recorder.events if isinstance(e, TapeBuilt))
    tape_table(tape.buckets, before, names)
    st.caption(
        "Steps not reachable from the loss (the untracked inputs) are not on the tape. "
        "Within a bucket, steps run in the order the traversal found them."
    )


def replay_view(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    key: str,
    file_stem: str,
    on_index: Callable[[int], None] | None = None,
    exercise: bool = False,
) -> None:
    """The player over `recorder`'s events, redrawn on its own (a fragment) while it plays. In
    `exercise` mode, each step's start asks the student to predict what it sends before the reveal."""
    total = len(recorder.events)
    leaves = {int(n.id) for n in before.nodes if n.requirement is Requirement.Grad}

    @st.fragment(run_every=play_interval(key))
    def replay() -> None:
        advance_player(key, total)
        index = event_player(total, key)
        if on_index is not None:
            on_index(index)
        state = replay_state(recorder, index)
        st.markdown(f"**Event {index + 1} of {total}.** {describe(state.event, names)}")
        dot = snapshot_graph(
            before,
            names,
            "Forward graph: from the leaves (inputs) to the loss. Gradients flow back from the loss to the leaves.",
            replay_overlay(state),
            key=f"{key}_graph",
        )
        if exercise:
            predict_step(recorder, index, state.upstream, names, key)
            score_caption()
        step_column, container_column = st.columns([1, 1])
        with step_column:
            st.markdown("**The current step**")
            _current_step(state, names)
        with container_column:
            st.markdown("**The `Gradients` container** after this event")
            gradients_table(state.container, names, leaves)
        if not presenter_mode():
            left, right = st.columns(2)
            left.download_button(
                "Download the graph (DOT)", dot, file_name=f"{file_stem}-event{index + 1}.dot", mime="text/vnd.graphviz"
            )
            right.download_button(
                "Download the event trace (JSON)",
                recorder.export_json,  # built only when the button is pressed, and capped in size
                file_name=f"{file_stem}-trace.json",
                mime="application/json",
            )

    replay()


def _current_step(state: ReplayState, names: dict[int, str]) -> None:
    step: StepStarted | None = state.current
    if step is None:
        st.info("No step is running at this event.")
        return
    st.markdown(
        f"{node_name(step.node_id, names)} — `{step.op}`, order {step.order}. "
        f"Upstream gradient (what its node received): `{format_values(state.upstream)}`"
    )
    sent: dict[int, list] = {}
    for flow in state.flows:
        sent.setdefault(flow.target, []).append(flow)
    rows = []
    for position, (parent, rule) in enumerate(zip(step.parents, step.rules, strict=True)):
        flows = sent.get(parent, [])
        flow = flows.pop(0) if flows else None
        rows.append(
            {
                "Input": f"{position + 1}. {node_name(parent, names)}",
                "Local rule": rule,
                "Value sent": "not yet" if flow is None else format_values(flow.value),
                "Accumulated": "" if flow is None else ("yes: added to an entry" if flow.accumulated else "no"),
            }
        )
    if rows:
        data_table(rows)
    else:
        st.caption("A leaf's step only consumes its gradient: for a Grad leaf, the entry is kept.")
