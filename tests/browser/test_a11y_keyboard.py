"""Keyboard only (WCAG 2.1.1, 2.4.3, 2.4.7): a lesson and an exercise walked with Tab, Space, Enter, typing and the
stage's own keys, every control on the way showing where the focus is."""

from __future__ import annotations

import re

import pytest

from course.labs import ConsumptionLab
from course.programs import record_program
from ui.navigation import LESSONS

from .a11y import focused, open_lesson, tab_until

pytestmark = pytest.mark.browser

STAGE_PICTURE = "[data-testid='stBidiComponentIsolated'] svg"


def _named(prefix: str):
    return lambda element: element["name"].startswith(prefix)


def test_backward_traversal_with_the_keyboard_alone(page, app_url):
    run = record_program("seed")
    step = next(i for i, e in enumerate(run.recorder.events) if type(e).__name__ == "StepStarted" and e.op == "mul")
    open_lesson(page, app_url, "traversal?program=seed&event=1")
    page.locator(STAGE_PICTURE).first.wait_for()

    visited = tab_until(page, _named("Exercise: predict each step"))
    links = [v["name"] for v in visited if v["testid"] == "stPageLink-NavLink"]
    assert links == [lesson.title for lesson in LESSONS]  # the sidebar first, in the course's order
    names = [v["name"] for v in visited]
    assert names.index(links[-1]) < next(i for i, v in enumerate(visited) if v["name"].startswith("Program"))

    page.keyboard.press("Space")  # the exercise on
    page.wait_for_function("() => document.activeElement.checked")
    assert focused(page)["name"].startswith("Exercise: predict each step")  # focus stays on the toggle
    for _ in range(step):  # → walks the replay to the first mul step's start
        page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(rf"event={step + 1}\b"))
    page.get_by_text("Predict").first.wait_for()

    tab_until(page, lambda e: e["tag"] == "INPUT" and e["in_form"])
    page.keyboard.type("1, 2")  # what mul sends to each input: the upstream gradient times the other factor
    tab_until(page, lambda e: e["tag"] == "INPUT" and e["in_form"])
    page.keyboard.type("1, 2")
    tab_until(page, _named("Check my prediction"))
    page.keyboard.press("Enter")
    page.get_by_text("Right: every value matches.").wait_for()

    page.keyboard.press("PageUp")  # the stage's keys still step from a focused form button
    page.wait_for_url(re.compile(rf"event={step}\b"))
    page.keyboard.press("PageDown")
    page.wait_for_url(re.compile(rf"event={step + 1}\b"))
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(rf"event={step}\b"))


def test_gradient_consumption_exercise_with_the_keyboard_alone(page, app_url):
    rows = ConsumptionLab().rows
    open_lesson(page, app_url, "gradients")
    tab_until(page, _named("Exercise: predict each value"))
    page.keyboard.press("Space")
    page.get_by_role("button", name="Check and reveal").wait_for()
    for row in rows:  # the value as the seed prints it: Some([5.0, 7.0]) is typed as 5.0, 7.0
        tab_until(page, lambda e: e["tag"] == "INPUT" and e["in_form"])
        page.keyboard.type(row.value.removeprefix("Some([").removesuffix("])"))
    tab_until(page, _named("Check and reveal"))
    page.keyboard.press("Enter")
    page.get_by_text("The seed's table").wait_for()
    assert page.get_by_text(re.compile(r": right\.$")).count() == len(rows)
