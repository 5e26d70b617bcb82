"""What a person sees: the real app in headless Chromium."""

from __future__ import annotations

import re

import pytest

from autodiff.stage import replay_payload
from course.programs import PROGRAMS, record_program
from ui.navigation import LESSONS

from .conftest import screenshot

pytestmark = pytest.mark.browser

HEADINGS = {  # each page's first heading, as the page writes it
    "": "Seeing reverse-mode autodiff",
    "traversal": "Backward traversal",
    "gradients": "Gradient consumption",
    "tape": "Tape consumption",
    "memory": "Memory growth",
    "policies": "Memory policies: Burn vs PyTorch",
    "checkpoints": "Checkpointing",
    "training": "Training",
    "mlx": "Check against MLX",
    "play": "Playground",
    "class": "Class",
}
SIDEBAR = '[data-testid="stSidebar"]'

ERROR = '[data-testid="stAlertContentError"]'
STAGE_NODES = ".stage svg g.node"  # every graph of the app is drawn by the stage


def open_page(page, app_url: str, path: str) -> None:
    page.goto(f"{app_url}/{path}")
    page.get_by_role("heading", name=HEADINGS[path.split("?")[0]]).first.wait_for()
    page.wait_for_load_state("networkidle")


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_registry_and_the_headings_name_the_same_pages():
    assert sorted(lesson.url_path for lesson in LESSONS) == sorted(HEADINGS)


def test_a_selected_code_block_is_its_source(page, app_url):
    """What a copy takes: the program exactly, with its blank line, indents and no wrapped-row breaks."""
    open_page(page, app_url, "gradients")
    block = page.locator(".code-block").first
    block.wait_for()
    selected = block.evaluate("el => { getSelection().selectAllChildren(el); return getSelection().toString(); }")
    assert selected == PROGRAMS["seed"].source + '\ngrads = seed_program(ad)["loss"].backward()'


def test_replay_graph_and_stepping_to_the_end(page, app_url):
    open_page(page, app_url, "traversal?program=seed&event=1")
    nodes = page.locator(STAGE_NODES)
    nodes.first.wait_for()
    assert nodes.count() == 6  # x, unused, h, x*3, add, loss
    presses = 0
    while "Step 7 of 7" not in page.locator(".stage-caption").inner_text():  # a press per step of the tape
        page.locator(".stage-controls button", has_text="Next").click()
        presses += 1
        assert presses <= 7
    assert page.locator(f"{STAGE_NODES}.s-consumed").count() == 4  # every op step on the tape ran
    assert page.locator(f"{STAGE_NODES}.s-leaf").count() == 1  # and x keeps its gradient
    page.wait_for_url(re.compile(r"event=25"))
    page.locator(".stage-by").select_option("event")  # the detail: a press per event
    page.locator(".stage-controls button", has_text="First").click()
    page.locator(".stage-controls button", has_text="Next").click()
    page.locator(".stage-caption", has_text="Event 2 of 25").wait_for()
    no_exception(page)
    screenshot(page, "backward_traversal_end")


def test_shared_link_restores_program_and_event(page, app_url):
    open_page(page, app_url, "traversal?program=mlp&event=11")
    page.locator(".stage-caption", has_text="Event 11 of").wait_for()
    drawn = page.locator(STAGE_NODES).count()  # its statements folded into parts, each a box
    assert 1 < drawn <= len(record_program("mlp").before.nodes)
    assert page.locator(f"{STAGE_NODES}.s-current").count() == 1
    screenshot(page, "backward_traversal_mlp")


def test_every_deep_link_opens_with_the_frame_on_a_fresh_server(browser, fresh_app_url):
    # Streamlit runs a `pages/` folder next to app.py as legacy pages, without app.py, until some session
    # has run st.navigation. Every lesson sits in a section folder under pages/ (no legacy address), and
    # pages/<url_path>.py stand-ins run app.py, so each deep link gets the frame even as the first request.
    first = True
    for lesson in LESSONS:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(30_000)
        open_page(page, fresh_app_url, lesson.url_path)
        page.locator(SIDEBAR).get_by_text("Presenter mode").wait_for()  # the frame ran
        page.wait_for_load_state("networkidle")
        assert page.locator('[role="dialog"]').count() == 0  # no "Page not found" on the way
        nav = page.locator(SIDEBAR).inner_text()  # the frame's own links (ui/navigation.py: sidebar_links)
        for section in ("Backward", "Memory", "Check and play"):
            assert section.upper() in nav.upper()
        assert all(other.title in nav for other in LESSONS)
        if first:
            screenshot(page, "deep_link_first_visit")
            first = False
        context.close()


