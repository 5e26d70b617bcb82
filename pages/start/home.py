import streamlit as st

from course.labs import seed_grad_rows
from course.programs import PROGRAMS
from ui.code import code_block
from ui.navigation import lesson_intro, lesson_list
from ui.state import current_backend, shared_result
from ui.tables import SEED_NOTE, data_table

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
code_block(PROGRAMS["seed"].source)
rows = shared_result(seed_grad_rows, current_backend())  # the same for every student: computed once per server
data_table([{"Python": r.call, "Returns": r.returns, "Why": r.reason} for r in rows])
st.caption(SEED_NOTE)

st.subheader("Lessons")
lesson_list()
