import math

import streamlit as st

from autodiff.stage.graph_dot import Overlay, held_gradients
from course.labs import ConsumptionLab
from course.programs import PROGRAMS
from ui import press
from ui.code import code_block
from ui.exercise import ANSWER_CHARS, parse_numbers, predict_table
from ui.graph_view import snapshot_graph
from ui.navigation import lesson_intro
from ui.state import session_lab
from ui.tables import SEED_NOTE, data_table, gradients_table, outcome_log, outcome_message

lesson_intro(
    "Gradient consumption",
    "`backward()` returns a `Gradients` container: a map from node to gradient. While backward runs, every "
    "step **consumes** the gradient of its own node. For an op output (Burn calls it `GradInBackward`: its "
    "gradient lives only during backward) that removes the entry; for a leaf that asked for its gradient with "
    "`require_grad()` (Burn's `Grad`) the entry is **kept**. So after backward only those leaves have "
    "gradients, and a leaf the loss never used has none.",
)

lab = session_lab("consumption_lab", ConsumptionLab)

code_block(PROGRAMS["seed"].source + '\ngrads = seed_program(ad)["loss"].backward()\n')
exercise = st.toggle("Exercise: predict each value before the table is revealed", key="consumption_exercise")
revealed = not exercise or predict_table([(r.call, r.returns, r.reason) for r in lab.rows], "consumption_predict")
if not revealed:
    st.info("Check your predictions to see the table and the rest of the lesson.")
    st.stop()
st.markdown("**The seed's table**, computed live on your device:")
data_table([{"Python": r.call, "Returns": r.returns, "Why": r.reason} for r in lab.rows])
st.caption(SEED_NOTE)

st.subheader("Ask the container yourself")
st.markdown(
    "A fresh run of the same program and one `backward()`: its `Gradients` container is yours to query. "
    "(The table above ended with `x.grad_remove`; this one starts whole.)"
)
names = list(lab.tensors)
choice = st.radio("Tensor", names, horizontal=True, key="consumption_tensor")
cols = st.columns([1, 1, 2, 1], vertical_alignment="bottom")  # the buttons in line with the box, under its label
outcome = None
if press.button("grad()", "consumption_grad", where=cols[0], width="stretch"):
    outcome = lab.grad(choice)
if press.button("grad_remove()", "consumption_remove", where=cols[1], width="stretch"):
    outcome = lab.grad_remove(choice)
shape = lab.tensors[choice].dims()
raw = cols[2].text_input(
    "New gradient for `grad_replace()`: numbers separated by commas",
    value=", ".join(["1.0"] * math.prod(shape)),
    help=f"{math.prod(shape)} numbers, as many as {choice} has values. `grad_replace()` puts them in the container "
    f"as {choice}'s gradient, in place of any entry it had.",
    max_chars=ANSWER_CHARS,
)
if press.button("grad_replace()", "consumption_replace", where=cols[3], width="stretch"):
    values = parse_numbers(raw)  # None past ANSWER_CHARS: refused before it is split
    if values is None:
        st.error(
            f"The new gradient must be numbers separated by commas, for example `1.0, 2.0` "
            f"(at most {ANSWER_CHARS:,} characters)."
        )
    else:
        outcome = lab.grad_replace(choice, values)
if outcome is not None:
    outcome_message(outcome)

st.markdown("**The `Gradients` container now**")
gradients_table(lab.container(), lab.names, lab.kept_leaves(), lab.replaced_ids())
st.markdown("**Why each tensor has (or lacks) a gradient now**")
data_table([{"Tensor": n, "Why": lab.reason(n)} for n in names])

snapshot_graph(
    lab.ad.snapshot(),
    lab.names,
    "After backward every step on the loss's path is consumed (dashed). `unused` was never on the path: it has no "
    "gradient, as the tables say.",
    Overlay(gradients=held_gradients(lab.container())),
)
if lab.log:
    st.markdown("**What you did**")
    outcome_log(lab.log)
if press.button("Start over", "consumption_reset"):
    del st.session_state["consumption_lab"]
    st.rerun()
