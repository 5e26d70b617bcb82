"""The stage as a student and a teacher use it (issue 26): a press per step, the whole graph with zoom and fit, the
program beside it with its running line lit, the stage alone in a slide's iframe, and the frame as SVG or PNG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autodiff.stage.payload import GRAPHVIZ_URL

from .conftest import screenshot
from .test_picture import comes_into_box, in_box, whole_graph_shown
from .test_playground_load import run_in

pytestmark = pytest.mark.browser
NODES = ".stage svg g.node"
CAPTION = ".stage-caption"
LOOP = (
    "w = Tensor.from_floats([0.5, -1.0], ad).require_grad()\n"
    "x = Tensor.from_floats([1.0, 2.0], ad)\n"
    "y = w * x\n"
    "for i in range(12):\n"
    "    y = (y * 0.9 + w).tanh()\n"
    "loss = y.sum()\n"
    "g = loss.backward()\n"
)


# The picture drawn now (`drawn`), and the one the pinned Graphviz lays out from `text` (the DOT saved): every box,
# frame and edge by its id with its outline's coordinates, and the whole picture's size. Graphviz is the page's own
# (`url`, the app's static file) or, with none, the one inlined in an exported page.
RELAID = """async (drawn, [text, url]) => {
  const inline = () => document.getElementById('graphviz-module').textContent;
  const source = url ? new URL(url, document.baseURI).href
    : URL.createObjectURL(new Blob([inline()], {type: 'text/javascript'}));
  const graphviz = await (await import(source)).Graphviz.load();
  const again = new DOMParser().parseFromString(graphviz.dot(text), 'image/svg+xml').documentElement;
  const at = (shape) => shape.getAttribute('d') || shape.getAttribute('points');  // the outline, not its paint
  const outline = (g) => [...g.querySelectorAll('path, polygon')].map(at);
  const shapes = (svg) => [...svg.querySelectorAll('g.node, g.cluster, g.edge')].map((g) => [g.id, ...outline(g)]);
  const sizes = [drawn, again].map((svg) => svg.getAttribute('viewBox'));
  return { drawn: shapes(drawn), again: shapes(again), sizes };
}"""
SAVE_DOT = "Save this picture's Graphviz source (DOT)"


def saved_dot(page, tmp_path: Path, graphviz_url: str | None) -> tuple[str, str]:
    """The stage's DOT download, pressed from the keyboard (its file's name and text), checked to be the picture
    drawn: Graphviz lays it out box for box, edge for edge, as the picture on the page."""
    page.get_by_role("button", name=SAVE_DOT).focus()
    with page.expect_download() as dot:
        page.keyboard.press("Enter")
    path = tmp_path / dot.value.suggested_filename
    dot.value.save_as(path)
    text = path.read_text()
    seen = page.locator(".stage-svg svg").evaluate(RELAID, [text, graphviz_url])  # in its shadow root, in the app
    assert len(seen["drawn"]) >= 3 and seen["again"] == seen["drawn"], "the DOT saved lays out as another picture"
    assert seen["sizes"][0] == seen["sizes"][1]
    return dot.value.suggested_filename, text


def open_seed(page, url: str, extra: str = "") -> None:
    page.goto(f"{url}/traversal?program=seed{extra}")
    page.locator(NODES).first.wait_for()
    page.wait_for_timeout(500)


def step_to(page, caption: str, presses: int = 8) -> None:
    """Press → until the stage's caption says `caption`."""
    for _ in range(presses):
        if caption in page.locator(CAPTION).inner_text():
            return
        page.keyboard.press("ArrowRight")
    assert caption in page.locator(CAPTION).inner_text()


def test_zoom_in_out_and_fit_keep_the_running_node_in_view(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{app_url}/traversal?program=mlp")
    page.locator(NODES).first.wait_for()
    page.wait_for_timeout(500)
    assert whole_graph_shown(page)
    zoom = page.locator(".stage-zoom")
    assert page.locator("[data-act='fit']").get_attribute("aria-pressed") == "true"
    page.keyboard.press("+")
    page.wait_for_timeout(300)
    assert page.locator("[data-act='fit']").get_attribute("aria-pressed") == "false"
    assert "%" in zoom.get_attribute("aria-label")
    for _ in range(6):  # stepping while zoomed in: the box follows the running step
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(1500)  # the box scrolls smoothly to it
        if page.locator(f"{NODES}.s-current").count():
            assert in_box(page, ".stage svg g.node.s-current"), page.locator(CAPTION).inner_text()
    page.get_by_role("button", name="Zoom in").click()
    page.get_by_role("button", name="Zoom out").click()
    page.keyboard.press("0")  # fit: the whole graph again
    page.locator("[data-act='fit'][aria-pressed='true']").wait_for()
    for _ in range(50):  # once its box has scrolled back (smoothly: a loaded machine takes longer)
        if whole_graph_shown(page):
            break
        page.wait_for_timeout(100)
    assert whole_graph_shown(page)
    box = page.locator(".stage-svg").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)  # Ctrl+wheel (a trackpad's pinch): zooms the graph, not the page
    page.keyboard.up("Control")
    page.wait_for_timeout(300)
    assert page.locator("[data-act='fit']").get_attribute("aria-pressed") == "false"


