"""The teacher's projector (issue 43): at 1280x720 in presenter mode, with the sidebar open and closed, the whole
graph, the answers' badge on the asked node, the room code and the question's controls are in view together through
a whole question (asked, discussed, asked again, revealed), with no scrolling. What it shows of the answers (issue
54): how many answered until the reveal, who is right after it; a second teacher device follows the room's phase."""

from __future__ import annotations

import re
import time

import pytest

from .class_student import form_drawn, send_answer
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
        page.get_by_text(re.compile(r"each of its 3 paths sends")).first.wait_for()  # the room's own numbers
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


RIGHT_OR_WRONG = re.compile(r"\bright\b|\bwrong\b|mistake|unchanged|local derivative", re.IGNORECASE)
# a send that is the same whatever the room's inputs: x·3 sends x its upstream [1, 1] times 3
QUESTION, RIGHT, WRONG = "What does the step of x·3 send to x?", "3, 3", "1, 1"  # wrong: the local derivative forgot


def marks_on_the_projector(page) -> list[str]:
    """Every sign of who is right the projector shows: a word (the page's text, the badge's), a bar marked right, bars
    in more than one colour (the beside-the-graph bars, the badge's), the teacher's own part. Empty before the
    reveal."""
    signs = RIGHT_OR_WRONG.findall(page.locator("body").inner_text() + page.locator("g.class-badge").inner_html())
    marked = page.locator(".class-bar.right, .class-badge-bar.right").count()
    signs += [f"{marked} bars marked right"] if marked else []
    for bars, colour in ((".class-bar-fill", "backgroundColor"), (".class-badge-bar", "fill")):
        colours = colours_of(page, bars, colour)
        signs += [f"{bars} in {sorted(colours)}"] if len(colours) > 1 else []
    return signs + (["the teacher's own part"] if page.locator(".class-own").count() else [])


def colours_of(page, bars: str, colour: str) -> set[str]:
    """The colours `bars` are drawn in; a bar the stage redrew while it was read (detached: no colour) is not one."""
    found = page.locator(bars).evaluate_all(f"els => els.map(e => e.isConnected ? getComputedStyle(e).{colour} : '')")
    return set(found) - {""}


def join_as_student(browser, join_url: str):
    page = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
    page.set_default_timeout(30_000)
    page.goto(join_url)
    page.get_by_role("button", name="Join").click()
    page.locator(".class-status", has_text="Following the teacher: ").wait_for()
    return page


def teacher_link_of_a_new_class(laptop, app_url: str) -> str:
    """Starts a class on `laptop` (not in presenter mode) and returns its private teacher link, from the sidebar.
    End the class is offered from the start (issue 54)."""
    laptop.goto(f"{app_url}/class")
    laptop.get_by_role("button", name="Start a class").click()
    laptop.locator(".class-status", has_text="0 students joined").wait_for()
    laptop.get_by_text("After the class: the report, the CSV, and ending the class").click()
    laptop.get_by_role("button", name="End the class").wait_for()
    laptop.locator("[data-testid=stSidebar]").get_by_text("Your teacher link (private)").click()
    return laptop.locator("[data-testid=stSidebar] [data-testid=stCode] code").inner_text().strip()


