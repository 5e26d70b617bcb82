import inspect

import streamlit as st

from autodiff.stage.graph_dot import Overlay, held_gradients
from course.labs import LOSSES, TapeLab, backward_code
from course.programs import PROGRAMS, shared_losses
from ui import press
from ui.code import code_block
from ui.graph_view import snapshot_graph
from ui.navigation import lesson_intro
from ui.replay_view import replay_view
from ui.state import session_lab
from ui.tables import outcome_log, outcome_message

lesson_intro(
    "Tape consumption",
    "Each step runs **once**: when backward runs it, the step is removed from the server and its saved "
    "tensors are freed. The server is the part of the engine that keeps the tape: the steps still waiting for a "
    "backward. PyTorch can keep a step that ran: `loss.backward(retain_graph=True)` keeps every step and its saved "
    "tensors for another backward. Burn has no `retain_graph`, so a second backward that would pass through a "
    "consumed step is **refused** before anything changes. Leaves (parameters) can be reused freely: build a new "
    "forward pass, or add losses together and run a single backward.",
)

lab = session_lab("tape_lab", TapeLab)

st.subheader("1. Backward twice on the same loss")
code_block(PROGRAMS["seed"].source + '\nloss = seed_program(ad)["loss"]\nloss.backward()\nloss.backward()  # again?')
if press.button("loss.backward()", "backward_loss"):
    outcome_message(lab.backward("loss"))  # the result right below the button that made it

st.subheader("2. Two losses over one shared subgraph")
code_block(inspect.getsource(shared_losses) + "\nlosses = shared_losses(x)  # shared, l1, l2\nl3 = (x * 4.0).sum()")
st.markdown("Run the backward passes in any order. `(l1 + l2).backward()` builds the sum of the two losses first.")
columns = st.columns(len(LOSSES))
pressed = [
    name
    for column, name in zip(columns, LOSSES, strict=True)
    if press.button(backward_code(name), f"backward_{name}", where=column, width="stretch")
]
for name in pressed:
    outcome_message(lab.backward(name))

st.subheader("3. detach()")
st.markdown("`detach()` makes a new untracked leaf with the same values: gradients stop there.")
if press.button("(shared.detach() * x).sum().backward()", "detach"):
    outcome_message(lab.detach_demo())

st.subheader("The graph now")
snapshot_graph(
    lab.ad.snapshot(),
    lab.names,
    "The device's whole graph now. Consumed steps are dashed; a refused backward marks the consumed step it hit.",
    Overlay(refused=lab.refused_at, gradients=held_gradients(lab.last_gradients())),
)
if lab.last_backward is not None:
    code, before, recorder = lab.last_backward
    st.subheader("Replay of the last backward that ran")
    refused_since = lab.log and not lab.log[-1].ok
    st.markdown(
        f"`{code}`"
        + (
            " (the refused backward after it changed nothing, so there is nothing of it to replay)"
            if refused_since
            else ""
        )
    )
    replay_view(before, recorder, lab.names, "tape_replay", file_stem="tape-consumption")
if lab.log:
    st.markdown("**What you did**")
    outcome_log(lab.log)
if press.button("Start over", "tape_reset"):
    del st.session_state["tape_lab"]
    st.rerun()
