"""Predict-then-reveal: the student enters a value before the app shows it, and keeps a score. A replay's steps are
asked in the stage itself (autodiff/stage/js/features/exercise.mjs checks the numbers with RTOL and ATOL and reports
each answer); the tables' questions are asked here."""

from __future__ import annotations

import numpy as np
import streamlit as st

from course.grading import ANSWER_CHARS, matches, parse_numbers

from . import press
from .literal import code_span

SCORE = "exercise_score"  # (right, answered), for the whole session, across pages
REVEALED = "exercise_revealed"  # how many questions were revealed without an answer


def _first_time(key: str) -> bool:
    """Whether question `key` is met for the first time: each counts once, answered or revealed."""
    seen = st.session_state.setdefault("exercise_answered", set())
    if key in seen:
        return False
    seen.add(key)
    return True


def record_answer(key: str, right: bool) -> None:
    """Count an answer once per question."""
    if _first_time(key):
        hits, total = st.session_state.get(SCORE, (0, 0))
        st.session_state[SCORE] = (hits + int(right), total + 1)


def record_reveal(key: str) -> None:
    """Count a question revealed without an answer (never as right), once per question."""
    if _first_time(key):
        st.session_state[REVEALED] = st.session_state.get(REVEALED, 0) + 1


def score_sentence() -> str:
    """The session's score in words; "" before any question was met."""
    hits, total = st.session_state.get(SCORE, (0, 0))
    revealed = st.session_state.get(REVEALED, 0)
    parts = []
    if total:
        parts.append(f"{hits} of {total} answered prediction{'s' if total != 1 else ''} right")
    if revealed:
        parts.append(f"{revealed} revealed without an answer")
    return f"Your score this session: {'; '.join(parts)}." if parts else ""


def score_caption() -> None:
    if sentence := score_sentence():
        st.caption(sentence)


STAGE_QUESTIONS = 1_000  # verdicts read from one report: a replay asks at most one question per step


def score_answers(answers: object) -> None:
    """Score what the stage reported for its steps' predictions (it checks the numbers in the browser): every
    verdict so far, `{question key: True | False | None}`, None being revealed without an answer. Anything else a
    client sends is ignored; each question counts once."""
    if not isinstance(answers, dict):
        return
    for question, right in list(answers.items())[:STAGE_QUESTIONS]:
        if not isinstance(question, str) or len(question) > 64 or right not in (True, False, None):
            continue
        if right is None:
            record_reveal(f"stage_{question}")
        else:
            record_answer(f"stage_{question}", bool(right))


def predict_table(rows: list[tuple[str, str, str]], key: str) -> bool:
    """Ask what each expression returns (`None` or values) before showing the answers.
    `rows` are (the Python call, what it returns: `[5.0, 7.0]` or `None`, the reason).
    Returns True once the student has checked, so the page can reveal the table."""
    with st.form(f"{key}_form"):
        st.markdown("**Predict** what each call returns: type `None`, or the values (e.g. `1.0, 2.0`).")
        answers = [
            st.text_input(f"`{expression}`", key=f"{key}_{k}", max_chars=ANSWER_CHARS)
            for k, (expression, _, _) in enumerate(rows)
        ]
        submitted = press.submit_button("Check and reveal", f"{key}_check")
    if not submitted:
        return bool(st.session_state.get(f"{key}_revealed"))
    st.session_state[f"{key}_revealed"] = True
    for k, ((expression, value, reason), answer) in enumerate(zip(rows, answers, strict=True)):
        if not answer.strip():
            record_reveal(f"{key}_{k}")
            st.info(f"`{expression}` → `{value}` (not answered). {reason}")
            continue
        if value == "None":
            right = answer.strip().lower() == "none"
        else:
            right = bool(matches(np.array(parse_numbers(value)), answer))
        record_answer(f"{key}_{k}", right)
        if right:
            st.success(f"`{expression}` → `{value}`: right.")
        else:
            st.error(f"`{expression}` → `{value}`, not {code_span(answer.strip()[:80])}. {reason}")  # as typed
    score_caption()
    return True
