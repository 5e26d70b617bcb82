import inspect
import time

import streamlit as st

from autodiff import NodeStatus
from autodiff.stage.format import format_bytes
from autodiff.stage.naming import node_names
from autodiff.stage.narration import short_names
from course.labs import MemoryLab, last_pass, memory_holders
from course.programs import memory_forward
from course.scenarios import abandoned_graphs_experiment
from ui import press
from ui.charts import memory_charts
from ui.code import code_block
from ui.graph_view import snapshot_graph
from ui.memory_timeline import memory_timeline
from ui.navigation import lesson_intro
from ui.state import current_backend, presenter_mode
from ui.tables import data_table, holder_rows

lesson_intro(
    "Memory growth",
    "Each forward pass on an autodiff device registers steps that **save tensors** for backward "
    "(here `exp`'s output, kept by `mul`, and `mul`'s output, kept by `matmul`: 2 tensors per pass). "
    "Dropping the loss does **not** free them: nothing frees graph memory in Burn except a `backward()`, "
    "which ends with a sweep of every graph no live tensor needs. The same loop on `x.without_autodiff()` "
    "records nothing and stays flat.",
)
code_block(inspect.getsource(memory_forward))

RUNNING, STARTED = "memory_running", "memory_started"
TICK_S = 0.3  # one forward pass per tick of the live fragment
SIZES = [128, 256, 512]
controls = st.columns([1, 1, 1.3, 1])
size = controls[0].selectbox("Tensor size (n × n)", SIZES, index=2, key="memory_size")
iterations = controls[1].slider("Forward passes", 5, 40, 20, key="memory_iterations")
mode = controls[2].radio("Mode", ["autodiff", "without_autodiff()"], horizontal=True, key="memory_mode")
if press.button("Start", "memory_start", where=controls[3], type="primary", width="stretch"):
    st.session_state.memory_lab = MemoryLab(size, iterations, autodiff=mode == "autodiff", backend=current_backend())
    st.session_state[RUNNING] = True
    st.session_state[STARTED] = time.monotonic()
    st.rerun()


@st.fragment(run_every=TICK_S if st.session_state.get(RUNNING) else None)
def live_experiment() -> None:
    lab: MemoryLab | None = st.session_state.get("memory_lab")
    if lab is None:
        st.info("Choose a size and a number of passes, then press **Start**.")
        return
    if st.session_state.get(RUNNING):
        if lab.finished:  # the tick after the last pass: the whole page once more, without the timer
            st.session_state[RUNNING] = False
            st.rerun()
        lab.catch_up(time.monotonic() - st.session_state[STARTED], TICK_S)
    if lab.refusal:
        st.error(f"The experiment stopped after {lab.done} forward passes: {lab.refusal}")
    usage = lab.history[-1].usage
    snapshot = lab.ad.snapshot()
    abandoned = [n for n in snapshot.nodes if n.status is NodeStatus.ABANDONED]
    mode_text = "autodiff" if lab.autodiff else "without_autodiff()"
    backend_bytes = lab.history[-1].backend_bytes
    metrics = st.columns(5 if backend_bytes is not None else 4)
    metrics[0].metric("Forward passes", f"{lab.done} / {lab.iterations}")
    metrics[1].metric("Memory in use", format_bytes(usage.bytes_in_use))
    metrics[2].metric("Live buffers", f"{usage.allocations:,}")
    metrics[3].metric(
        "Abandoned steps", f"{len(abandoned):,}", help="Steps no live tensor needs, still holding memory."
    )
    if backend_bytes is not None:
        counters = lab.ad.backend_memory()
        st.caption(
            f"MLX's own counters (whole process): active {format_bytes(counters['active'])}, peak "
            f"{format_bytes(counters['peak'])}. MLX is lazy, but this engine evaluates every MLX op as soon as "
            "it runs (as Burn executes each op), so the engine's count is memory MLX has really allocated."
        )
        metrics[4].metric(
            "MLX active memory",
            format_bytes(backend_bytes),
            help="MLX's own counter (mx.get_active_memory), for the whole process. The engine evaluates each "
            "MLX op at once, so it follows the engine's accounting.",
        )
    memory_charts(lab.history, lab.iterations)
    download = None if st.session_state.get(RUNNING) else lab.memory_snapshot()  # the file, once the run stops
    called = short_names(snapshot.nodes, node_names({"x": lab.x}))  # a swept graph's nodes keep their records
    memory_timeline(
        lab.memory_history,
        "Active memory, one buffer a band",
        download,
        "memory-growth",
        lab.pass_starts,
        program=[memory_forward],
        names=called,
    )
    st.caption(
        f"Backend: {lab.backend}. Mode: {mode_text}, x is {lab.size} × {lab.size} float32 "
        f"({format_bytes(lab.size * lab.size * 4)}). "
        + (
            "Each pass adds the two tensors its steps saved."
            if lab.autodiff
            else "The inner device registers no steps: temporaries are freed as soon as each pass ends."
        )
    )
    if lab.autodiff:
        st.button(
            "Run one backward now",
            key="memory_backward",
            disabled=not lab.finished,
            on_click=lab.backward_now,
            help="One more forward pass, then backward: its sweep frees every abandoned graph.",
        )
    if lab.autodiff and not presenter_mode() and not st.session_state.get(RUNNING):  # drawn once, when it stops
        st.markdown("**What holds memory**, one row per run of forward passes whose graphs hold the same:")
        data_table(holder_rows(memory_holders(snapshot)))
        snapshot_graph(
            last_pass(snapshot),
            node_names({"x": lab.x}),
            "The newest pass's graph: orange boxes are abandoned steps. *saves* counts every tensor a step saved; "
            "*holds* only what no live tensor shares, so the holds add up to what the graph costs.",
            key="memory_graph",
        )
    elif lab.autodiff and not presenter_mode():
        st.caption("The graph of what holds memory is drawn when the run stops.")


live_experiment()

st.subheader("The second experiment: what frees abandoned graphs?")
st.markdown(
    "Five graphs are built and dropped; then an untracked operation and a read of its value; then one "
    "backward of an unrelated two-element loss. Only the backward frees anything."
)
EXPLANATIONS = [
    "Each graph keeps x, exp(x) and exp(x)·x alive in its steps: 3 tensors per graph.",
    "An untracked op and reading its value register no tracked step and never sweep: nothing is freed.",
    "Same again: reads and untracked work never free graph memory.",
    "A backward, even of an unrelated loss, ends with a sweep that frees every abandoned graph.",
]
if press.button("Run the abandoned-graphs experiment", "abandoned_run"):
    rows = list(abandoned_graphs_experiment(size=st.session_state.get("memory_size", 512)))
    data_table(
        [
            {
                "Moment": label,
                "In use": format_bytes(usage.bytes_in_use) if usage.bytes_in_use else "nothing",
                "Live buffers": usage.allocations,
                "Why": why,
            }
            for (label, usage), why in zip(rows, EXPLANATIONS, strict=True)
        ]
    )
