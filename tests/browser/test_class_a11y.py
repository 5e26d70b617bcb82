"""WCAG 2.1 A and AA on the Class page's views, with a class running: the teacher's view (code, link, QR, the stage
with the answers drawn on the asked node and in words) and a student's (the question and its answer form), on a
laptop and a phone, light and dark."""

from __future__ import annotations

import re

import pytest

from .a11y import blocking_violations, describe
from .class_student import send_answer
from .test_a11y import APP_BACKGROUND, BACKGROUNDS, VIEWPORTS

pytestmark = pytest.mark.browser


def check(page) -> dict[str, str]:
    failures = {}
    for scheme, background in BACKGROUNDS.items():
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function(f"() => ({APP_BACKGROUND})() === {background!r}")
        page.wait_for_timeout(300)  # the stage's colours follow the theme's
        found = blocking_violations(page)
        if found:
            failures[scheme] = describe(found)
    return failures


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_teacher_and_student_views_have_no_critical_or_serious_violation(browser, app_url, viewport):
    teacher_context = browser.new_context(viewport=VIEWPORTS[viewport])
    student_context = browser.new_context(viewport=VIEWPORTS[viewport])
    try:
        teacher, student = teacher_context.new_page(), student_context.new_page()
        for page in (teacher, student):
            page.set_default_timeout(30_000)
        teacher.goto(f"{app_url}/class")
        teacher.get_by_role("button", name="Start a class").click()
        teacher.locator(".stage svg g.node").first.wait_for()
        join_at = teacher.get_by_text(re.compile(r"^Join at ")).first.inner_text()
        student.goto(re.match(r"Join at (\S+)", join_at).group(1))
        student.get_by_role("button", name="Join").click()
        student.locator(".stage svg g.node").first.wait_for()
        teacher.get_by_role("button", name="Ask", exact=True).click()
        # a screen reader hears the question open: the stage's status is a live region
        status = student.locator(".class-status[role=status]")
        status.get_by_text(re.compile(r"^Your teacher asked a question: answer it in the question box\.")).wait_for()
        send_answer(student, "1, 1")
        teacher.locator(".class-tally[aria-live=polite]").get_by_text(re.compile("1 of 1 answered")).wait_for()
        failures = {f"teacher {k}": v for k, v in check(teacher).items()}
        failures |= {f"student {k}": v for k, v in check(student).items()}
        assert not failures, "\n".join(f"[{where}]\n{text}" for where, text in failures.items())
    finally:
        teacher_context.close()
        student_context.close()