def test_a_twelve_iteration_loop_opens_whole_and_readable_folded_into_its_parts(page, app_url):
    # in the app, from the Playground: the loop is one part (its iterations inside it), the whole graph readable at
    # once; its button opens it in place, and the running part stays in its box
    page.set_viewport_size({"width": 1440, "height": 900})
    run_in(page, app_url, LOOP)
    page.locator(NODES).first.wait_for(timeout=60_000)
    page.wait_for_timeout(800)
    assert whole_graph_shown(page)
    sizes = page.locator(".stage .stage-svg").first.evaluate(
        """box => [...box.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t =>
             parseFloat(getComputedStyle(t).fontSize) * Math.abs(t.getScreenCTM().d))"""
    )
    assert min(sizes) >= 12 - 0.05
    loop = page.get_by_role("button", name=re.compile(r"^for i in range\(12\): "))
    if loop.get_attribute("aria-expanded") == "false":
        loop.click()
        page.locator(".stage svg g.cluster").first.wait_for()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    assert comes_into_box(page, ".stage svg g.node.s-current")  # from the opened part's corner, up to the loss
    screenshot(page, "stage_playground_loop_open")


def test_the_program_beside_the_graph_lights_the_running_line(page, app_url):
    open_seed(page, app_url)
    running = page.locator(".stage-code .line.running")
    step_to(page, "The step of h runs")
    assert running.count() == 1 and "h = x * x" in running.inner_text()
    page.keyboard.press("ArrowLeft")  # the step of x·3: made inside the loss's line
    assert "loss = (h + x * 3.0).sum()" in running.inner_text()
    page.locator(NODES, has_text="unused").first.click()  # a node lights the line that made it
    selected = page.locator(".stage-code .line.selected")
    assert selected.count() == 1 and "unused = Tensor.from_floats" in selected.inner_text()
    page.locator(".stage-code .line", has_text="loss = (h + x * 3.0)").click()  # a line marks its nodes
    marked = page.locator(f"{NODES}.selected").evaluate_all("gs => gs.map(g => g.querySelector('text').textContent)")
    assert sorted(marked) == sorted(["x·3", "h + x·3", "loss = sum(h + x·3)"])


