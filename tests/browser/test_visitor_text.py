"""A student's typed answer is quoted in the feedback as the characters typed: no emphasis, link, HTML or formula."""

from __future__ import annotations

import pytest

from .conftest import screenshot

pytestmark = pytest.mark.browser
HOSTILE = "**bold** <b>x</b> [l](https://evil.example) $x^2$ :red[red] a ``b`` `"


def test_a_wrong_answer_is_shown_as_typed(page, app_url):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{app_url}/gradients")
    page.get_by_role("heading", name="Gradient consumption").wait_for()
    page.get_by_text("Exercise: predict each value before the table is revealed").click()
    page.get_by_role("button", name="Check and reveal").wait_for()
    page.get_by_role("textbox").first.fill(HOSTILE)
    page.get_by_role("button", name="Check and reveal").click()
    box = page.locator('[data-testid="stAlertContentError"]').first
    box.wait_for()
    quoted = box.locator("code").nth(2)  # after the expression and its value
    assert quoted.inner_text() == HOSTILE
    assert box.locator("a, strong, b, em, img, .katex").count() == 0
    assert not any("evil.example" in url for url in requests)
    screenshot(page, "exercise_answer_as_typed")
