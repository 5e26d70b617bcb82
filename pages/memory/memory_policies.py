import streamlit as st

from course.labs import policy_comparison, policy_timelines
from ui.charts import policy_curves
from ui.memory_timeline import memory_timelines
from ui.navigation import lesson_intro
from ui.state import current_backend, presenter_mode, shared_result
from ui.tables import data_table

lesson_intro(
    "Memory policies: Burn vs PyTorch",
    "When is the memory of a graph given back? **Burn** frees nothing until the next `backward()`, whose "
    "sweep frees every graph no live tensor needs: a forward-only loop on an autodiff device grows. "
    "**PyTorch** counts references: a graph is freed the moment nothing refers to it, so dropping the loss "
    "frees its graph at once. Both consume the graph in backward; PyTorch can keep it with "
    "`retain_graph=True`, and then its `.grad` adds up over backward passes.",
)

st.subheader("The seed's memory experiment under each policy")
size = st.select_slider("Tensor size (n × n)", [64, 128, 256, 512], value=512, key="policies_size")
backend = current_backend()
policy_curves(size, backend, presenter_mode())  # chart and table, drawn once per server
st.caption(
    "Under Burn's policy each forward pass whose loss is dropped leaves its graph's saved tensors behind until "
    "the backward; under PyTorch's they go with the loss. Both free the tensors a backward consumed."
)
st.markdown("**Every buffer over time**, both policies on one time axis and one memory scale:")
memory_timelines(
    shared_result(policy_timelines, size, backend),
    ("memory-burn-lazy", "memory-pytorch-eager"),
    shared=("policies", size, backend),
)

st.subheader("Backward twice, and the shared subgraph")
data_table(shared_result(policy_comparison, backend))
st.caption(
    'Without retain_graph both refuse a second pass through consumed steps (PyTorch says "Trying to backward '
    'through the graph a second time"). With it, PyTorch keeps every step and its saved tensors, and adds the '
    "new gradients to the old ones, as `.grad` does; Burn has no such option."
)

st.subheader("What each framework does, and why")
data_table(
    [
        {
            "Framework": "Burn",
            "Graph memory freed": "at the next backward (a sweep)",
            "Second backward": "refused: each step runs once; no retain_graph",
            "Gradients": "returned in a Gradients container; leaves keep theirs",
            "Why": "steps are owned by a server and moved out when run; no per-tensor reference counting",
        },
        {
            "Framework": "PyTorch",
            "Graph memory freed": "as soon as no tensor refers to it",
            "Second backward": "refused, unless retain_graph=True keeps the graph",
            "Gradients": "accumulated into each leaf's .grad across backward passes",
            "Why": "the graph hangs off tensors (grad_fn) and dies with the last reference",
        },
        {
            "Framework": "JAX / MLX",
            "Graph memory freed": "when the transformed call returns",
            "Second backward": "just call the function again: there is no stored graph",
            "Gradients": "returned by grad / vjp as plain values",
            "Why": "functional transforms trace the function at each call instead of recording a tape",
        },
    ]
)
