"""What the picture says, in Chromium: numbers and names on the nodes, states that match the lesson, edge labels clear
of nodes, text large enough on a laptop, a projector and a phone, and the keyboard always driving the stage."""

from __future__ import annotations

import statistics
import time

import pytest

from course.programs import PROGRAMS, record_program

from .conftest import by_event, screenshot
from .test_lessons import run_growth
from .test_playground_load import run_in

pytestmark = pytest.mark.browser
NODES = ".stage svg g.node"
CAPTION = ".stage-caption"
PLAYGROUND = "\n".join(
    [
        "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()",
        "h = x * x",
        "loss = (h + x * 3.0).sum()",
        "g = loss.backward()",
        "",
    ]
)


def open_replay(page, url: str, program: str = "seed", extra: str = "") -> int:
    page.goto(f"{url}/traversal?program={program}&event=1{extra}")
    page.locator(NODES).first.wait_for()
    by_event(page)
    page.locator(CAPTION).filter(has_text="Event 1 of").wait_for()
    return len(record_program(program).recorder.events)


def node_texts(page) -> dict[str, list[str]]:
    """Each node's lines of text, by its title."""
    rows = page.locator(NODES).evaluate_all(
        "gs => gs.map(g => [...g.querySelectorAll('text')].map(t => t.textContent))"
    )
    return {lines[0]: lines for lines in rows}


def node_class(page, title: str) -> str:
    return page.locator(NODES).filter(has_text=title).first.get_attribute("class")


def text_sizes(page, selector: str = ".stage") -> list[float]:
    """The rendered height in CSS px of every visible text of the stage: SVG text by its screen box, HTML text by
    its computed font size."""
    return page.locator(selector).first.evaluate(
        """root => {
          const sizes = [];
          root.querySelectorAll('svg text').forEach(t => {
            if (!t.textContent.trim() || t.closest('.chip-swatch')) return;
            const ctm = t.getScreenCTM();
            sizes.push(parseFloat(getComputedStyle(t).fontSize) * Math.abs(ctm ? ctm.d : 1));
          });
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          while (walker.nextNode()) {
            const el = walker.currentNode.parentElement;
            if (!walker.currentNode.textContent.trim() || el.closest('svg') || el.closest('details:not([open])')
                || el.tagName === 'OPTION' || el.offsetParent === null) continue;
            sizes.push(parseFloat(getComputedStyle(el).fontSize));
          }
          return sizes;
        }"""
    )


def graph_text_sizes(page) -> list[float]:
    return page.locator(".stage .stage-svg").first.evaluate(
        """box => [...box.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t =>
             parseFloat(getComputedStyle(t).fontSize) * Math.abs(t.getScreenCTM().d))"""
    )


