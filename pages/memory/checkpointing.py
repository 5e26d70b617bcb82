import streamlit as st

from autodiff.stage.format import format_bytes
from course.labs import checkpointing_lesson
from course.programs import CHECKPOINTING_PROGRAMS
from ui.charts import checkpointing_curves
from ui.code import code_block
from ui.memory_timeline import memory_timelines
from ui.navigation import lesson_intro
from ui.replay_view import replay_view
from ui.state import current_backend, presenter_mode, shared_result
from ui.tables import data_table

lesson_intro(
    "Checkpointing",
    "Backward needs some forward values (an `exp` or a `tanh` needs its input, a `mul` its operands). Keeping them all "
    "costs memory. Burn's **balanced checkpointing** keeps the outputs of compute-bound ops (matmul, sums) "
    "and, for memory-bound elementwise ops, only a *recipe*: during backward such an output is recomputed "
    "once from the nearest kept ancestors, and freed after its last use. Less memory held, a little more "
    "compute, and exactly the same gradients.",
)

key = st.selectbox(
    "Program",
    list(CHECKPOINTING_PROGRAMS),
    index=len(CHECKPOINTING_PROGRAMS) - 1,
    format_func=lambda k: CHECKPOINTING_PROGRAMS[k].title,
    key="checkpointing_program",
)
code_block(CHECKPOINTING_PROGRAMS[key].source)
backend = current_backend()
lesson = shared_result(checkpointing_lesson, key, backend)  # the same for every student: computed once per server

data_table(
    [
        {k: format_bytes(v) if "emory" in k or "Held" in k or "Peak" in k else v for k, v in row.items()}
        for row in lesson.summary
    ]
)
if lesson.same_gradients:
    st.success("The gradients are identical, bit for bit, with and without checkpointing.")
else:
    st.error("The gradients differ between the two strategies: this is a bug, please report it.")

st.subheader("Memory within the backward, after each step")
checkpointing_curves(key, backend, presenter_mode())  # drawn once per server
st.caption(
    "Each point is the device's memory after one step ran and dropped its saved state. With checkpointing "
    "the curve starts lower (less was saved); recomputed values appear just before the steps that need them."
)

st.markdown("**Every buffer over time**, forward and backward, under each strategy on one time axis:")
memory_timelines(
    lesson.timelines,
    (f"memory-{key}-none", f"memory-{key}-balanced"),
    shared=("checkpointing", key, backend),
    program=[*CHECKPOINTING_PROGRAMS[key].helpers, CHECKPOINTING_PROGRAMS[key].build],
)

st.subheader("Replay with checkpointing")
st.markdown("The replay shows each recomputation as its own event, just before the step that needs it.")
replay_view(
    lesson.before,
    lesson.recorder,
    lesson.names,
    "checkpointing_replay",
    file_stem=f"{key}-balanced",
    shared=("checkpointing", key, backend),
    source=CHECKPOINTING_PROGRAMS[key].source,
    lines=lesson.lines,
)
