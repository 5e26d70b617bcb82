import streamlit as st

from autodiff import Requirement
from autodiff.trace import TapeBuilt
from ui.format import format_values
from ui.graph import replay_overlay
from ui.programs import PROGRAMS, run_program
from ui.replay import describe, node_name, replay_state
from ui.state import current_backend, parse_int, presenter_mode, publish, restore_from_url
from ui.widgets import (
    advance_player,
    data_table,
    gradients_table,
    lesson_intro,
    play_interval,
    snapshot_graph,
    step_player,
)
from ui.widgets import tape_table as draw_tape

PLAYER = "replay"

lesson_intro(
    "Backward traversal",
    "The forward pass registered one **step** per operation. `backward()` collects the steps reachable from "
    "the loss, puts them in **buckets by order** (a node's order is one more than its highest input's, so a "
    "bucket only depends on higher ones) and runs the buckets from the highest order down. Each step takes "
    "the gradient waiting for its node and sends one gradient to each tracked input, by its local rule.",
)

key = restore_from_url("traversal_program", "program", lambda v: v if v in PROGRAMS else None, "seed")
restore_from_url(f"{PLAYER}_index", "step", parse_int, 0)


def choose_program() -> None:
    st.session_state.traversal_program = st.session_state.traversal_program_widget
    st.session_state[f"{PLAYER}_index"] = 0
    st.session_state[f"{PLAYER}_playing"] = False


st.session_state.traversal_program_widget = key
st.selectbox(
    "Program",
    list(PROGRAMS),
    format_func=lambda k: PROGRAMS[k].title,
    key="traversal_program_widget",
    on_change=choose_program,
)
program = PROGRAMS[key]
run = st.session_state.get("traversal_run")
if run is None or run.program.key != key or run.backend != current_backend():
    run = st.session_state.traversal_run = run_program(key, current_backend())
names = run.names
events = run.recorder.events
total = len(events)

code_column, tape_column = st.columns([1, 1])
with code_column:
    st.markdown(f"**The program** — {program.summary}")
    st.code(program.source, language="python", wrap_lines=True)
with tape_column:
    st.markdown("**The tape**, bucketed by order (runs top to bottom)")
    tape = next(e for e in events if isinstance(e, TapeBuilt))
    draw_tape(tape.buckets, run.before, names)
    st.caption(
        "Steps not reachable from the loss (the untracked inputs) are not on the tape. "
        "Within a bucket, steps run in the order the traversal found them."
    )

st.subheader("Replay")
leaves = {int(n.id) for n in run.before.nodes if n.requirement is Requirement.Grad}


@st.fragment(run_every=play_interval(PLAYER))
def replay() -> None:
    advance_player(PLAYER, total)
    index = step_player(total, PLAYER)
    publish(program=key, step=index)
    state = replay_state(run.recorder, index)
    st.markdown(f"**Event {index + 1} of {total}.** {describe(state.event, names)}")
    dot = snapshot_graph(
        run.before,
        names,
        "Forward graph: leaves on the left, the loss on the right. Gradients flow right to left.",
        replay_overlay(state),
        key="traversal_graph",
    )

    step_column, container_column = st.columns([1, 1])
    with step_column:
        st.markdown("**The current step**")
        if state.current is None:
            st.info("No step is running at this event.")
        else:
            step = state.current
            st.markdown(
                f"{node_name(step.node_id, names)} — `{step.op}`, order {step.order}. "
                f"Upstream gradient (what its node received): `{format_values(state.upstream)}`"
            )
            sent = {}
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
    with container_column:
        st.markdown("**The `Gradients` container** after this event")
        gradients_table(state.container, names, leaves)

    if not presenter_mode():
        left, right = st.columns(2)
        left.download_button(
            "Download the graph (DOT)", dot, file_name=f"{key}-step{index}.dot", mime="text/vnd.graphviz"
        )
        right.download_button(
            "Download the event trace (JSON)", run.recorder.to_json(), file_name=f"{key}-trace.json",
            mime="application/json",
        )  # fmt: skip


replay()
