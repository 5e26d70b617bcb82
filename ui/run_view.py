"""A Playground run on the page: waiting for its worker (with the queue position), and its error."""

from __future__ import annotations

import html
import uuid

import streamlit as st

from playground import PlaygroundError
from playground.workers import Job

ERROR_CLASS = "playground-error"
ERROR_STYLE = (
    "background:#fdecec;color:#7d1a1a;border-radius:0.5rem;padding:0.9rem 1rem;white-space:pre-wrap;"
    "font-family:inherit;line-height:1.5"
)
CODE_STYLE = "white-space:pre-wrap;word-break:break-all;margin:0.6rem 0 0;font-size:0.9em;background:none"


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
    """The error, styled as an alert but written as HTML-escaped text: it may quote what the student typed,
    and Markdown would turn a typed link or image into a real one. The line it points at sits below it."""
    where = f"Line {error.line}, column {error.column}: " if error.line else ""
    hint = f"\nHint: {error.hint}" if error.hint else ""
    lines = source.splitlines()
    shown = ""
    if error.line and 0 < error.line <= len(lines):
        caret = " " * max((error.column or 1) - 1, 0) + "^"
        shown = f'<pre style="{CODE_STYLE}">{html.escape(lines[error.line - 1])}\n{caret}</pre>'
    st.html(
        f'<div class="{ERROR_CLASS}" role="alert" style="{ERROR_STYLE}">'
        f"<div>{html.escape(where + error.message + hint)}</div>{shown}</div>"
    )
