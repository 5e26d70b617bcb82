"""Lessons that read right, as a person sees them: charts with a scale, results beside their buttons, sentences
instead of raw values."""

from __future__ import annotations

import re

import pytest

from .a11y import settle
from .conftest import screenshot
from .test_browser import ERROR, metric, no_exception, open_page

pytestmark = pytest.mark.browser

SUCCESS = '[data-testid="stAlertContentSuccess"]'

# what a chart shows, read from its SVG: the title, and each axis's title and tick labels
CHART = """(title) => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')];
  const svg = charts.find(s => [...s.querySelectorAll('.role-title-text text')].some(t => t.textContent === title));
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  const heading = [...svg.querySelectorAll('.role-title-text text')].find(t => t.textContent === title);
  const h = heading.getBoundingClientRect();
  const axes = [...svg.querySelectorAll('g.role-axis')].map(axis => ({
    title: [...axis.querySelectorAll('.role-axis-title text')].map(t => t.textContent).join(' '),
    labels: [...axis.querySelectorAll('.role-axis-label text')].map(t => t.textContent),
  }));
  return {axes, fontSize: parseFloat(getComputedStyle(heading).fontSize) || Number(heading.getAttribute('font-size')),
          titleInside: h.left >= box.left - 1 && h.right <= box.right + 1 && h.top >= box.top - 1,
          title: [h.left, h.right, h.top], box: [box.left, box.right, box.top],
          plotHeight: svg.querySelector('.role-frame').getBoundingClientRect().height};
}"""

# the text people read outside code and outside the replay stage (document queries do not enter its shadow root)
PROSE = """() => {
  const parts = [];
  for (const el of document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"], '
                                           + '[data-testid="stMain"] td, [data-testid="stMetricValue"]')) {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('code, pre').forEach(c => c.remove());
    parts.push(copy.innerText);
  }
  return parts;
}"""
RAW = {
    "an assignment written out": re.compile(r"\w ?= | =\w"),  # "x.grad = Some", "in_use= 0.0" (not retain_graph=True)
    "zero bytes": re.compile(r"(?<![\d.])0 B\b"),
    "a raw field": re.compile(r"\bin_use\b|\ballocs\b"),
    "a float64 repr of a float32": re.compile(r"\d\.\d{9,}"),
}


def raw_text(page) -> list[tuple[str, str]]:
    return [(why, text) for text in page.evaluate(PROSE) for why, pattern in RAW.items() if pattern.search(text)]


def y_axis(chart: dict) -> dict:
    return next(axis for axis in chart["axes"] if axis["title"].startswith("Memory"))


def run_growth(page) -> None:
    page.get_by_role("button", name="Start").click()
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=stMetricValue]')].some(e => e.innerText == '20 / 20')",
        timeout=60_000,
    )
    page.get_by_text("What holds memory").wait_for(timeout=30_000)  # the run stopped
    settle(page)  # and its graph is drawn


@pytest.mark.parametrize("presenter", [False, True])
def test_memory_growth_chart_shows_1_to_41_mib_with_a_scale(page, app_url, presenter):
    open_page(page, app_url, "memory")
    if presenter:
        page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").click()
        page.wait_for_load_state("networkidle")
    run_growth(page) if not presenter else _run_presenting(page)
    assert metric(page, "Memory in use") == "41.0 MiB"
    chart = page.evaluate(CHART, "Memory in use")
    axis = y_axis(chart)
    assert axis["title"] == "Memory (MiB)"
    assert axis["labels"] == ["0", "10", "20", "30", "40", "50"]  # a scale, up past the 41 MiB reached
    x_axis = next(a for a in chart["axes"] if a["title"] == "Forward pass")
    assert x_axis["labels"][0] == "0" and x_axis["labels"][-1] == "20"
    assert chart["titleInside"] and chart["plotHeight"] >= (300 if presenter else 200), (chart["title"], chart["box"])
    assert chart["fontSize"] >= (20 if presenter else 14)
    no_exception(page)
    screenshot(page, f"memory_growth_chart{'_presenter' if presenter else ''}")


