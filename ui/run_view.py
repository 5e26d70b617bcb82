"""A Playground run on the page: waiting for its worker (with the queue position), and its error."""

from __future__ import annotations

import uuid

import streamlit as st

from playground import PlaygroundError
from playground.workers import Job

from .format import escape_markdown


def session_owner() -> str:
    """This browser session's name in the run queue (one waiting run per session)."""
    return st.session_state.setdefault("playground_owner", uuid.uuid4().hex)


def wait_for_run(job: Job) -> None:
    """Show where the run stands until its worker answers. A rerun meanwhile (any click) leaves the job
    in the queue; the next run of the page picks up waiting where this one stopped."""
    status = st.empty()
    while not job.wait(0.2):
        ahead = job.position()
        if job.state == "queued" and ahead:
            status.info(f"Queued: {ahead} run{'s' if ahead > 1 else ''} ahead of yours. It starts by itself.")
        else:
            status.info("Running your program in its own worker process…")
    status.empty()


def run_error(error: PlaygroundError, source: str) -> None:
    """The error as text (it may quote what the student typed), with the line it points at."""
    where = f"Line {error.line}, column {error.column}: " if error.line else ""
    hint = f"\n\nHint: {error.hint}" if error.hint else ""
    st.error(escape_markdown(f"{where}{error.message}{hint}"))
    lines = source.splitlines()
    if error.line and 0 < error.line <= len(lines):
        caret = " " * max((error.column or 1) - 1, 0) + "^"
        st.code(f"{lines[error.line - 1]}\n{caret}", language=None)
