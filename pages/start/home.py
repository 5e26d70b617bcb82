import streamlit as st

from course.labs import ConsumptionLab
from course.programs import PROGRAMS
from ui.code import code_block
from ui.navigation import LESSONS, lesson_intro
from ui.state import session_lab
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
lab = session_lab("home_seed", ConsumptionLab)
data_table([{"Python": r.call, "Returns": r.returns, "Why": r.reason} for r in lab.rows])
st.caption(SEED_NOTE)

st.subheader("Lessons")
for section in dict.fromkeys(lesson.section for lesson in LESSONS if lesson.section):
    st.markdown(f"**{section}**")
    for lesson in (lesson for lesson in LESSONS if lesson.section == section):
        left, right = st.columns([1, 3])
        with left:
            st.page_link(lesson.path, label=lesson.title)
        right.markdown(lesson.summary)
