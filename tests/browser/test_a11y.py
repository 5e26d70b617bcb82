"""Every page in a real Chromium, one tour per page and screen on one load: it opens whole, without an exception;
WCAG 2.1 A and AA by axe-core in the light and the dark theme, in normal and presenter mode, with no rule switched
off and zero critical or serious violations; and on the phone, reflow (WCAG 1.4.4, 1.4.10): at 320 CSS px wide and
at 200% zoom (a 1280x900 laptop at 200% is 640x450 CSS px), every text stays on screen without scrolling sideways."""

from __future__ import annotations

import pytest

from ui.navigation import LESSONS

from .a11y import blocking_violations, describe, open_lesson, settle, turn_on_presenter
from .conftest import screenshot
from .test_browser import HEADINGS, STAGE_NODES

pytestmark = pytest.mark.browser

VIEWPORTS = {"1440x900": {"width": 1440, "height": 900}, "390x844": {"width": 390, "height": 844}}
PHONE = "390x844"
REFLOW = {"320 px": {"width": 320, "height": 720}, "200% zoom": {"width": 640, "height": 450}}
BACKGROUNDS = {"light": "rgb(255, 255, 255)", "dark": "rgb(20, 23, 26)"}  # .streamlit/config.toml
APP_BACKGROUND = "() => getComputedStyle(document.querySelector('.stApp')).backgroundColor"
STAGE_FOLLOWS = """dark => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]
  .map(host => host.shadowRoot && host.shadowRoot.querySelector('.stage')).filter(Boolean)
  .every(stage => stage.classList.contains('dark') === dark)"""

# Text in the main column that ends right of the column or of the screen, unless it sits in a box of its own that
# scrolls sideways on purpose (none should, see ui/theme.py).
OVERFLOW = """() => {
  const main = document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect();
  const limit = Math.min(main.right, document.documentElement.clientWidth) + 1;
  const lost = [];
  const walker = document.createTreeWalker(document.querySelector('[data-testid=stMain]'), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const owner = node.parentElement;
    if (!node.textContent.trim() || !owner.checkVisibility()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) {
      if (rect.width > 0 && rect.right > limit) { lost.push(node.textContent.trim().slice(0, 60)); break; }
    }
  }
  const scroller = document.querySelector('[data-testid=stMain]');
  return {lost, sideways: scroller.scrollWidth - scroller.clientWidth, page: document.documentElement.scrollWidth
    - document.documentElement.clientWidth};
}"""


def opened_whole(page, path: str) -> None:
    """The page ran to its end without an exception and drew what it is about (its heading, its graphs, its numbers)."""
    page.get_by_role("heading", name=HEADINGS[path]).first.wait_for()
    if path in ("gradients", "tape", "mlx", "traversal"):
        page.locator(STAGE_NODES).first.wait_for()
    if path == "":
        page.get_by_text("[5.0, 7.0]", exact=True).first.wait_for()
        page.locator('[data-testid="stPageLink"]').last.wait_for()
    if path == "checkpoints":
        page.get_by_text("identical, bit for bit").wait_for()
        page.locator(STAGE_NODES).first.wait_for()
    if path == "policies":
        page.get_by_text("runs; x.grad accumulates to").first.wait_for()
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0
    loaded = page.evaluate("performance.getEntriesByType('resource').map(entry => entry.name)")
    assert [url for url in loaded if "SyntaxHighlighter" in url] == []  # st.code's: ~270 ms a load (ui/code.py)


def axe_in_both_themes(page, mode: str) -> dict[str, str]:
    failures = {}
    for scheme, background in BACKGROUNDS.items():
        page.emulate_media(color_scheme=scheme)  # the app follows the browser's preference, without a reload
        page.wait_for_function(f"() => ({APP_BACKGROUND})() === {background!r}")
        # the stage follows as the theme's colours change (an observer on its host, not a timer)
        page.wait_for_function(STAGE_FOLLOWS, arg=scheme == "dark")
        found = blocking_violations(page)
        if found:
            failures[f"{mode}, {scheme}"] = describe(found)
    return failures


def reflow_losses(page) -> dict[str, object]:
    """What each narrow size loses, as the phone's page narrows and widens on the same load (a rotation, a zoom)."""
    losses = {}
    for size, viewport in REFLOW.items():
        page.set_viewport_size(viewport)
        settle(page)
        found = page.evaluate(OVERFLOW)
        if found["lost"] or found["sideways"] > 1 or found["page"] > 1:
            losses[size] = found
    page.set_viewport_size(VIEWPORTS[PHONE])
    settle(page)
    return losses


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("path", [lesson.url_path for lesson in LESSONS], ids=lambda p: p or "home")
def test_every_page_is_accessible_in_both_themes_and_modes_and_reflows(browser, app_url, path, viewport):
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        open_lesson(page, app_url, path)
        opened_whole(page, path)
        if viewport != PHONE:
            screenshot(page, path or "home")
        failures = axe_in_both_themes(page, "normal")
        if viewport == PHONE:
            page.emulate_media(color_scheme="light")
            losses = reflow_losses(page)
            assert not losses, f"text past the right edge or scrolling sideways: {losses}"
        turn_on_presenter(page)
        failures |= axe_in_both_themes(page, "presenter")
        assert not failures, "\n".join(f"[{where}]\n{text}" for where, text in failures.items())
    finally:
        context.close()
