import streamlit as st

from autodiff import Device
from autodiff.scenarios import gradient_consumption
from ui.programs import PROGRAMS
from ui.state import current_backend
from ui.widgets import data_table, lesson_intro

lesson_intro(
    "Seeing reverse-mode autodiff",
    """
Automatic differentiation computes exact gradients of a program by applying the chain rule to each
operation it ran. In **reverse mode**, the forward pass records every operation as a *step* on a tape.
`backward()` then walks that tape from the loss back to the inputs, turning each step's upstream gradient
into gradients for its inputs. This engine behaves like the autodiff runtime of the Rust framework
**Burn**: each step runs once and is *consumed*, and only the leaves you marked keep a gradient.
Memory held for the backward pass stays held until a backward runs, which the lessons make visible.
""",
)

st.subheader("The first program")
st.markdown("`x` is used on two paths (`x * x` and `x * 3`), so its gradient is the sum of both: 2x + 3.")
st.code(PROGRAMS["seed"].source, language="python")
run = gradient_consumption(Device.named(current_backend()).autodiff())
data_table([{"Expression": r.expression, "Value": r.value, "Why": r.reason} for r in run.rows])

st.subheader("Lessons")
LESSONS = [
    ("lessons/backward_traversal.py", "Watch backward walk the tape, one step at a time, with the gradients it sends."),
    ("lessons/gradient_consumption.py", "Which gradients exist after backward, and why the loss and `h` have none."),
    ("lessons/tape_consumption.py", "Why a second backward through the same steps is refused, and what to do instead."),
    ("lessons/memory_growth.py", "How graphs you never backward keep their memory, and how one backward frees it."),
    ("lessons/memory_policies.py", "Burn's lazy sweep beside PyTorch's eager freeing and retain_graph."),
    ("lessons/checkpointing.py", "Keep less, recompute in backward: the same gradients for less memory."),
    ("lessons/check_mlx.py", "Every gradient checked against MLX's own autodiff and finite differences."),
    ("lessons/playground.py", "Write your own program, run it safely, replay its backward and share it by link."),
]
for path, text in LESSONS:
    left, right = st.columns([1, 3])
    with left:
        st.page_link(path)
    right.markdown(text)
