"""The Training lesson as a student sees it: press Play, the loss falls, the boundary bends around the points,
memory stays flat, and an iteration's backward replays on the stage."""

from __future__ import annotations

import pytest

from .conftest import screenshot
from .test_browser import STAGE_NODES, metric, no_exception, open_page
from .test_lessons import CHART

pytestmark = pytest.mark.browser

PLAYED = 60  # iterations: at least this many before pausing
BOUNDARY_CELLS = 40 * 40


def play(page) -> None:
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(
        f"Number(document.querySelector('[data-testid=stMetricValue]').innerText) >= {PLAYED}", timeout=60_000
    )
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Play", exact=True).wait_for()
    page.wait_for_timeout(1500)  # the last tick's charts drawn


@pytest.mark.parametrize(("width", "height", "presenter"), [(1440, 900, False), (1280, 720, True), (390, 844, False)])
def test_playing_lowers_the_loss_and_draws_the_boundary_the_curve_and_flat_memory(
    page, app_url, width, height, presenter
):
    page.set_viewport_size({"width": width, "height": height})
    open_page(page, app_url, "training?present=1" if presenter else "training")
    play(page)
    iterations = int(metric(page, "Iteration"))
    assert iterations >= PLAYED
    assert float(metric(page, "Loss")) < 0.3  # from about 0.66 untrained
    boundary = page.evaluate(CHART, f"Decision boundary after iteration {iterations}")
    assert boundary is not None and boundary["titleInside"]
    drawn = page.evaluate(
        """() => {
          const svg = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')]
            .find(s => s.textContent.includes('Decision boundary'));
          return {cells: svg.querySelectorAll('.mark-rect.role-mark path').length,
                  points: svg.querySelectorAll('.mark-symbol.role-mark path').length,
                  legend: [...svg.querySelectorAll('.role-legend-label text')].map(t => t.textContent)};
        }"""
    )
    assert drawn["cells"] == BOUNDARY_CELLS and drawn["points"] >= 200
    assert {"class 0", "class 1"} <= set(drawn["legend"])  # each class in words, with its shape and colour
    loss = page.evaluate(CHART, "Training loss (cross-entropy)")
    assert loss["plotHeight"] >= (300 if presenter else 200)
    memory = page.evaluate(CHART, "Memory in use, each iteration")
    assert next(a for a in memory["axes"] if a["title"].startswith("Memory"))["title"] == "Memory (KiB)"
    assert page.get_by_text("the same after every iteration so far").count() == 1
    no_exception(page)
    screenshot(page, f"training_{width}x{height}{'_presenter' if presenter else ''}")


def test_an_iteration_replays_its_backward_on_the_stage(page, app_url):
    open_page(page, app_url, "training")
    for _ in range(3):
        page.get_by_role("button", name="One iteration").click()
        page.wait_for_timeout(600)
    page.get_by_role("button", name="Replay iteration 3's backward").click()
    page.locator(STAGE_NODES).first.wait_for(timeout=60_000)
    folded = page.locator(".stage-part[aria-expanded='false']")
    for _ in range(20):  # the network drawn folded into its parts: each opened in place
        if not folded.count():
            break
        folded.first.click()
        page.wait_for_timeout(300)
    assert page.locator(STAGE_NODES).count() >= 10  # the forward's 10 operations and the leaves
    for name in ("w1", "hidden", "logits", "loss"):  # the program's names on the graph
        assert page.locator(STAGE_NODES).filter(has_text=name).count() >= 1, name
    assert page.get_by_text("Iteration 3: loss ").count() == 1
    no_exception(page)


def test_the_mistake_is_explained_in_a_sentence_not_a_traceback(page, app_url):
    open_page(page, app_url, "training")
    page.get_by_text("on the autodiff device (the mistake)").click()
    page.wait_for_timeout(800)
    for _ in range(2):
        page.get_by_role("button", name="One iteration").click()
        page.wait_for_timeout(800)
    page.get_by_text("Iteration 3 cannot run: w1 has no gradient").wait_for()
    assert page.get_by_text("the graph reaches back through the previous update").count() == 1
    no_exception(page)