def test_the_stage_alone_in_a_slide_plays_with_the_keys(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.set_content(
        f'<h1>Lecture 4</h1><iframe src="{app_url}/traversal?program=seed&embed=1" width="960" height="540"'
        ' title="The replay"></iframe>'
    )
    frame = page.frame_locator("iframe")
    frame.locator(NODES).first.wait_for(timeout=60_000)
    page.wait_for_timeout(800)
    assert frame.locator("h1").first.is_hidden()  # no title, sidebar or other widget: the stage alone
    assert frame.locator("[data-testid='stSidebar']").first.is_hidden()
    assert (
        frame.locator("[data-testid='stSelectbox']").count() == 0
        or frame.locator("[data-testid='stSelectbox']").first.is_hidden()
    )
    caption = frame.locator(CAPTION)
    before = caption.inner_text()
    frame.locator(".stage-svg").click()  # the slide's viewer clicks into it, then presents with the keys
    page.keyboard.press("ArrowRight")
    page.keyboard.press("PageDown")
    assert caption.inner_text() != before and caption.inner_text().startswith("Step 2 of 7")
    stage = frame.locator(".stage").bounding_box()
    assert stage["height"] <= 540 and stage["y"] >= 0  # the whole stage inside the slide's frame
    screenshot(page, "stage_embedded")


def test_the_frame_saves_as_svg_and_png(page, app_url, tmp_path):
    open_seed(page, app_url)
    page.keyboard.press("End")
    with page.expect_download() as svg:
        page.get_by_role("button", name="Save this picture as SVG").click()
    path = tmp_path / "frame.svg"
    svg.value.save_as(path)
    text = path.read_text()
    assert text.startswith("<svg") and "grad [5.0, 7.0] · kept" in text and "loss = sum(h + x·3)" in text
    assert "fill:" in text  # the colours written in: it looks the same anywhere
    with page.expect_download() as png:
        page.get_by_role("button", name="Save this picture as PNG").click()
    path = tmp_path / "frame.png"
    png.value.save_as(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    assert svg.value.suggested_filename.endswith(".svg") and "event-25" in png.value.suggested_filename


def test_the_dot_saved_is_the_picture_drawn_named_after_the_program(page, app_url, tmp_path):
    """The stage's own DOT button (no message to the server) gives the text it laid the picture out from: the seed's
    boxes as drawn, in the direction drawn; the page once offered Python's DOT of another picture."""
    open_seed(page, app_url)
    page.keyboard.press("End")
    name, text = saved_dot(page, tmp_path, GRAPHVIZ_URL)
    assert name == "seed.dot" and text.startswith("digraph G {")
    assert "loss = sum(h + x·3)" in text and "rankdir=" in text
    assert page.get_by_role("button", name="Download the graph (DOT)").count() == 0  # one DOT on the page


def test_the_card_writes_the_chain_rule_in_numbers_and_the_paths_adding_up(page, app_url):
    open_seed(page, app_url)
    step = page.locator(".stage-step")
    step_to(page, "The step of h runs")
    text = step.inner_text()
    assert "∂h/∂x = x = [1.0, 2.0]" in text and text.count("[1.0, 1.0] × [1.0, 2.0] = [1.0, 2.0]") == 2
    page.keyboard.press("ArrowRight")  # x's own step: its three paths, added up
    sums = page.locator(".card-sum-text").all_inner_texts()
    assert "[1.0, 2.0] + [1.0, 2.0] + [3.0, 3.0] = [5.0, 7.0]" in sums
    paths = page.locator(".card-paths li").all_inner_texts()
    assert any("first operand" in p for p in paths) and any("from x·3" in p for p in paths)
    screenshot(page, "stage_card_sum")


SIX_NUMBERS = (  # w·w sends a tensor of 5 to 16 numbers: the picture says it to four digits, the card whole
    "w = Tensor.from_floats([[0.123456, -1.5, 2.25], [0.3333333, 0.7, -0.9]], ad).require_grad()\n"
    "loss = (w * w).sum()\n"
    "g = loss.backward()\n"
)


def test_the_card_says_sent_the_number_its_product_worked_out(page, app_url):
    """Each input's line says what was sent as the product above it wrote it: a product ending `= [[…, 0.3333333, …]]`
    was followed by `sent [[…, 0.3333, …]]`, the picture's short text, as if another number had gone."""
    run_in(page, app_url, SIX_NUMBERS)
    page.locator(NODES).first.wait_for()
    step_to(page, "The step of w·w runs")
    inputs = page.locator(".stage-step .card-input")
    assert inputs.count() == 2
    for k in range(2):
        product = inputs.nth(k).locator(".card-math").inner_text()
        status = inputs.nth(k).locator(".card-status").inner_text()
        worked_out = product.rsplit(" = ", 1)[1]
        assert len(re.findall(r"\d+\.\d+", worked_out)) == 6 and "0.3333333" in worked_out, product
        assert status.startswith(f"sent {worked_out}: "), (product, status)


@pytest.mark.parametrize("path", ["gradients", "mlx", "tape"])
def test_unused_reads_no_gradient_on_every_page(page, app_url, path):
    page.goto(f"{app_url}/{path}")
    unused = page.locator(NODES, has_text="unused").first
    unused.wait_for(timeout=60_000)
    if path == "tape":
        # the graph of the device before the backward ("asked for its gradient"), drawn again once it ran: a busy
        # machine's run redrew it after the half second this test gave it, and the node was read before
        before = unused.text_content()
        page.get_by_role("button", name="loss.backward()").click()
        page.wait_for_function(
            "before => { const node = [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
            "  .flatMap((host) => [...(host.shadowRoot || host).querySelectorAll('.stage svg g.node')])"
            "  .find((g) => g.textContent.includes('unused')); return node && node.textContent !== before; }",
            arg=before,
            timeout=60_000,
        )
    page.wait_for_timeout(500)
    text = unused.text_content()
    assert "no gradient" in text and "keeps" not in text and "kept" not in text, text
