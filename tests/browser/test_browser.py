"""What a person sees: the real app in headless Chromium."""

from __future__ import annotations

import re

import pytest

from ui.programs import run_program

from .conftest import screenshot

pytestmark = pytest.mark.browser

PAGES = {
    "": "Seeing reverse-mode autodiff",
    "backward_traversal": "Backward traversal",
    "gradient_consumption": "Gradient consumption",
    "tape_consumption": "Tape consumption",
    "memory_growth": "Memory growth",
    "memory_policies": "Memory policies: Burn vs PyTorch",
    "checkpointing": "Checkpointing",
    "check_mlx": "Check against MLX",
    "playground": "Playground",
}
ERROR = '[data-testid="stAlertContentError"]'
GRAPH_NODES = '[data-testid="stGraphVizChart"] svg g.node'


def open_page(page, app_url: str, path: str) -> None:
    page.goto(f"{app_url}/{path}")
    page.get_by_role("heading", name=PAGES[path.split("?")[0]]).first.wait_for()
    page.wait_for_load_state("networkidle")


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_opens_without_exception(page, app_url, path):
    open_page(page, app_url, path)
    if path in ("backward_traversal", "gradient_consumption", "tape_consumption", "check_mlx"):
        page.locator(GRAPH_NODES).first.wait_for()
    if path == "":
        page.get_by_text("Some([5.0, 7.0])").first.wait_for()
        page.locator('[data-testid="stPageLink"]').last.wait_for()
    if path == "checkpointing":
        page.get_by_text("identical, bit for bit").wait_for()
        page.locator(GRAPH_NODES).first.wait_for()
    if path == "memory_policies":
        page.get_by_text("runs; x.grad accumulates to").first.wait_for()
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
    no_exception(page)
    screenshot(page, path or "home")


def test_replay_graph_and_stepping_to_the_end(page, app_url):
    open_page(page, app_url, "backward_traversal?program=seed&step=0")
    nodes = page.locator(GRAPH_NODES)
    nodes.first.wait_for()
    assert nodes.count() == 5  # x, h, x*3, add, loss
    page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Event 2 of 25").wait_for()
    page.get_by_role("button", name="Last »").click()
    page.get_by_text("Event 25 of 25").wait_for()
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=stGraphVizChart] svg g.node path[stroke-dasharray]').length == 5"
    )
    assert re.search(r"step=24", page.url)
    no_exception(page)
    screenshot(page, "backward_traversal_end")


def test_shared_link_restores_program_and_step(page, app_url):
    open_page(page, app_url, "backward_traversal?program=mlp&step=10")
    page.get_by_text("Event 11 of").wait_for()
    page.locator(GRAPH_NODES).first.wait_for()
    assert page.locator(GRAPH_NODES).count() == len(run_program("mlp").before.nodes)
    page.locator('[data-testid="stGraphVizChart"] svg g.node polygon[stroke="#e8590c"], '
                 '[data-testid="stGraphVizChart"] svg g.node path[stroke="#e8590c"]').first.wait_for()  # fmt: skip
    screenshot(page, "backward_traversal_mlp")


def test_deep_link_as_the_first_visit_of_a_fresh_server(page, fresh_app_url):
    # Streamlit runs a `pages/` folder next to app.py as legacy pages, without app.py, until some
    # session has run st.navigation: the lessons live in lessons/ so a shared link always works.
    open_page(page, fresh_app_url, "tape_consumption")
    page.get_by_text("Presenter mode").wait_for()
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    expected = (
        "Home / Backward traversal / Gradient consumption / Tape consumption / Memory growth / "
        "Memory policies / Checkpointing / Check against MLX / Playground"
    )
    assert nav.split() == expected.replace(" / ", " ").split()


def test_check_against_mlx_shows_green_nodes(page, app_url):
    open_page(page, app_url, "check_mlx")
    page.get_by_text("gradients agree").wait_for()
    nodes = page.locator(GRAPH_NODES)
    nodes.first.wait_for()
    tracked = sum(1 for n in run_program("seed").before.nodes if n.requirement.is_tracked)
    page.wait_for_function(
        "n => [...document.querySelectorAll('[data-testid=stGraphVizChart] svg g.node')]"
        ".filter(g => g.querySelector('[stroke=\"#2f9e44\"]')).length == n",
        arg=tracked,
    )
    no_exception(page)
    screenshot(page, "check_mlx")


def metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label)
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def run_memory(page, app_url, mode: str) -> list[float]:
    open_page(page, app_url, "memory_growth")
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
            open_page(p, app_url, "tape_consumption")
        for _ in range(2):
            a.get_by_role("button", name="loss.backward()").click()
            a.wait_for_load_state("networkidle")
        a.locator(ERROR).first.wait_for()
        assert "NodeId(5)" in a.locator(ERROR).first.inner_text()
        b.reload()
        b.get_by_role("heading", name="Tape consumption").wait_for()
        b.get_by_role("button", name="loss.backward()").click()
        b.get_by_text("Some([5.0, 7.0])").first.wait_for()  # b's first backward still works
        assert b.locator(ERROR).count() == 0
        no_exception(a)
        no_exception(b)
    finally:
        first.close()
        second.close()


def test_exercise_mode_in_the_browser(page, app_url):
    run = run_program("seed")
    index = next(i for i, e in enumerate(run.recorder.events) if type(e).__name__ == "StepStarted" and e.op == "mul")
    open_page(page, app_url, f"backward_traversal?program=seed&step={index}")
    page.get_by_text("Exercise: predict each step").click()
    page.get_by_text("Predict").first.wait_for()
    inputs = page.get_by_placeholder("e.g. 1.0, 2.0")
    inputs.nth(0).fill("1, 2")
    inputs.nth(1).fill("1, 2")
    page.get_by_role("button", name="Check my prediction").click()
    page.get_by_text("Right: every value matches.").wait_for()
    page.get_by_text("1 of 1 predictions right").wait_for()
    no_exception(page)
    screenshot(page, "backward_traversal_exercise")
