"""The teacher's projector (issue 43): at 1280x720 in presenter mode, with the sidebar open and closed, the whole
graph, the answers' badge on the asked node, the room code and the question's controls are in view together through
a whole question (asked, discussed, asked again, revealed), with no scrolling."""

from __future__ import annotations

import re
import time

import pytest

from .conftest import choose, screenshot

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1280, "height": 720}


def in_view(page, what: str, locator) -> list[str]:
    """Every element `locator` finds, whole inside the window; a sentence for each that is not."""
    cut = []
    for k, element in enumerate(locator.all()):
        box = element.bounding_box()
        inside = box and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= PROJECTOR["width"] + 0.5
        if not inside or box["y"] + box["height"] > PROJECTOR["height"] + 0.5:
            cut.append(f"{what} {k} at {box}")
    return cut


def everything_in_view(page, *buttons: str) -> None:
    """Waits for the graph, then (15 s at most: a loaded CI machine refits slowly) until all is in view: the stage
    refits below the bar when the bar's size changes, and a window a click scrolled comes back when it does."""
    page.locator(".stage svg g.node").nth(5).wait_for()
    deadline = time.monotonic() + 15
    while True:
        cut = in_view(page, "node", page.locator(".stage svg g.node"))
        cut += in_view(page, "badge", page.locator(".stage svg g.class-badge"))
        cut += in_view(page, "room code", page.get_by_text(re.compile(r"^Class [0-9A-Z]{4}")))
        for name in buttons:
            cut += in_view(page, name, page.get_by_role("button", name=name, exact=True))
        if not cut or time.monotonic() > deadline:
            break
        page.wait_for_timeout(100)
    assert page.locator(".stage svg g.node").count() >= 6 and not cut, cut


@pytest.mark.parametrize("sidebar", ["closed", "open"])
def test_the_graph_its_badges_and_the_controls_share_one_projector_screen(browser, app_url, sidebar):
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{app_url}/class")
        page.get_by_text("Presenter mode").click()
        page.get_by_role("button", name="Start a class").click()
        page.locator(".class-status", has_text="students joined").wait_for()
        if sidebar == "open":
            page.locator("[data-testid=stExpandSidebarButton]").first.click()
            page.locator("[data-testid=stSidebar]").get_by_role("link", name="Home").wait_for()
        everything_in_view(page)  # the graph drawn, as the teacher first sees it, before any press
        for _ in range(3):
            page.locator(".stage-controls button[data-act=next]").click()
        everything_in_view(page, "Ask")
        page.get_by_role("button", name="Ask", exact=True).click()
        page.locator("g.class-badge").wait_for()
        everything_in_view(page, "Close vote 1", "Reveal the answer")
        screenshot(page, f"class_projector_sidebar_{sidebar}")
        page.get_by_role("button", name="Close vote 1").click()
        page.get_by_role("button", name="Vote again").wait_for()
        everything_in_view(page, "Vote again", "Reveal the answer")
        page.get_by_role("button", name="Vote again").click()
        page.get_by_role("button", name="Reveal the answer").click()
        page.get_by_text(re.compile(r"The answer: ")).first.wait_for()
        everything_in_view(page, "Ask", "Ask its transfer question")
        # a leaf's gradient, whose worked answer (a sum over three paths) is the longest the bar shows
        choose(page, "Ask the room", "What is x's gradient after the backward?")
        page.get_by_role("button", name="Ask", exact=True).click()
        page.get_by_role("button", name="Reveal the answer").click()
        page.get_by_text(re.compile(r"= \[5\.0, 7\.0\]")).first.wait_for()
        everything_in_view(page, "Ask")
        screenshot(page, f"class_projector_revealed_sidebar_{sidebar}")
    finally:
        context.close()


REPORT_DELAY_S = 0.7  # stage.js tells the page where it is this long after the last press (a rerun)


def test_a_teachers_click_just_before_the_stage_reports_its_step_is_never_lost(browser, app_url):
    """The teacher steps, then asks or reveals at once: the stage's report of the step (a rerun of the page) lands
    while the click's run is under way. Each click still acts, once, whenever it falls in that window."""
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{app_url}/class")
        page.get_by_role("button", name="Start a class").click()
        page.locator(".class-status", has_text="students joined").wait_for()
        for before_report in (0.65, 0.55, 0.45):  # how long after the press the click comes
            page.locator(".stage-controls button[data-act=next]").click()
            page.wait_for_timeout(before_report * 1000)
            page.get_by_role("button", name="Ask", exact=True).click()
            page.get_by_role("button", name="Close vote 1").wait_for()
            page.locator(".stage-controls button[data-act=next]").click()
            page.wait_for_timeout(before_report * 1000)
            page.get_by_role("button", name="Reveal the answer").click()
            page.get_by_text(re.compile(r"The answer: ")).first.wait_for()
    finally:
        context.close()
