"""The replay stage in Chromium: laid out once, stepped in the browser, keys and clickers, one screen on a
projector, and a replay saved as one HTML file that plays offline."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from course.programs import PROGRAMS, record_program

from .conftest import by_event, download, screenshot
from .harness import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser
NODES = ".stage svg g.node"
CAPTION = ".stage-caption"


def open_stage(page, url: str, program: str = "seed") -> int:
    page.goto(f"{url}/traversal?program={program}&event=1")
    page.locator(NODES).first.wait_for()
    by_event(page)
    page.locator(CAPTION).filter(has_text="Event 1 of").wait_for()
    return len(record_program(program).recorder.events)


def steps_of(program: str) -> int:
    """Presses of the stage from first to last, step by step: before the first step, each step, the cleanup."""
    return sum(type(e).__name__ == "StepStarted" for e in record_program(program).recorder.events) + 2


def event_shown(page) -> int:
    return int(re.match(r"Event (\d+) of", page.locator(CAPTION).inner_text()).group(1))


def positions(page) -> list[list[object]]:
    """Each node's box in the picture's own coordinates (what Graphviz laid out)."""
    return page.locator(NODES).evaluate_all(
        "gs => gs.map(g => { const b = g.getBBox(); return [g.id, b.x, b.y, b.width, b.height]; })"
    )


DEJAVU_ONLY = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>/usr/share/fonts/truetype/dejavu</dir><cachedir>{cache}</cachedir></fontconfig>
"""
LABELS_OUTSIDE = """gs => gs.flatMap(g => {
  const box = g.querySelector('path, polygon').getBoundingClientRect();
  return [...g.querySelectorAll('text')].filter(t => t.textContent.trim()).filter(t => {
    const r = t.getBoundingClientRect();
    return r.left < box.left - 0.5 || r.right > box.right + 0.5;
  }).map(t => t.textContent);
})"""


def test_labels_fit_their_boxes_in_the_apps_own_font_on_a_machine_with_debians_default_fonts_alone(
    browser, app_url, tmp_path
):
    # Graphviz sizes a box for Helvetica's widths; a machine with DejaVu alone (Debian's default) draws "Helvetica"
    # wider. The app serves the font with Helvetica's widths, so the labels fit there too; without it they would not
    conf = tmp_path / "fonts.conf"
    conf.write_text(DEJAVU_ONLY.format(cache=tmp_path / "cache"))
    dejavu_only = browser.browser_type.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, env={**os.environ, "FONTCONFIG_FILE": str(conf)}
    )
    try:
        outside: dict[bool, list[str]] = {}
        for served in (True, False):
            context = dejavu_only.new_context(viewport={"width": 1440, "height": 900})
            if not served:
                context.route("**/*.ttf", lambda route: route.abort())
            page = context.new_page()
            page.goto(f"{app_url}/traversal?program=mlp")
            page.locator(NODES).first.wait_for()
            in_font = page.evaluate("() => document.fonts.check('12px \"Autodiff Graph Sans\"')")
            assert in_font is served
            outside[served] = page.locator(NODES).evaluate_all(LABELS_OUTSIDE)
            context.close()
    finally:
        dejavu_only.close()
    assert outside[True] == [] and outside[False], outside  # the served font is what makes them fit


def test_every_control_and_key_steps_the_replay(page, app_url):
    total = open_stage(page, app_url)
    assert page.locator(NODES).count() == len(record_program("seed").before.nodes)
    for key, expected in [
        ("ArrowRight", 2),
        ("PageDown", 3),
        ("ArrowLeft", 2),
        ("PageUp", 1),
        ("End", total),
        ("Home", 1),
    ]:
        page.keyboard.press(key)
        assert event_shown(page) == expected, key
    for label, expected in [("Next ▶", 2), ("Last »", total), ("◀ Prev", total - 1), ("« First", 1)]:
        page.locator(".stage-controls button", has_text=label).click()
        assert event_shown(page) == expected, label
    page.locator(".stage-scrub").evaluate("(el) => { el.value = '10'; el.dispatchEvent(new Event('input')); }")
    assert event_shown(page) == 10
    page.keyboard.press(" ")  # Space: play
    page.locator(".stage-play", has_text="Pause").wait_for()
    page.locator(".stage .flow-dot").first.wait_for(state="attached")  # a gradient travels along its edge
    page.wait_for_timeout(1800)
    page.keyboard.press(" ")  # and pause
    page.locator(".stage-play", has_text="Play").wait_for()
    assert event_shown(page) > 10
    screenshot(page, "stage_seed")


