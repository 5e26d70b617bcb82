"""The Playground's two reference panels: the limits of one run, and what a program may use (the Tensor API by kind,
the builtins, the modules, what is refused and why, and a working example for each method that takes shapes)."""

from __future__ import annotations

import streamlit as st

from playground import Limits
from playground.reference import BUILTINS, EXCEPTIONS, MODULES, OPERATORS, REFUSED, SHAPE_EXAMPLES, TENSOR_KINDS
from ui.code import code_block


# Both panels are the same for every visitor of a server: drawn once, then replayed (Streamlit keeps the elements a
# cached function drew), not a table and a dozen markdowns built again on every open of the Playground.
@st.cache_data(show_spinner=False, max_entries=1)  # one set of limits per server
def limits_table(limits: Limits) -> None:
    with st.expander("Limits of one run"):
        st.table(
            {
                "Limit": [
                    "Program length",
                    "Functions calling functions (recursion)",
                    "Values per tensor",
                    "Tensors held (and the replay)",
                    "Graph nodes",
                    "Printed lines",
                    "Time",
                    "Memory of the whole run (its own process): lists and strings too",
                ],
                "Value": [
                    f"{limits.program_chars:,} characters",
                    f"about {limits.call_depth} deep",
                    f"{limits.elements_per_tensor:,}",
                    f"{limits.bytes_held // 2**20} MiB",
                    f"{limits.nodes:,}",
                    f"{limits.print_lines:,}",
                    f"{limits.seconds:g} s",
                    f"{limits.process_bytes // 2**20} MiB",
                ],
            }
        )


@st.cache_data(show_spinner=False, max_entries=1)
def what_a_program_may_use() -> None:
    with st.expander("What a program may use"):
        st.markdown(
            "Python as you write it: classes, functions, `lambda`, comprehensions, `if`/`while`/`for`, `try`, "
            "f-strings, lists, dicts and sets. The engine's names are ready: `Tensor`, `Distribution`, and `ad`, "
            "the autodiff device every tensor is made on."
        )
        rows = [f"- **{kind}**: " + ", ".join(f"`{name}`" for name in names) for kind, names in TENSOR_KINDS.items()]
        st.markdown("**A tensor's methods** (`t.exp()`, `Tensor.zeros([2, 3], ad)`)\n\n" + "\n".join(rows))
        st.markdown(f"**Operators**: {OPERATORS}.")
        st.markdown("**Builtins**: " + ", ".join(f"`{name}`" for name in BUILTINS) + ".")
        st.markdown("**Exceptions** to raise and catch: " + ", ".join(f"`{name}`" for name in EXCEPTIONS) + ".")
        st.markdown("**Modules**: " + "; ".join(f"`import {name}`: {what}" for name, what in MODULES.items()) + ".")
        st.markdown("**Methods that take shapes, indices or ranges**, each a working example:")
        for method, example in SHAPE_EXAMPLES.items():
            st.markdown(f"`{method}`")
            code_block(example)
        st.markdown(
            "**Refused**, because it reaches outside the run: names that start with `_` (Python's internals), a "
            "tensor's buffers, and these:\n\n" + "\n".join(f"- {message}" for message, _ in REFUSED.values())
        )
