"""The active-memory timeline in Chromium: the seed's 20 passes pile up two bands each and vanish at the backward's
sweep; a focused band says its node and line; light and dark, presenter and phone, axe clean, screenshots kept."""

from __future__ import annotations

import pytest

from .a11y import blocking_violations, describe, open_lesson, settle, turn_on_presenter
from .conftest import screenshot

pytestmark = pytest.mark.browser

BANDS = ".memtl .band.c-activation"
# the timeline is drawn in a component's shadow root: look inside each one
INSIDE = (
    "selector => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].flatMap(host => "
    "host.shadowRoot ? [...host.shadowRoot.querySelectorAll(selector)] : [])"
)
SHOWN = (
    f"() => ({INSIDE})('.memtl .detail').filter(p => getComputedStyle(p).display !== 'none')"
    ".map(p => p.innerText).join(' | ')"
)
SWEPT = (
    f"() => ({INSIDE})('{BANDS}').filter(b => b.getAttribute('aria-label')"
    '.includes("freed by the next backward\'s sweep")).length === 40'
)
APP_BACKGROUND = "() => getComputedStyle(document.querySelector('.stApp')).backgroundColor"
BACKGROUNDS = {"light": "rgb(255, 255, 255)", "dark": "rgb(20, 23, 26)"}  # .streamlit/config.toml


def labels(page) -> list[str]:
    return page.locator(BANDS).evaluate_all("bands => bands.map(b => b.getAttribute('aria-label'))")


def axe_clean(page) -> None:
    found = blocking_violations(page)
    assert not found, describe(found)


def test_the_seed_experiment_piles_up_then_the_sweep_removes_it(browser, app_url):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_lesson(page, app_url, "memory")
        page.get_by_role("button", name="Start").click()
        page.get_by_role("button", name="Download memory snapshot (memory_viz)").wait_for()  # shown once it stops
        settle(page)
        held = labels(page)
        assert len(held) == 40 and all("still held" in words for words in held)  # two 1 MiB bands per pass
        tops = page.locator(BANDS).evaluate_all("bands => bands.map(b => b.getBoundingClientRect().top)")
        assert tops == sorted(tops, reverse=True)  # each pass's bands above the last's: a pile

        band = page.locator(BANDS).nth(4)  # pass 3's exp output
        band.focus()
        shown = page.evaluate(SHOWN)
        assert (
            "exp(x) output, saved by" in shown  # the nodes named as the stage names them
            and "exp(x)·x for backward" in shown
            and "line 3 of the program (memory_forward)" in shown
        )
        assert "made in forward pass 3" in shown
        band.scroll_into_view_if_needed()
        screenshot(page, "memory_timeline_focused_light")
        axe_clean(page)

        # a band and its node on the graph select each other (the graph draws the newest pass: nodes 77 to 80)
        page.locator(".memtl .band[data-node='n77']").focus()  # a band names its node's box
        assert "selected" in page.locator(".stage g.node#n77").get_attribute("class")
        page.locator(".stage g.node#n78").click()
        assert "linked" in page.locator(".memtl .band[data-node='n78']").get_attribute("class")
        assert "linked" not in page.locator(".memtl .band[data-node='n77']").get_attribute("class")
        page.locator(".stage g.node#n78").scroll_into_view_if_needed()
        screenshot(page, "memory_timeline_node_selects_band_light")

        page.get_by_role("button", name="Run one backward now").click()
        page.wait_for_function(SWEPT)
        settle(page)
        screenshot(page, "memory_timeline_swept_light")
        page.emulate_media(color_scheme="dark")
        page.wait_for_function(f"() => ({APP_BACKGROUND})() === {BACKGROUNDS['dark']!r}")
        page.locator(BANDS).nth(4).focus()
        screenshot(page, "memory_timeline_swept_dark")
        axe_clean(page)
        page.set_viewport_size({"width": 390, "height": 844})
        settle(page)
        width = page.locator(".memtl > svg").first.evaluate("svg => svg.getBoundingClientRect().width")
        assert 200 < width <= 390  # the timeline takes the phone's width, never wider
        page.locator(".memtl").first.scroll_into_view_if_needed()
        screenshot(page, "memory_timeline_phone_dark")
        axe_clean(page)
    finally:
        context.close()


def test_policies_timelines_in_presenter_mode(browser, app_url):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_lesson(page, app_url, "policies")
        turn_on_presenter(page)
        assert page.locator(".memtl").count() == 2
        assert page.get_by_role("button", name="Download memory snapshot (memory_viz)").count() == 2
        lazy, eager = (page.locator(".memtl > svg").nth(k).bounding_box() for k in (0, 1))
        assert lazy and eager and lazy["width"] == eager["width"]  # one time axis: the same width, the same scale
        page.locator(".memtl").first.scroll_into_view_if_needed()
        screenshot(page, "memory_timeline_policies_presenter")
        axe_clean(page)
    finally:
        context.close()