def _settled(page, sent: list[str], quiet_ms: int = 1000, timeout_ms: int = 20_000) -> None:
    """Wait for a second without a frame sent (the page's own first runs; a loaded machine sends them late)."""
    waited = quiet = 0
    seen = len(sent)
    while waited < timeout_ms and quiet < quiet_ms:
        page.wait_for_timeout(250)
        waited += 250
        quiet = 0 if len(sent) != seen else quiet + 250
        seen = len(sent)
    assert quiet >= quiet_ms, f"the page never went quiet: {len(sent)} frames sent"


def test_positions_never_move_and_steps_cost_the_server_nothing(page, app_url):
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append("frame")))
    total = open_stage(page, app_url, "mlp")
    _settled(page, sent)  # the page settles: nothing sent for a second
    before = positions(page)
    sent.clear()
    for _ in range(total - 1):
        page.keyboard.press("ArrowRight")
    assert event_shown(page) == total
    assert positions(page) == before  # laid out once: every node where it was
    page.wait_for_url(re.compile(rf"event={total}\b"))  # once stepping stops, the stage writes the link itself
    assert sent == []  # and sends the server nothing, while stepping or after (tests/browser/test_stage_press_cost.py)


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize(("width", "height", "presenter"), [(1440, 900, False), (1280, 720, True)])
def test_one_stage_per_screen_with_the_whole_graph(browser, app_url, program, width, height, presenter):
    # every node in the box and the window at every step; the small programs readable as they open (12 px, 16 px
    # on a projector), every program after one press of + at the most, which keeps the running node in view
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{app_url}/traversal?program={program}" + ("&present=1" if presenter else ""))
        page.locator(NODES).first.wait_for()
        page.wait_for_timeout(800)
        if presenter:
            main = page.locator("[data-testid='stMainBlockContainer']").bounding_box()
            assert main["x"] <= 40, main  # the whole width: no band where the sidebar was
            assert page.locator(".stage").first.bounding_box()["x"] <= 40
        smallest = 16 if presenter else 12
        if program in ("seed", "shared", "neuron"):
            assert settled_text_height(page) >= smallest - 0.05
        legend = page.locator(".stage-legend").bounding_box()
        for _ in range(steps_of(program)):
            assert whole_graph(page), page.locator(CAPTION).inner_text()
            assert page.locator(".stage-legend").bounding_box() == legend  # never moves, never resizes the graph
            page.keyboard.press("ArrowRight")
        for part in (".stage-svg", ".stage-controls", CAPTION, ".stage-step", ".stage-legend"):
            box = page.locator(part).bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 60) <= height + 1, (part, box)
        if program not in ("seed", "shared"):
            page.keyboard.press("Home")
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            page.keyboard.press("+")
            page.wait_for_timeout(500)
            assert running_node_in_view(page)
        assert settled_text_height(page) >= smallest - 0.05
        screenshot(page, f"stage_{program}_{width}x{height}")
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), [(1024, 768), (1280, 800), (1366, 768), (1440, 900)])
def test_the_seed_opens_whole_and_readable_on_smaller_screens(browser, app_url, width, height):
    # the seed, without presenter mode: every node in its box and the window, no label under 12 px, no zoom button
    # over a node, before any press (every lesson's graph at 1440x900: test_picture)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        for address in ("traversal?program=seed",):
            page.goto(f"{app_url}/{address}")
            page.locator(NODES).first.wait_for(timeout=60_000)
            page.wait_for_timeout(800)
            assert boxes_inside(page), (address, width)
            heights = page.locator(f"{NODES} text").evaluate_all(
                "ts => ts.filter(t => t.textContent.trim())"
                ".map(t => parseFloat(getComputedStyle(t).fontSize) * Math.abs(t.getScreenCTM().d))"
            )
            assert min(heights) >= 12 - 0.05, (address, width, min(heights))
            zoom = page.locator(".stage-zoom").bounding_box()
            for node in page.locator(f"{NODES} > :is(path, polygon):first-of-type").all():
                box = node.evaluate("e => e.getBoundingClientRect().toJSON()")
                across = box["x"] < zoom["x"] + zoom["width"] and zoom["x"] < box["x"] + box["width"]
                down = box["y"] < zoom["y"] + zoom["height"] and zoom["y"] < box["y"] + box["height"]
                assert not (across and down), (address, width, box, zoom)
        screenshot(page, f"stage_seed_{width}x{height}_open")
    finally:
        context.close()


def settled_text_height(page, timeout_ms: int = 10_000) -> float:
    """The smallest graph text's height on screen in px, once the served fonts are in and the stage has stopped
    refitting (content above it arriving late on a busy machine moves it, and it fits the rest of the screen again)."""
    page.evaluate("document.fonts.ready.then(() => true)")
    script = (
        "ts => Math.min(...ts.filter(t => t.textContent.trim())"
        ".map(t => parseFloat(getComputedStyle(t).fontSize) * Math.abs(t.getScreenCTM().d)))"
    )
    previous, waited = None, 0
    while True:
        smallest = page.locator(f"{NODES} text").evaluate_all(script)
        if smallest == previous or waited >= timeout_ms:
            return smallest
        previous, waited = smallest, waited + 250
        page.wait_for_timeout(250)