def _run_presenting(page) -> None:
    """Presenter mode hides the graph: the run is over when the passes are done and the button is live."""
    page.get_by_role("button", name="Start").click()
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=stMetricValue]')].some(e => e.innerText == '20 / 20')",
        timeout=60_000,
    )
    page.get_by_role("button", name="Run one backward now").and_(page.locator(":enabled")).wait_for(timeout=30_000)
    page.wait_for_timeout(1000)


def test_policies_chart_shows_every_moment_in_mib(page, app_url):
    open_page(page, app_url, "policies")
    page.locator('[data-testid="stVegaLiteChart"] svg').first.wait_for()
    page.wait_for_timeout(1000)
    chart = page.evaluate(CHART, "Memory in use at each moment")
    assert y_axis(chart)["labels"] == ["0", "10", "20", "30", "40", "50"]
    moments = next(a for a in chart["axes"] if a["labels"] and not a["title"])["labels"]
    assert len(moments) == 9 and moments[0] == "after creating x (1 MiB)"  # every moment named, none dropped
    assert raw_text(page) == []


def test_tape_results_appear_below_their_button(page, app_url):
    open_page(page, app_url, "tape")
    for label, result, next_heading in (
        ("loss.backward()", SUCCESS, "2. Two losses over one shared subgraph"),
        ("loss.backward()", ERROR, "2. Two losses over one shared subgraph"),
        ("l1.backward()", SUCCESS, "3. detach()"),
    ):
        button = page.get_by_role("button", name=label, exact=True)
        button.click()
        page.wait_for_load_state("networkidle")
        alert = page.locator(result).first
        alert.wait_for()
        below, shown = button.bounding_box(), alert.bounding_box()
        heading = page.get_by_role("heading", name=next_heading).bounding_box()
        assert below["y"] + below["height"] <= shown["y"] < heading["y"]  # between its button and the next section
        assert shown["y"] - (below["y"] + below["height"]) < 120, (below, shown)
        if result == ERROR:
            assert "loss's own step was already run" in alert.inner_text()
    page.get_by_role("button", name="(shared.detach() * x).sum().backward()").click()
    page.get_by_text("Replay of the last backward that ran").wait_for()
    page.wait_for_load_state("networkidle")
    assert page.get_by_text("Replay of the last backward: l1").count() == 0
    assert raw_text(page) == []
    no_exception(page)
    screenshot(page, "tape_consumption_results")


def test_lesson_pages_say_sentences_not_raw_values(page, app_url):
    open_page(page, app_url, "gradients")
    page.get_by_role("button", name="grad()").click()
    page.locator(SUCCESS).first.wait_for()
    assert "[5.0, 7.0]" in page.locator(SUCCESS).first.inner_text()  # a fresh backward: x's entry is there
    assert raw_text(page) == []
    open_page(page, app_url, "memory")
    page.get_by_role("button", name="Run the abandoned-graphs experiment").click()
    page.get_by_text("A backward, even of an unrelated loss").wait_for()
    assert raw_text(page) == []
    open_page(page, app_url, "checkpoints")
    page.get_by_text("identical, bit for bit").wait_for()
    assert raw_text(page) == []
    no_exception(page)


def test_the_consumption_exercise_cannot_be_skipped_for_points(page, app_url):
    open_page(page, app_url, "gradients")
    page.get_by_text("Exercise: predict each value").click()
    page.get_by_role("button", name="Check and reveal").click()
    page.get_by_text("6 revealed without an answer").wait_for()
    assert page.get_by_text("right", exact=False).filter(has_text="predictions right").count() == 0
    assert page.locator(SUCCESS).count() == 0
    no_exception(page)


def test_the_playground_prints_float32_as_the_seed(page, app_url):
    from playground.examples import EXAMPLES
    from playground.share import encode

    open_page(page, app_url, f"play?code={encode(EXAMPLES['Seed: shared subgraph'])}")
    page.get_by_role("button", name="Run", exact=True).click()
    output = page.locator(".code-block").filter(has_text="l1 -> x.grad")
    output.wait_for()
    lines = output.inner_text().splitlines()
    assert "l1 -> x.grad = Tensor([5.4365635, 14.778112])" in lines  # the seed: Some([5.4365635, 14.778112])
    assert "l1+l2 -> x.grad = Tensor([13.591409, 36.945282])" in lines
    no_exception(page)
