"""Code blocks on a page: a lesson's program, coloured, and a run's printed output, as text (the HTML is made by
`autodiff.stage.code`, which the stage shares)."""

from __future__ import annotations

import streamlit as st

from autodiff.stage.code import code_html


def code_block(source: str, python: bool = True) -> None:
    """Draw `source` as a code block: coloured as Python, or (`python=False`) as plain text. Any text is shown as
    text: every character of it is escaped."""
    st.html(code_html(source, python))
