import numpy as np
import pandas as pd
import streamlit as st

from autodiff.trace import BackwardFinished, Recomputed, SavedStateFreed
from ui.format import format_bytes
from ui.programs import CHECKPOINTING_PROGRAMS, run_program
from ui.replay_view import replay_view
from ui.state import current_backend
from ui.widgets import data_table, lesson_intro

lesson_intro(
    "Checkpointing",
    "Backward needs some forward values (an `exp` needs its input, a `tanh` its output). Keeping them all "
    "costs memory. Burn's **balanced checkpointing** keeps the outputs of compute-bound ops (matmul, sums) "
    "and, for memory-bound elementwise ops, only a *recipe*: during backward such an output is recomputed "
    "once from the nearest kept ancestors, and freed after its last use. Less memory held, a little more "
    "compute, and exactly the same gradients.",
)

key = st.selectbox("Program", list(CHECKPOINTING_PROGRAMS), index=len(CHECKPOINTING_PROGRAMS) - 1,
                   format_func=lambda k: CHECKPOINTING_PROGRAMS[k].title, key="checkpointing_program")  # fmt: skip
st.code(CHECKPOINTING_PROGRAMS[key].source, language="python")
backend = current_backend()
cache_key = f"checkpointing_{key}_{backend}"
if cache_key not in st.session_state:
    st.session_state[cache_key] = {mode: run_program(key, backend, mode) for mode in ("none", "balanced")}
runs = st.session_state[cache_key]

rows, curves = [], []
for mode, label in (("none", "No checkpointing (default)"), ("balanced", "Balanced checkpointing")):
    run = runs[mode]
    events = run.recorder.events
    finished = next(e for e in events if isinstance(e, BackwardFinished))
    rows.append(
        {
            "Strategy": label,
            "Held only by the graph": format_bytes(sum(n.held_bytes for n in run.before.nodes)),
            "Device memory before backward": format_bytes(run.before.memory.bytes_in_use),
            "Peak during backward": format_bytes(finished.peak_bytes),
            "Ops recomputed": sum(isinstance(e, Recomputed) for e in events),
        }
    )
    steps = [e for e in events if isinstance(e, SavedStateFreed)]
    curves += [{"Step": k, "Strategy": label, "KiB in use": e.memory_after.bytes_in_use / 1024} for k, e in
               enumerate(steps, start=1)]  # fmt: skip
data_table(rows)
same = all(
    np.array_equal(runs["none"].tensors[n].grad(runs["none"].grads).numpy(),
                   runs["balanced"].tensors[n].grad(runs["balanced"].grads).numpy())
    for n, t in runs["none"].tensors.items() if t.is_require_grad
)  # fmt: skip
if same:
    st.success("The gradients are identical, bit for bit, with and without checkpointing.")
else:
    st.error("The gradients differ between the two strategies: this is a bug, please report it.")

st.subheader("Memory within the backward, after each step")
st.vega_lite_chart(
    pd.DataFrame(curves),
    {
        "height": 280,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "Step", "type": "quantitative"},
            "y": {"field": "KiB in use", "type": "quantitative"},
            "color": {"field": "Strategy", "type": "nominal", "scale": {"range": ["#e8590c", "#1971c2"]},
                      "legend": {"orient": "bottom", "title": None}},
        },
    },
    width="stretch",
)  # fmt: skip
st.caption(
    "Each point is the device's memory after one step ran and dropped its saved state. With checkpointing "
    "the curve starts lower (less was saved); recomputed values appear just before the steps that need them."
)

st.subheader("Replay with checkpointing")
st.markdown("The replay shows each recomputation as its own event, just before the step that needs it.")
balanced = runs["balanced"]
replay_view(balanced.before, balanced.recorder, balanced.names, "checkpointing_replay", file_stem=f"{key}-balanced")
