"""Reflow (WCAG 1.4.4, 1.4.10): at 200% zoom and 320 CSS px wide, every page's text stays on screen without
scrolling sideways. 200% of a 1280x900 laptop is a 640x450 CSS px viewport at device scale 2."""

from __future__ import annotations

import pytest

from ui.navigation import LESSONS

from .a11y import open_lesson

pytestmark = pytest.mark.browser

SIZES = {
    "200% zoom": {"viewport": {"width": 640, "height": 450}, "device_scale_factor": 2},
    "320 px": {"viewport": {"width": 320, "height": 720}},
}

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


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("path", [lesson.url_path for lesson in LESSONS], ids=lambda p: p or "home")
def test_nothing_lost_or_scrolling_sideways(browser, app_url, path, size):
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        open_lesson(page, app_url, path)
        found = page.evaluate(OVERFLOW)
        assert found["lost"] == [], f"text past the right edge: {found['lost']}"
        assert found["sideways"] <= 1 and found["page"] <= 1, found
    finally:
        context.close()