def test_nodes_carry_values_gradients_and_names_students_use(page, app_url):
    total = open_replay(page, app_url)
    texts = node_texts(page)
    assert {"x", "unused", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"} <= set(texts)
    assert "value [1.0, 2.0]" in texts["x"] and "value [1.0, 4.0]" in texts["h = x·x"]
    detail = page.locator(".stage").first.evaluate("root => !root.classList.contains('no-detail')")
    assert detail == any("NodeId(2)" in line for line in texts["h = x·x"])  # Burn's id, smaller, where it fits
    page.keyboard.press("End")
    page.locator(CAPTION).filter(has_text=f"Event {total} of").wait_for()
    texts = node_texts(page)
    assert "grad [5.0, 7.0] · kept" in texts["x"]
    assert "grad [1.0, 1.0] · consumed" in texts["h = x·x"]
    # the last frame says what the lesson says: x keeps its gradient, unused never got one
    assert "s-leaf" in node_class(page, "value [1.0, 2.0]")
    assert "s-unreached" in node_class(page, "unused")
    assert "not reached: no gradient" in texts["unused"]
    legend = page.locator(".stage-legend").inner_text()
    assert (
        "asked for its gradient" in legend and "not reached" in legend and "running now" in legend
    )  # what this replay shows
    assert "recomputed" not in legend and "abandoned" not in legend  # and nothing it never shows
    screenshot(page, "picture_seed_end")


def test_edge_labels_sit_clear_of_every_node(page, app_url):
    for program in PROGRAMS:
        total = open_replay(page, app_url, program)
        page.keyboard.press("End")
        page.locator(CAPTION).filter(has_text=f"Event {total} of").wait_for()
        overlaps = page.locator(".stage svg").first.evaluate(
            """svg => {
              const boxes = [...svg.querySelectorAll('g.node')].map(g => g.getBoundingClientRect());
              const bad = [];
              svg.querySelectorAll('g.edge text').forEach(t => {
                if (!t.textContent) return;
                const r = t.getBoundingClientRect();
                for (const b of boxes) {
                  if (r.left < b.right - 1 && r.right > b.left + 1 && r.top < b.bottom - 1 && r.bottom > b.top + 1) {
                    bad.push(t.textContent);
                  }
                }
              });
              return bad;
            }"""
        )
        assert overlaps == [], (program, overlaps)
        labels = page.locator(".stage svg g.edge text").evaluate_all("ts => ts.map(t => t.textContent)")
        between_nodes = page.locator(".stage svg g.edge[id^='e']").count()  # not into or out of a folded part
        assert [label for label in labels if label] or not between_nodes, program  # the values sent are shown


# the programs that open folded into their parts with the weights each part uses drawn beside it (issue 53), and the
# smallest text each reaches whole at open at 1440x900, below 12 px: 11.5 and 9.3 px (10.0 and 7.1 before a folded
# view said its numbers short and laid its weights beside their parts). Ten boxes of numbers and nine labels do not fit
# the graph's half of a laptop's screen at 12 px; opening a part zooms it to 12 px or more (test_stage_screen.py).
# Whole and small was chosen over readable and cropped
FOLDED_WITH_WEIGHTS = {"mlp": 11.2, "mlp3": 9.0}


def test_graph_text_is_at_least_12px_whole_at_once(page, app_url):
    # every graph of the lessons is whole and readable as it opens, with no press of + (a large one folds into
    # its parts: Memory growth's 81 nodes into its passes)
    page.set_viewport_size({"width": 1440, "height": 900})
    for program in PROGRAMS:
        open_replay(page, app_url, program)
        if program in FOLDED_WITH_WEIGHTS:
            page.locator(".stage .stage-svg g.node.group").first.wait_for()
            readable(page, at_once=True, name=program, smallest=FOLDED_WITH_WEIGHTS[program])
            continue
        readable(page, at_once=True, name=program)
    for path in ("/tape", "/checkpoints", "/gradients", "/mlx"):
        page.goto(f"{app_url}{path}")
        page.locator(NODES).first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        readable(page, at_once=True, name=path)
    page.goto(f"{app_url}/memory")
    run_growth(page)  # 81 nodes after 20 passes
    readable(page, at_once=True, name="memory")
    run_in(page, app_url, PLAYGROUND)
    page.locator(CAPTION).first.wait_for(timeout=60_000)
    readable(page, at_once=True, name="play")
    assert page.locator(".stage").count() == 1  # the Playground shows its graph once


def readable(page, at_once: bool, name: str, smallest: float = 12) -> None:
    """Every node inside the stage's graph box; text at least `smallest` px, at once or after one press of +."""
    page.locator(".stage .stage-svg g.node").first.wait_for(timeout=60_000)
    assert whole_graph_shown(page), name
    if not at_once:
        page.locator(".stage [data-act='zoomIn']").first.click()
        page.wait_for_timeout(200)
    sizes = graph_text_sizes(page)
    assert sizes and min(sizes) >= smallest - 0.05, (name, min(sizes))


def whole_graph_shown(page) -> bool:
    """Every node of the stage's graph inside its box and inside the window (fitted: nothing cropped), once the
    box is scrolled into the window."""
    return page.locator(".stage .stage-svg").first.evaluate(
        """box => {
          box.scrollIntoView({block: 'nearest'});
          const b = box.getBoundingClientRect();
          return [...box.querySelectorAll('g.node')].every(g => {
            const r = g.getBoundingClientRect();
            return r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1
              && r.top >= 0 && r.bottom <= innerHeight + 1 && r.left >= 0 && r.right <= innerWidth + 1;
          });
        }"""
    )


def test_presenter_mode_is_legible_on_one_screen_and_survives_a_reload(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_replay(page, app_url, extra="&present=1")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    sizes = text_sizes(page)
    assert min(sizes) >= 16 - 0.05, min(sizes)
    assert statistics.median(sizes) >= 20 - 0.05, statistics.median(sizes)
    for part in (".stage-svg", ".stage-step", ".stage-container", ".stage-legend"):
        box = page.locator(f".stage {part}").first.bounding_box()
        assert box["y"] >= 0 and box["y"] + min(box["height"], 40) <= 720, part  # each starts on the screen
    stage = page.locator(".stage").first.bounding_box()
    assert stage["y"] + stage["height"] <= 720 + 1
    page.locator("[data-testid='stMain']").evaluate("main => main.scrollTo(0, 0)")  # the stage came up: go back
    page.wait_for_timeout(200)
    title = page.get_by_role("heading", name="Backward traversal").bounding_box()
    header = page.locator("header[data-testid='stHeader']").bounding_box()
    assert title["y"] >= header["y"] + header["height"] - 1  # the title is not under the toolbar
    code = page.locator(".stage-code").first.evaluate("block => parseFloat(getComputedStyle(block).fontSize)")
    assert code >= 20, code  # the program beside the graph, read from the back of the room too
    screenshot(page, "picture_presenter")
    page.reload()
    page.locator(".stage.presenter").first.wait_for()
    assert "present=1" in page.url


def test_a_phone_stacks_the_stage_without_nested_scrolling(page, app_url):
    page.set_viewport_size({"width": 390, "height": 844})
    open_replay(page, app_url)
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    graph = page.locator(".stage .stage-svg").first.bounding_box()
    side = page.locator(".stage .stage-side").first.bounding_box()
    assert side["y"] >= graph["y"] + graph["height"] - 1  # stacked
    stage = page.locator(".stage").first.bounding_box()
    assert graph["width"] >= stage["width"] - 2  # the graph takes the width
    nested = page.locator(".stage").first.evaluate(
        """root => [...root.querySelectorAll('.stage-svg, .stage-side, .stage-step, .stage-container')]
             .filter(el => el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1)
             .map(el => el.className)"""
    )
    assert nested == []
    screenshot(page, "picture_phone")


def test_the_keyboard_steps_the_stage_after_a_widget_change_and_the_height_holds(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    open_replay(page, app_url)
    page.get_by_label("Program").click()  # choose another program with the select box: focus stays in it
    page.get_by_role("option", name="Neuron: tanh(w @ x + b)").click()
    total = len(record_program("neuron").recorder.events)
    page.locator(CAPTION).filter(has_text=f"Event 1 of {total}.").wait_for()
    page.wait_for_timeout(800)
    page.keyboard.press("PageDown")
    page.locator(CAPTION).filter(has_text=f"Event 2 of {total}.").wait_for()
    page.keyboard.press("ArrowRight")
    page.locator(CAPTION).filter(has_text=f"Event 3 of {total}.").wait_for()
    height = page.locator(".stage").first.bounding_box()["height"]
    page.mouse.wheel(0, 400)  # scrolled, then a rerun (the exercise toggle)
    page.wait_for_timeout(300)
    page.get_by_text("Exercise: predict each step").click()
    page.wait_for_timeout(1500)
    assert abs(page.locator(".stage").first.bounding_box()["height"] - height) < 1
    page.keyboard.press("PageDown")
    page.locator(CAPTION).filter(has_text=f"Event 4 of {total}.").wait_for()


def test_checkpointing_marks_each_recomputation_on_the_graph(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{app_url}/checkpoints")
    page.locator(NODES).first.wait_for(timeout=60_000)
    by_event(page)
    page.locator(CAPTION).filter(has_text="Event 1 of").wait_for()
    run = record_program("chain", checkpointing="balanced")
    first = next(k for k, e in enumerate(run.recorder.events) if type(e).__name__ == "Recomputed")
    for _ in range(first):
        page.keyboard.press("ArrowRight")
    page.locator(CAPTION).filter(has_text="recomputed now").wait_for()
    assert page.locator(".stage svg g.node.s-recomputed").count() == 1
    assert whole_graph_shown(page)
    page.keyboard.press("+")  # readable one key away, the running step kept in view
    page.wait_for_timeout(400)
    sizes = graph_text_sizes(page)
    assert min(sizes) >= 12 - 0.05
    # the running step's box: its own, or the folded part it runs in, which wears the recomputation's look meanwhile
    assert in_box(page, ".stage svg g.node.s-current, .stage svg g.node.group.s-recomputed")
    screenshot(page, "picture_checkpointing")


def test_the_replay_is_narrated_and_its_controls_say_their_state(page, app_url):
    total = open_replay(page, app_url)
    run = record_program("seed")
    region = page.locator(".stage-caption[aria-live='polite']")
    assert region.count() == 1
    page.keyboard.press("ArrowRight")
    assert region.inner_text() == f"Event 2 of {total}. backward() seeds loss with ones of its shape: [1.0]."
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert "loss sends [1.0, 1.0] to h + x·3: a new entry in the container." in region.inner_text()
    page.keyboard.press("ArrowLeft")
    assert region.inner_text().startswith(f"Event 4 of {total}. The step of loss consumes its gradient")
    scrub = page.get_by_role("slider", name="Event")
    assert scrub.get_attribute("aria-valuetext") == f"event 4 of {total}"
    play = page.locator(".stage-play")
    assert play.get_attribute("aria-pressed") == "false"
    play.click()
    page.locator(".stage-play[aria-pressed='true']").wait_for()
    page.keyboard.press(" ")
    page.locator(".stage-play[aria-pressed='false']").wait_for()
    # the graph in words: every node with its value, gradient and state, for a screen reader
    page.get_by_text("The graph as a table").click()
    rows = page.locator(".stage-table tbody tr").evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert len(rows) == len(run.before.nodes)
    by_name = {row[0]: row for row in rows}
    assert by_name["x"][2] == "[1.0, 2.0]" and by_name["h = x·x"][1] == "NodeId(2) · mul"
    page.keyboard.press("End")
    page.locator(".stage-table td", has_text="grad [5.0, 7.0] · kept").wait_for()


def test_reduced_motion_stops_the_travelling_gradient(browser, app_url):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, reduced_motion="reduce")
    page = context.new_page()
    try:
        open_replay(page, app_url)
        page.evaluate("""() => { window.__dots = 0; new MutationObserver(() => {
          const host = [...document.querySelectorAll('*')].find(el => el.shadowRoot?.querySelector('.stage'));
          if (host && host.shadowRoot.querySelector('.flow-dot')) window.__dots++; }).observe(document.body,
          { subtree: true, childList: true, attributes: true }); }""")
        for _ in range(8):
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(100)
        assert page.locator(".stage .flow-dot").count() == 0
        assert page.locator(".stage g.edge.flow").count() >= 1  # the edge still says where it goes
    finally:
        context.close()


def in_box(page, selector: str) -> bool:
    """Whether the stage's element `selector` lies inside the graph box (zoomed in, it scrolls to show it)."""
    return page.locator(".stage .stage-svg").first.evaluate(
        """(box, selector) => {
          const b = box.getBoundingClientRect(), g = box.querySelector(selector);
          if (!g) return false;
          const r = g.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
          const whole = r.left >= b.left - 1 && r.right <= b.right + 1
            && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
          // a node wider than the box itself (12 values on a line) is in view when the box is on its middle
          return whole || (r.width > b.width && x >= b.left && x <= b.right && y >= b.top && y <= b.bottom);
        }""",
        selector.replace(".stage svg ", "svg "),
    )


def comes_into_box(page, selector: str, seconds: float = 10.0) -> bool:
    """Whether the stage's element `selector` is inside the graph box once the box has scrolled to it (smoothly: from
    an opened part's corner back to the running step takes a moment, longer on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while not in_box(page, selector):
        if time.monotonic() > deadline:
            return False
        page.wait_for_timeout(100)
    return True
