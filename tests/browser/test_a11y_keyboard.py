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
    page.wait_for_timeout(1500)  # the page reruns and mounts the stage as an exercise
    for _ in range(12):  # → walks the replay, a step a press, to the first mul step's question
        page.keyboard.press("ArrowRight")
        if "The step of h runs" in page.locator(".stage-caption").inner_text():
            break
        if page.locator(".stage-answer").count():
            tab_until(page, _named("Reveal without answering"))
            page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"event={step + 1}\b"))
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.shadowRoot"
        " && document.activeElement.shadowRoot.activeElement?.classList.contains('stage-answer')"
    )
    page.keyboard.type("1, 2")  # focus is in the first answer: upstream gradient times the other factor
    page.keyboard.press("Tab")
    page.keyboard.type("1, 2")
    page.keyboard.press("Enter")  # checks the form
    page.get_by_text("Right: every value matches.").wait_for()
    # answered, the step runs: the stage stops at its end (the next step's start is the event after it)
    shown = next(i for i, e in enumerate(run.recorder.events) if type(e).__name__ == "StepStarted" and i > step)
    page.wait_for_url(re.compile(rf"event={shown}\b"))
    page.locator(".stage-by").select_option("event")  # a press per event, to walk around the question
    page.keyboard.press("PageUp")  # the stage's keys still step, with focus in the stage
    page.wait_for_url(re.compile(rf"event={shown - 1}\b"))
    page.keyboard.press("PageDown")
    page.wait_for_url(re.compile(rf"event={shown}\b"))
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(rf"event={shown - 1}\b"))


def test_gradient_consumption_exercise_with_the_keyboard_alone(page, app_url):
    rows = ConsumptionLab().rows
    open_lesson(page, app_url, "gradients")
    tab_until(page, _named("Exercise: predict each value"))
    page.keyboard.press("Space")
    page.get_by_role("button", name="Check and reveal").wait_for()
    for row in rows:  # the value as Python returns it: [5.0, 7.0] is typed as 5.0, 7.0
        tab_until(page, lambda e: e["tag"] == "INPUT" and e["in_form"])
        page.keyboard.type(row.returns.removeprefix("[").removesuffix("]"))
    tab_until(page, _named("Check and reveal"))
    page.keyboard.press("Enter")
    page.get_by_text("The seed's table").wait_for()
    assert page.get_by_text(re.compile(r": right\.$")).count() == len(rows)
