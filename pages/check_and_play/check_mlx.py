import streamlit as st

from autodiff.device import mlx_unavailable_reason
from autodiff.stage.format import format_number, format_values
from autodiff.stage.graph_dot import Overlay, held_gradients
from autodiff.stage.naming import node_name
from autodiff.stage.narration import short_names
from course.labs import cross_checked_program
from course.programs import PROGRAMS
from ui.graph_view import snapshot_graph
from ui.navigation import lesson_intro
from ui.state import current_backend, shared_result
from ui.tables import data_table

lesson_intro(
    "Check against MLX",
    "Are the engine's gradients right? This page recomputes the program from its inputs with each op's "
    "forward only, then asks two independent judges: **MLX's own autodiff** (`mx.grad` for every node, "
    "`mx.vjp` for each step's local rule) and **central finite differences** in float64 on numpy. "
    "A node passes when the engine agrees with MLX within the stated tolerance (and with finite "
    "differences, ten times looser, where the node is small enough to compute them).",
)

missing = mlx_unavailable_reason()
if missing:
    st.error(f"This check needs MLX, which cannot be used here. {missing}")
    st.stop()

key = st.selectbox("Program", list(PROGRAMS), format_func=lambda k: PROGRAMS[k].title, key="check_program")
backend = current_backend()
checked = shared_result(cross_checked_program, key, backend)  # the same for every student: once per server
result = checked.check

st.caption(
    f"Engine backend: {backend}. Tolerance: |engine − MLX| ≤ {result.atol:g} + {result.rtol:g}·|MLX| for every "
    "element. MLX evaluates lazily; the engine forces each op as it runs, so nothing here waits on MLX."
)
if result.ok:
    st.success(f"All {len(result.nodes)} gradients agree, and every step's local rule matches `mx.vjp`.")
else:
    culprits = ", ".join(node_name(i, short_names(checked.before.nodes, checked.names)) for i in result.wrong_rules)
    culprits = culprits or "none found"
    st.error(f"Some gradients disagree. Backward rules that differ from `mx.vjp`: {culprits}.")


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("✓ agrees" if ok else "✗ differs")


called = short_names(checked.before.nodes, checked.names)  # as the graph names them: a variable, else an expression
verdicts = [
    {
        "Node": node_name(n.node_id, called),
        "End to end": verdict(n.ok),
        "Local rule": verdict(n.local_ok),
        "Op": n.op,
    }
    for n in result.nodes
]
numbers = [  # apart from the verdicts: nine columns do not fit a phone, four and six do
    {
        "Gradient of": called[int(n.node_id)],
        "Engine": format_values(n.engine),
        "MLX": format_values(n.mlx),
        "Finite differences": "too large" if n.numeric is None else format_values(n.numeric),
        "Max abs error": format_number(n.max_abs_error),
        "Max rel error": format_number(n.max_rel_error),
    }
    for n in result.nodes
]


data_table(verdicts, verdict_columns=["End to end", "Local rule"])
st.markdown("**The numbers behind each verdict**")
data_table(numbers)
snapshot_graph(
    checked.before,
    checked.names,
    "A thick solid border: the gradient reaching this node agrees with MLX and finite differences. A thick dashed "
    "one: it differs. Untracked inputs are not checked.",
    Overlay(
        verdicts={int(n.node_id): n.ok and n.local_ok is not False for n in result.nodes},
        gradients=held_gradients(checked.gradients),
    ),
    key="check_graph",
)