def test_legacy_file_stem_links_never_show_a_page_without_the_frame(browser, fresh_app_url):
    for lesson in LESSONS:
        stem = lesson.path.rsplit("/", 1)[1].removesuffix(".py")
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{fresh_app_url}/{stem}")
        page.locator(SIDEBAR).get_by_text("Presenter mode").wait_for()  # the frame ran: Home, or a not-found note
        page.wait_for_load_state("networkidle")
        assert page.locator('[data-testid="stException"]').count() == 0
        context.close()


def test_check_against_mlx_shows_green_nodes(page, app_url):
    open_page(page, app_url, "mlx")
    page.get_by_text("gradients agree").wait_for()
    page.locator(STAGE_NODES).first.wait_for()
    run = record_program("seed")
    tracked = sum(1 for n in run.before.nodes if n.requirement.is_tracked and run.names.get(int(n.id)) != "unused")
    page.locator(".stage svg g.node.s-agrees").nth(tracked - 1).wait_for()
    assert page.locator(".stage svg g.node.s-agrees").count() == tracked
    assert page.locator(".stage svg g.node.s-differs").count() == 0
    assert "agrees with MLX" in page.locator(".stage-legend").inner_text()
    no_exception(page)
    screenshot(page, "check_mlx")


def metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label)
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def run_memory(page, app_url, mode: str) -> list[float]:
    open_page(page, app_url, "memory")
    page.get_by_text(mode, exact=True).click()
    page.get_by_role("button", name="Start").click()
    seen = []
    page.get_by_text("Forward passes").first.wait_for()
    for _ in range(200):
        page.wait_for_timeout(250)
        try:
            seen.append(float(metric(page, "Memory in use").split()[0]))
            if metric(page, "Forward passes").startswith("20 /"):
                break
        except Exception:  # the fragment is redrawing; read again
            continue
    page.wait_for_timeout(500)
    seen.append(float(metric(page, "Memory in use").split()[0]))
    no_exception(page)
    return seen


def test_memory_chart_rises_with_autodiff(page, app_url):
    seen = run_memory(page, app_url, "autodiff")
    assert seen[-1] == 41.0  # 1 MiB of x plus 2 MiB per abandoned graph, as in the seed
    assert len(set(seen)) > 3  # it rose live, in steps
    screenshot(page, "memory_growth_autodiff")
    page.get_by_role("button", name="Run one backward now").click()
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=stMetricValue]')].some(e => e.innerText == '1.0 MiB')"
    )


def test_memory_chart_flat_without_autodiff(page, app_url):
    seen = run_memory(page, app_url, "without_autodiff()")
    assert set(seen) == {1.0}
    screenshot(page, "memory_growth_without_autodiff")


def test_two_browser_contexts_are_isolated(browser, app_url):
    first, second = browser.new_context(), browser.new_context()
    try:
        a, b = first.new_page(), second.new_page()
        for p in (a, b):
            p.set_default_timeout(30_000)
            open_page(p, app_url, "tape")
        a.get_by_role("button", name="loss.backward()").click()
        a.get_by_text("x.grad(grads)").first.wait_for()  # the first backward ran, as the student sees
        a.get_by_role("button", name="loss.backward()").click()
        a.locator(ERROR).first.wait_for()
        assert "loss.backward() was refused" in a.locator(ERROR).first.inner_text()
        b.reload()
        b.get_by_role("heading", name="Tape consumption").wait_for()
        b.get_by_role("button", name="loss.backward()").click()
        b.get_by_text("x.grad(grads)").first.wait_for()  # b's first backward still works
        assert b.locator(ERROR).count() == 0
        no_exception(a)
        no_exception(b)
    finally:
        first.close()
        second.close()


