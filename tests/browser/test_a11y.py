"""WCAG 2.1 A and AA in a real Chromium: axe-core over every page, in normal and presenter mode, in the light and
the dark theme, on a laptop and a phone. Zero critical or serious violations, and no rule switched off."""

from __future__ import annotations

import pytest

from ui.navigation import LESSONS

from .a11y import blocking_violations, describe, open_lesson, turn_on_presenter

pytestmark = pytest.mark.browser

VIEWPORTS = {"1440x900": {"width": 1440, "height": 900}, "390x844": {"width": 390, "height": 844}}
BACKGROUNDS = {"light": "rgb(255, 255, 255)", "dark": "rgb(20, 23, 26)"}  # .streamlit/config.toml
APP_BACKGROUND = "() => getComputedStyle(document.querySelector('.stApp')).backgroundColor"
STAGE_FOLLOWS = """dark => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]
  .map(host => host.shadowRoot && host.shadowRoot.querySelector('.stage')).filter(Boolean)
  .every(stage => stage.classList.contains('dark') === dark)"""


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("path", [lesson.url_path for lesson in LESSONS], ids=lambda p: p or "home")
def test_no_critical_or_serious_wcag_violation(browser, app_url, path, presenter, viewport):
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        open_lesson(page, app_url, path)
        if presenter:
            turn_on_presenter(page)
        failures = {}
        for scheme, background in BACKGROUNDS.items():
            page.emulate_media(color_scheme=scheme)  # the app follows the browser's preference, without a reload
            page.wait_for_function(f"() => ({APP_BACKGROUND})() === {background!r}")
            # the stage follows as the theme's colours change (an observer on its host, not a timer)
            page.wait_for_function(STAGE_FOLLOWS, arg=scheme == "dark")
            found = blocking_violations(page)
            if found:
                failures[scheme] = describe(found)
        assert not failures, "\n".join(f"[{scheme}]\n{text}" for scheme, text in failures.items())
    finally:
        context.close()
