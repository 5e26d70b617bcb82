"""A Playground run on the page: waiting for its worker (with the queue position), the result held against
the session's memory budget, and its error."""

from __future__ import annotations

import html
import re
import threading
import uuid

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from autodiff import MemoryBudget, MemoryBudgetError
from playground import PlaygroundError, RunResult
from playground.results import source_lines
from playground.workers import Job
from ui.state import session_budget

RESULT_CHARGE = "playground_result_charge"
STOPPED_AWAY = "playground_stopped_away"  # the last run was stopped because its page was away; kept until a new Run

ERROR_CLASS = "playground-error"
ERROR_STYLE = (
    "background:#fdecec;color:#7d1a1a;border-radius:0.5rem;padding:0.9rem 1rem;white-space:pre-wrap;"
    "font-family:inherit;line-height:1.5"
)
CODE_STYLE = "white-space:pre-wrap;word-break:break-all;margin:0.6rem 0 0;font-size:0.9em;background:none"
SPAN_STYLE = "font-size:0.9em;background:rgba(125,26,26,0.1);color:inherit;border-radius:0.25rem;padding:0 0.2em"
CODE_SPAN = re.compile(r"`([^`\n]+)`")  # a message's `x = ...`: one line, no backtick inside


def session_owner() -> str:
    """This browser session's name in the run queue (one waiting run per session)."""
    return st.session_state.setdefault("playground_owner", uuid.uuid4().hex)


AWAY_SECONDS = 2.0  # a page away this long has closed (a dropped connection is back within a second)


def wait_for_run(job: Job) -> None:
    """Show where the run stands until its worker answers. A rerun meanwhile (any click) leaves the job
    in the queue; the next run of the page picks up waiting where this one stopped."""
    status = st.empty()
    try:
        while not job.wait(0.2):
            ahead = job.position()
            if job.state == "queued" and ahead:
                status.info(f"Queued: {ahead} run{'s' if ahead > 1 else ''} ahead of yours. It starts by itself.")
            else:
                status.info("Running your program in its own worker process…")
    except StopException:  # the page went away: a closed tab, or a dropped connection that is back in a moment
        _cancel_unless_back(job)
        raise
    status.empty()
    if job.state == "cancelled":  # it was away longer, and came back after all (a phone woken, Wi-Fi back)
        st.session_state[STOPPED_AWAY] = True
    elif job.state == "done":
        st.session_state.pop(STOPPED_AWAY, None)


def _cancel_unless_back(job: Job) -> None:
    """Stop `job` unless its page is connected again within `AWAY_SECONDS`: nobody will read a closed tab's run, and
    it keeps a worker from the others. A page that comes back picks the job up where its last run left it."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        job.cancel()
        return
    session, server = ctx.session_id, runtime.get_instance()
    timer = threading.Timer(AWAY_SECONDS, lambda: None if server.is_active_session(session) else job.cancel())
    timer.daemon = True
    timer.start()


def stopped_away_notice() -> bool:
    """Say that the last run was stopped while the page was away, until the student runs again: the output below
    (if any) is an earlier run's. True when it is said."""
    stopped = bool(st.session_state.get(STOPPED_AWAY))
    if stopped:
        st.warning(
            f"Your last run was stopped: this page lost its connection to the server for more than {AWAY_SECONDS:g} s"
            " while it ran (a closed tab's run stops so that it keeps nobody waiting). Press **Run** to run it again."
        )
    return stopped


class Charge:
    """Bytes counted against a memory budget while this object lives: given back when it goes (a newer result
    replaces it, or the session's state is dropped)."""

    def __init__(self, budget: MemoryBudget, nbytes: int) -> None:
        self.budget, self.nbytes = budget, 0
        budget.take(nbytes)  # may refuse: then nothing is counted
        self.nbytes = nbytes

    def __del__(self) -> None:
        self.budget.give_back(self.nbytes)


def hold_result(result: RunResult) -> bool:
    """Keep `result` in the session, its size counted against the session's memory budget (the previous
    result's charge is given back first). False, with a sentence on the page, when it does not fit."""
    st.session_state.pop(RESULT_CHARGE, None)  # its charge is given back as it goes
    st.session_state.pop("playground_result", None)
    try:
        charge = Charge(session_budget(), result.reply_bytes)
    except MemoryBudgetError as error:
        st.error(f"This run's result does not fit in your session's memory. {error}")
        return False
    st.session_state[RESULT_CHARGE] = charge
    st.session_state.playground_result = result
    return True


def run_error(error: PlaygroundError, source: str) -> None:
    """The error, styled as an alert but written as HTML-escaped text: it may quote what the student typed,
    and Markdown would turn a typed link or image into a real one. Its backtick spans alone read as code
    (`with_code_spans`). The line it points at sits below it."""
    where = f"Line {error.line}, column {error.column}: " if error.line else ""
    hint = f"\nHint: {error.hint}" if error.hint else ""
    lines = source_lines(source)  # as Python numbers them: U+2028 inside a string starts no line
    shown = ""
    if error.line and 0 < error.line <= len(lines):
        caret = " " * max((error.column or 1) - 1, 0) + "^"
        shown = f'<pre style="{CODE_STYLE}">{html.escape(lines[error.line - 1])}\n{caret}</pre>'
    st.html(
        f'<div class="{ERROR_CLASS}" role="alert" style="{ERROR_STYLE}">'
        f"<div>{with_code_spans(where + error.message + hint)}</div>{shown}</div>"
    )


def with_code_spans(text: str) -> str:
    """`text` as HTML: each backtick span a `<code>` (the messages write `x = ...` so), everything else and the
    spans' insides escaped. Nothing else is interpreted: `**x**`, a link or a tag the message quotes from the
    student's program reads as typed, and an unpaired backtick stays a backtick."""
    parts = CODE_SPAN.split(text)  # text, code, text, code, ..., text
    return "".join(
        f'<code style="{SPAN_STYLE}">{html.escape(part)}</code>' if odd else html.escape(part)
        for odd, part in ((k % 2 == 1, part) for k, part in enumerate(parts))
    )