def test_exercise_mode_in_the_browser(page, app_url):
    # the stage asks at each step, before it runs, with the local rule hidden; a wrong answer gets the chain rule
    # worked out in numbers, a right one is scored, and the score is the session's
    open_page(page, app_url, "traversal?program=seed")
    page.locator(STAGE_NODES).first.wait_for()
    page.get_by_text("Exercise: predict each step").click()
    page.locator(".stage-caption", has_text="Step 0 of").wait_for()
    page.wait_for_timeout(500)
    asked = []
    for _ in range(12):
        page.keyboard.press("ArrowRight")
        if page.locator(".stage-answer").count():
            caption = page.locator(".stage-caption").inner_text()
            asked.append(caption)
            if "step of h runs" in caption:
                break
            page.get_by_role("button", name="Reveal without answering").click()
    assert len(asked) == 4  # loss, h + x·3, x·3, then h = x·x
    step = page.locator(".stage-step")
    assert "rule" not in step.inner_text() and "∂" not in step.inner_text()  # hidden until answered
    inputs = page.locator(".stage-answer")
    assert inputs.count() == 2  # x·x sends to x once per operand
    inputs.nth(0).fill("2, 4")  # the usual slip: 2x, the whole derivative, on one path
    inputs.nth(1).fill("2, 4")
    page.get_by_role("button", name="Check my prediction").click()
    page.get_by_text("Not quite: you entered 2, 4; 2, 4").wait_for()
    assert step.locator(".card-input").count() == 2 and "[1.0, 2.0]" in step.inner_text()
    page.get_by_text("0 of 1 answered prediction right; 3 revealed without an answer").wait_for()
    page.keyboard.press("Home")
    for _ in range(12):  # every question was met once: none is asked again
        page.keyboard.press("ArrowRight")
        assert page.locator(".stage-answer").count() == 0
    no_exception(page)
    screenshot(page, "backward_traversal_exercise")


def test_an_exercise_answer_typed_with_the_minus_sign_is_read_as_negative(page, app_url):
    # the chain-rule cards print "−" (U+2212), and a student copies it: the stage reads "−0.67" as -0.67, as the
    # server's grading does (one grammar: tests/fixtures/answer_grammar.json)
    run = record_program("mlp")
    payload = replay_payload(run.before, run.recorder, run.names, source=PROGRAMS["mlp"].source, lines=run.lines)
    open_page(page, app_url, "traversal?program=mlp")
    page.locator(STAGE_NODES).first.wait_for()
    plain = re.search(r"Step 0 of (\d+)", page.locator(".stage-caption", has_text="Step 0 of").inner_text()).group(1)
    page.get_by_text("Exercise: predict each step").click()
    # the exercise is on once the stage counts its questions' stops too
    page.locator(".stage-caption", has_text=re.compile(rf"^Step 0 of (?!{plain}\.)\d+\.")).wait_for()
    answers = page.locator(".stage-answer")
    for _ in range(12):
        page.keyboard.press("ArrowRight")
        if answers.count():
            break
    asked = re.match(r"Step \d+ of \d+\. (.*) What will it send", page.locator(".stage-caption").inner_text())
    assert asked, "no question was asked"
    # what the asked step sends, input by input, as Python recorded it: typed with the cards' minus sign
    start = next(k for k, e in enumerate(payload["events"]) if e["kind"] == "StepStarted" and e["text"] == asked[1])
    node, sent = payload["events"][start]["node"], []
    for event in payload["events"][start + 1 :]:
        if event["kind"] == "StepStarted":
            break
        if event["kind"] == "GradientRegistered" and event["source"] == node:
            sent.append(event["numbers"])
    assert answers.count() == len(sent) and any(v < 0 for numbers in sent for v in numbers)  # a minus sign to type
    for box, numbers in zip(answers.all(), sent, strict=True):
        box.fill(", ".join(f"{v:.6g}".replace("-", "−") for v in numbers))
    page.get_by_role("button", name="Check my prediction").click()
    page.get_by_text("Right: every value matches.").wait_for()  # before: "Enter numbers separated by commas…"
    no_exception(page)