def boxes_inside(page) -> bool:
    """Every node's box (its shape, not the text Graphviz measured in its own font) inside the graph's box and the
    window."""
    return page.locator(".stage-svg").first.evaluate(
        """box => {
          const b = box.getBoundingClientRect();
          return [...box.querySelectorAll('g.node')].every(g => {
            const r = g.querySelector('path, polygon').getBoundingClientRect();
            return r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1
              && r.top >= -1 && r.bottom <= innerHeight + 1 && r.left >= -1 && r.right <= innerWidth + 1;
          });
        }"""
    )


def whole_graph(page) -> bool:
    """Every node inside the graph box and inside the window: nothing cropped, nothing scrolled away."""
    return page.locator(".stage-svg").first.evaluate(
        """box => {
          const b = box.getBoundingClientRect();
          return [...box.querySelectorAll('g.node')].every(g => {
            const r = g.querySelector('path, polygon').getBoundingClientRect();  // the box, not Graphviz's text
            return r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1
              && r.top >= -1 && r.bottom <= innerHeight + 1 && r.left >= -1 && r.right <= innerWidth + 1;
          });
        }"""
    )


def running_node_in_view(page) -> bool:
    return page.locator(".stage-svg").first.evaluate(
        """box => {
          const g = box.querySelector('g.node.s-current'), b = box.getBoundingClientRect();
          if (!g) return false;
          const r = g.getBoundingClientRect();
          return r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
        }"""
    )


def test_the_saved_replay_plays_offline_from_one_file(browser, page, app_url, tmp_path):
    open_stage(page, app_url, "neuron")
    saved = tmp_path / "replay.html"
    download(page, "Download this replay (HTML)").save_as(saved)
    context = browser.new_context()
    blocked: list[str] = []

    def only_the_file(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        blocked.append(route.request.url)
        return route.abort()

    context.route("**/*", only_the_file)
    offline = context.new_page()
    try:
        offline.goto(Path(saved).as_uri())
        offline.locator("svg g.node").first.wait_for(timeout=30_000)
        offline.keyboard.press("End")
        steps = steps_of("neuron")
        offline.locator(CAPTION).filter(has_text=f"Step {steps} of {steps}").wait_for()
        offline.locator(".stage-code .line", has_text="out = (w @ x + b).tanh()").wait_for()  # the program, too
        assert blocked == []  # it asked the network for nothing
        screenshot(offline, "stage_saved_replay")
    finally:
        context.close()


@pytest.mark.parametrize("program", ["seed", "mlp"])
def test_the_container_table_after_every_event_matches_the_engine(page, app_url, program):
    from autodiff.stage.format import format_values
    from autodiff.stage.narration import short_names

    total = open_stage(page, app_url, program)
    run = record_program(program)
    for index in range(total):
        if index:
            page.keyboard.press("ArrowRight")
        expected = run.recorder.container_after(index)
        box = page.locator(".stage-container")
        if not expected:
            assert "container is empty" in box.inner_text()
            continue
        rows = box.locator(".grad-body [role=row]").evaluate_all(
            "rs => rs.map(r => [...r.children].map(c => c.textContent))"
        )
        shown = [[format_values(v), str(list(np.shape(v)))] for _, v in sorted(expected.items())]
        assert [row[1:3] for row in rows] == shown, index  # the gradient, and its shape apart
        names = short_names(run.before.nodes, run.names)
        assert [row[0] for row in rows] == [names[int(i)] for i in sorted(expected)], index


def test_a_thousand_node_playground_graph_steps_without_freezing(page, app_url):
    from .test_playground_load import run_in

    program = (
        "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\ny = x\nfor i in range(500):\n"
        "    y = y * 1.0 + x\nloss = y.sum()\ng = loss.backward()\n"
    )
    run_in(page, app_url, program)
    page.locator(NODES).first.wait_for(timeout=60_000)
    by_event(page)
    boxes = page.locator(NODES).count()
    assert 0 < boxes <= 48  # folded into the program's parts: the loop, its iterations in ranges
    page.get_by_role("button", name=re.compile(r"^for i in range\(500\): ")).wait_for()
    assert page.get_by_text("order bucket").count() == 0
    caption = page.locator(CAPTION)
    total = int(re.search(r"of (\d+)", caption.inner_text()).group(1))
    assert total > 3000
    page.keyboard.press("End")
    caption.filter(has_text=f"Event {total} of {total}").wait_for(timeout=10_000)
    for _ in range(20):
        page.keyboard.press("ArrowLeft")
    caption.filter(has_text=f"Event {total - 20} of {total}").wait_for(timeout=10_000)
    screenshot(page, "stage_thousand_nodes")
