"""Every free-text input of a lesson is bounded before it is parsed (issue 20, finding 4)."""

from __future__ import annotations

import os
import time

import pytest
from apptest import app, button, run_code

from ui.exercise import ANSWER_CHARS, parse_numbers

HUGE = "1," * 60_000  # 120 KB each, six under the 1 MB a client may send (23 MB: tests/browser/test_input_flood.py)


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_parse_numbers_refuses_text_past_the_limit_before_splitting_it():
    assert parse_numbers("1," * (ANSWER_CHARS // 2)) == [1.0] * (ANSWER_CHARS // 2)
    text = HUGE * 100  # 12 MB
    start = time.perf_counter()
    text.split(",")
    split_s = time.perf_counter() - start
    start = time.perf_counter()
    assert parse_numbers(text) is None
    assert time.perf_counter() - start < split_s / 10  # a length check: not even a split of 12 MB (side by side)


def test_new_gradient_values_are_limited_and_refused_in_a_sentence():
    at = app("pages/backward/gradient_consumption.py")
    lab = at.session_state["consumption_lab"]
    assert at.text_input[0].max_chars == ANSWER_CHARS
    at.radio(key="consumption_tensor").set_value("x").run()
    before = resident_bytes()
    start = time.perf_counter()
    at.text_input[0].set_value(HUGE).run()
    assert len(at.text_input[0].value) == ANSWER_CHARS  # the server cuts a widget's value at max_chars
    button(at, "grad_replace()").click().run()
    assert "The new gradient has shape [1000], the tensor [2]" in at.error[0].value  # a sentence, in bounds
    assert not at.exception and len(lab.log) == 1
    assert time.perf_counter() - start < 15
    assert resident_bytes() - before < 50 * 2**20


def test_exercise_answers_are_limited_and_a_huge_answer_is_just_wrong():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    boxes = [at.text_input(key=f"consumption_predict_{k}") for k in range(6)]
    assert all(box.max_chars == ANSWER_CHARS for box in boxes)
    for box in boxes:
        box.set_value(HUGE)
    at.button(key="consumption_predict_check").click().run()
    assert at.session_state["exercise_score"] == (0, 6) and not at.exception
    assert all(len(e.value) < 1_000 for e in at.error)  # the answer is quoted as an excerpt, not whole


def test_a_playground_result_is_counted_against_the_session_budget_once():
    at = app("pages/check_and_play/playground.py")
    budget = at.session_state["_engine_budget"]
    before = budget.used
    run_code(at, "x = Tensor.ones([4096], ad).require_grad()\ny = (x * x).sum()\ng = y.backward()\n")
    held = at.session_state["playground_result"].reply_bytes
    assert held > 4096 * 4 and budget.used == before + held  # the reply's size, while the result is held
    run_code(at, 'print("small")')
    assert budget.used == before + at.session_state["playground_result"].reply_bytes < before + held  # replaced


HOSTILE_ANSWERS = {
    "**bold** <b>x</b> [l](http://e)": "`**bold** <b>x</b> [l](http://e)`",
    "a ``b`` $x$ `": "``` a ``b`` $x$ ` ```",  # a longer fence than any backtick run inside, padded at the edge
    "1\n\n**2**": "`1  **2**`",  # a blank line would end the code span, and the paragraph
}


def test_a_wrong_answer_is_quoted_as_typed_never_as_markdown():
    at = app("pages/backward/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    for answer, quoted in HOSTILE_ANSWERS.items():
        at.text_input(key="consumption_predict_0").set_value(answer)
        at.button(key="consumption_predict_check").click().run()
        assert f"`x.grad(grads)` → `[5.0, 7.0]`, not {quoted}. " in at.error[0].value


def test_every_text_box_of_every_page_says_its_bound():
    """No free-text input without `max_chars` (issue 55): each page's boxes, as AppTest renders them."""
    from ui.navigation import LESSONS

    for lesson in LESSONS:
        at = app(lesson.path)
        for box in [*at.text_input, *at.text_area]:
            assert box.max_chars, (lesson.path, box.label)


def test_pasted_training_rows_are_bounded_and_refused_before_splitting():
    from course.own_data import CSV_CHARS, DataError, parse_csv

    at = app("pages/train/training_loop.py")
    box = at.text_area(key="training_csv")
    assert box.max_chars == CSV_CHARS and f"{CSV_CHARS:,} characters" in box.help
    start = time.perf_counter()
    with pytest.raises(DataError, match=f"at most {CSV_CHARS:,} are read"):
        parse_csv("0.5, -1.2, 1\n" * 1_000_000)
    assert time.perf_counter() - start < 0.5  # refused before 13 MB of text is split into rows
