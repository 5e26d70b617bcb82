import streamlit as st

from course.programs import PROGRAMS, record_program
from ui.navigation import lesson_intro
from ui.replay_view import replay_view, tape_view
from ui.state import current_backend, parse_event_number, publish, restore_from_url

PLAYER = "replay"

lesson_intro(
    "Backward traversal",
    "The forward pass registered one **step** per operation. `backward()` collects the steps reachable from "
    "the loss, puts them in **buckets by order** (a node's order is one more than its highest input's, so a "
    "bucket only depends on higher ones) and runs the buckets from the highest order down. Each step takes "
    "the gradient waiting for its node and sends one gradient to each tracked input, by its local rule.",
)

key = restore_from_url("traversal_program", "program", lambda v: v if v in PROGRAMS else None, "seed")
restore_from_url(f"{PLAYER}_index", "event", parse_event_number, 0)


def choose_program() -> None:
    st.session_state.traversal_program = st.session_state.traversal_program_widget
    st.session_state[f"{PLAYER}_index"] = 0


st.session_state.traversal_program_widget = key
left, right = st.columns([2, 3], vertical_alignment="bottom")
left.selectbox(
    "Program",
    list(PROGRAMS),
    format_func=lambda k: PROGRAMS[k].title,
    key="traversal_program_widget",
    on_change=choose_program,
)
exercise = right.toggle(
    "Exercise: predict each step's gradients before they are revealed",
    key="traversal_exercise",
    help="Stop at a step's start (it shows in orange) and enter what it will send to each input.",
)
program = PROGRAMS[key]
run = st.session_state.get("traversal_run")
if run is None or run.program.key != key or run.backend != current_backend():
    run = st.session_state.traversal_run = record_program(key, current_backend())

publish(program=key)
replay_view(
    run.before,
    run.recorder,
    run.names,
    PLAYER,
    file_stem=key,
    link="event",  # the stage writes the event it stops at into the address: a press costs the server nothing
    exercise=exercise,
    shared=("traversal", key, run.backend),  # the same recording for every student
    source=program.source,
    lines=run.lines,
)
st.caption(
    f"**The program**, in the stage with its running line lit: {program.summary} Click a line to see the nodes it made."
)

st.markdown("**The tape**, bucketed by order (runs top to bottom)")
tape_view(run.before, run.recorder, run.names)