def test_the_projector_shows_who_answered_and_who_is_right_only_after_the_reveal(browser, app_url):
    """Issue 54: one right and one wrong answer; until the reveal the projector says how many answered (and, once
    vote 1 is closed and the teacher chooses it, vote 1's answers without a mark); after it, who is right. The class
    is started on the teacher's laptop and put on the projector by its private teacher link (in presenter mode): each
    of the two follows the room's phase, its controls appearing as the other moves the room on."""
    laptop = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    students = []
    for device in (laptop, page):
        device.set_default_timeout(30_000)
    try:
        link, key = teacher_link_of_a_new_class(laptop, app_url).split("#", 1)
        page.goto(f"{link}&present=1#{key}")  # the projector: presenter mode from its address
        page.locator(".class-status", has_text="0 students joined").wait_for()
        join_url = re.search(r"join at (\S+)", page.get_by_text(re.compile(r"join at ")).first.inner_text()).group(1)
        students = [join_as_student(browser, join_url) for _ in range(2)]
        page.locator(".class-status", has_text="2 students joined").wait_for()
        for _ in range(3):  # to the step before x·3's
            page.locator(".stage-controls button[data-act=next]").click()
        # a class's stage says a leaf is not reached only once the backward finished: a leaf question's own answer
        unused = page.locator(".stage svg g.node", has_text="unused")
        assert "no gradient yet" in unused.text_content() and "not reached" not in unused.text_content()
        choose(page, "Ask the room", QUESTION)
        page.get_by_role("button", name="Ask", exact=True).click()
        laptop.get_by_role("button", name="Close vote 1").wait_for()  # the laptop follows the projector's Ask
        laptop.get_by_role("button", name="Reveal the answer").wait_for()
        assert laptop.get_by_role("button", name="Ask", exact=True).count() == 0
        for student, text in zip(students, (RIGHT, WRONG), strict=True):
            form_drawn(student, 1).wait_for()
            send_answer(student, text)
        page.locator(".class-tally", has_text="Vote 1. In vote 1, 2 of 2 answered.").wait_for()
        assert page.locator("g.class-badge text").text_content() == "2 answered"
        assert page.locator(".class-bar, .class-badge-bar").count() == 0  # an open vote: no histogram either
        assert marks_on_the_projector(page) == []
        screenshot(page, "class_projector_vote_1")

        page.get_by_role("button", name="Close vote 1").click()
        page.locator(".class-tally", has_text="Discussion after vote 1. In vote 1, 2 of 2 answered.").wait_for()
        laptop.get_by_role("button", name="Vote again").wait_for()  # and its Close
        assert page.locator(".class-bar, .class-badge-bar").count() == 0 and marks_on_the_projector(page) == []
        page.get_by_text("Show the room vote 1's answers").click()  # the teacher's choice: the histogram, unmarked
        page.locator(".class-tally .class-bar").nth(1).wait_for()
        assert sorted(page.locator(".class-bar").all_inner_texts()) == [f"{WRONG}: 1", f"{RIGHT}: 1"]
        assert page.locator("g.class-badge .class-badge-bar").count() == 2
        assert marks_on_the_projector(page) == []
        everything_in_view(page, "Vote again", "Reveal the answer")

        laptop.get_by_role("button", name="Vote again").click()  # the other way round: the projector follows
        page.get_by_role("button", name="Vote again").wait_for(state="detached")  # the page drew vote 2's controls
        page.locator(".class-tally", has_text="Vote 2.").wait_for()
        page.get_by_role("button", name="Reveal the answer").wait_for()
        for student, text in zip(students, (RIGHT, WRONG), strict=True):
            form_drawn(student, 2).wait_for()
            send_answer(student, text)
        page.locator(".class-tally", has_text="Vote 2. In vote 2, 2 of 2 answered.").wait_for()
        assert marks_on_the_projector(page) == []

        laptop.get_by_role("button", name="Reveal the answer").click()
        tally = page.locator(".class-tally", has_text="Revealed. In vote 2, 2 of 2 answered, 1 right.")
        tally.wait_for()
        page.get_by_role("button", name="Ask", exact=True).wait_for()
        page.get_by_role("button", name="Reveal the answer").wait_for(state="detached")
        assert "Wrong answers show: 1 passed the upstream gradient on unchanged" in tally.inner_text()
        assert sorted(page.locator(".class-bar").all_inner_texts()) == [f"{WRONG}: 1", f"{RIGHT}: 1 (right)"]
        assert page.locator("g.class-badge text").text_content() == "2 answered · 1 right"
        assert page.locator(".class-bar.right").count() == page.locator(".class-badge-bar.right").count() == 1
        deadline = time.monotonic() + 15  # the badge is drawn anew with each tally: read once it stands
        while len(fills := colours_of(page, ".class-badge-bar", "fill")) != 2 and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert len(fills) == 2, fills  # the right answer's bar in its own colour
        everything_in_view(page, "Ask")
        screenshot(page, "class_projector_revealed")
        page.locator(".stage-controls button[data-act=last]").click()  # the backward's end: now it is said
        unused.filter(has_text="not reached: no gradient").wait_for()
    finally:
        for student in students:
            student.context.close()
        context.close()
        laptop.context.close()
