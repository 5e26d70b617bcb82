"""The notebook widget (`autodiff.notebook`) in real notebook hosts on loopback, opened in Chromium: a JupyterLab runs a
notebook and a marimo notebook runs as an app. In both the stage draws the seed graph, steps with →, ends with x's
gradient [5.0, 7.0], and follows the host's theme. Nothing is fetched from the network: every request the page
makes is to the host itself."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from .conftest import SCREENSHOTS
from .harness import ROOT, _free_port, wait_until_up

pytestmark = pytest.mark.browser

SEED = """\
from autodiff import Device, Tensor
from autodiff.notebook import replay
ad = Device.numpy().autodiff(keep_values=True)
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
h = x * x
loss = (h + x * 3.0).sum()
replay(loss)"""

MARIMO = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    from autodiff import Device, Tensor
    from autodiff.notebook import replay

    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    h = x * x
    loss = (h + x * 3.0).sum()
    mo.ui.anywidget(replay(loss))
    return


if __name__ == "__main__":
    app.run()
"""


@contextmanager
def _host(command: list[str], ready: str, folder: Path, env: dict[str, str]) -> Iterator[str]:
    """Start a notebook server in `folder`; yields its base URL once `ready` (a path) answers."""
    port = _free_port()
    log = open(folder / "server.log", "w")  # noqa: SIM115  # closed with the server
    server = subprocess.Popen(
        [part.replace("{port}", str(port)) for part in command],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url + ready, server, folder / "server.log", command[2])
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("jupyterlab")
    second = "from autodiff.notebook import graph\ngraph(h)"  # a second stage on the page: one Graphviz for both
    # a page that never received the kernel's Graphviz model (it connected late): the kernel keeps the model, the
    # page is told it closed; the stage then asks the kernel for Graphviz itself
    forgotten = (
        "from autodiff.notebook import graphviz_source\ngraphviz_source().comm.publish_msg('comm_close')\ngraph(loss)"
    )
    cells = [nbformat.v4.new_code_cell(code) for code in (SEED, second, forgotten)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # executed headless first, as a course publishes it: its outputs (stills and widgets) and widget state saved
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    nbformat.write(notebook, folder / "seed.ipynb")
    token = secrets.token_hex(16)
    own = {
        name: str(folder.parent / f"{folder.name}-{name}") for name in ("config", "runtime", "settings", "workspaces")
    }
    env = {
        "JUPYTER_CONFIG_DIR": own["config"],
        "JUPYTER_RUNTIME_DIR": own["runtime"],
        "JUPYTERLAB_SETTINGS_DIR": own["settings"],
        "JUPYTERLAB_WORKSPACES_DIR": own["workspaces"],
    }
    tracker = Path(own["settings"]) / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"autoStartDefaultKernel": true}')  # start the notebook's kernel without asking
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={folder}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--allow-root",
    ]  # CI runs as root
    with _host(command, f"/api/status?token={token}", folder, env) as url:
        yield url, token


@pytest.fixture(scope="module")
def marimo_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("marimo")
    (folder / "seed_marimo.py").write_text(MARIMO)
    (folder / "pyproject.toml").write_text('[tool.marimo.display]\ntheme = "dark"\n')  # the notebook's own theme
    command = [
        sys.executable,
        "-m",
        "marimo",
        "run",
        "seed_marimo.py",
        "--headless",
        "--host",
        "127.0.0.1",
        "--port",
        "{port}",
        "--no-token",
        "--no-sandbox",
        "--no-check",
    ]
    with _host(command, "/health", folder, {"MARIMO_SKIP_UPDATE_CHECK": "1"}) as url:
        yield url


def _offline(page, host: str) -> list[str]:
    """Every request the page makes to anywhere but `host` is refused, and listed."""
    elsewhere: list[str] = []

    def route(r) -> None:
        if r.request.url.startswith(host) or r.request.url.startswith(("blob:", "data:")):
            r.continue_()
        else:
            elsewhere.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return elsewhere


def _step_to_the_end(page) -> None:
    """Focus the stage, then → until the backward ends: x's box says its gradient, [5.0, 7.0], only at the end."""
    stage = page.locator(".stage").first
    x = stage.locator("svg g.node", has_text="x").first
    expect(stage.locator("svg g.node")).to_have_count(5, timeout=120_000)  # marimo's is in a shadow root
    assert "5.0, 7.0" not in x.text_content()
    stage.click(position={"x": 5, "y": 5})
    for _ in range(40):
        if "5.0, 7.0" in x.text_content():
            break
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(250)
    assert "grad [5.0, 7.0]" in x.text_content()


# the page's Graphviz cache (autodiff/notebook.py): how many stages use each copy it holds
GRAPHVIZ_USERS = "() => [...(globalThis[Symbol.for('autodiff.graphviz')] || new Map()).values()].map(e => e.users)"
BOX_WIDTH = "stage => Math.round(stage.querySelector('.stage-svg').getBoundingClientRect().width)"
# fitted: the picture inside its box, and as wide or as tall as the box
GRAPH_FITS = """stage => {
  const box = stage.querySelector('.stage-svg').getBoundingClientRect();
  const svg = stage.querySelector('.stage-svg svg').getBoundingClientRect();
  const inside = svg.left >= box.left - 1 && svg.right <= box.right + 1 && svg.bottom <= box.bottom + 1;
  return {inside, fills: Math.max(svg.width / box.width, svg.height / box.height), box: box.width, svg: svg.width};
}"""


def test_the_stage_in_jupyterlab(browser, jupyterlab):
    url, token = jupyterlab
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    elsewhere = _offline(page, url)
    page.goto(f"{url}/lab/tree/seed.ipynb?token={token}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=120_000)
    news = page.get_by_role("button", name="No", exact=True)  # "get notified about Jupyter news?": no
    if news.is_visible():
        news.click()
    live = page.locator(".jp-Cell").first.locator(".stage")  # the saved outputs have no live stage: a run's has
    # a press while the kernel still starts can be lost, and a kernel whose socket closed while it connected leaves
    # the widget without its model ("widget model not found", a CI run under load): a student runs the cell again
    for _ in range(3):
        choose = page.get_by_role("button", name="Select", exact=True)  # asked which kernel after all: the default
        if choose.is_visible():
            choose.click()
        page.locator(".jp-Cell .jp-InputArea-prompt").first.click()  # the cell, in command mode
        page.keyboard.press("Shift+Enter")  # runs it, as a student does
        try:
            live.first.locator("svg g.node").first.wait_for(timeout=30_000)
            break
        except PlaywrightTimeout:
            continue
    _step_to_the_end(page)
    stage = page.locator(".stage").first
    assert "dark" not in stage.get_attribute("class")
    # the live stage replaced its still: the still's row is hidden, the stage is drawn once
    expect(live).to_have_count(1)
    expect(page.locator("[data-autodiff-still]").first).to_be_hidden()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(1500)  # the gradients travelling along their edges have arrived
    page.screenshot(path=str(SCREENSHOTS / "notebook-jupyterlab.png"))
    # JupyterLab's left sidebar opened, then closed: the stage's box changes width, the window does not; the stage
    # refits the whole graph into its box each time
    for _ in range(2):
        before = stage.evaluate(BOX_WIDTH)
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab").first.click()  # the file browser's tab
        page.wait_for_function(f"w => ({BOX_WIDTH})(document.querySelector('.stage')) !== w", arg=before)
        page.wait_for_timeout(500)
        fit = stage.evaluate(GRAPH_FITS)
        assert fit["inside"] and fit["fills"] > 0.99, fit  # not fitted again: 0.97 as the box widened
    # JupyterLab's own dark theme, picked in its menu: the stage follows it
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(".lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Theme'))").click()  # a submenu: no role
    page.locator(".lm-Menu-item:has(.lm-Menu-itemLabel:text-is('JupyterLab Dark'))").click()
    expect(stage).to_have_class(re.compile(r"\bdark\b"))
    # the second cell's stage shares the page's one Graphviz; clearing both outputs lets it go (its Blob URL revoked)
    page.locator(".jp-Cell .jp-InputArea-prompt").nth(1).click()
    page.keyboard.press("Shift+Enter")
    expect(page.locator(".stage")).to_have_count(2)
    expect(page.locator(".stage").nth(1).locator("svg g.node")).to_have_count(2)  # x and h
    expect(page.locator("[data-autodiff-still]").nth(1)).to_be_hidden()
    assert page.evaluate(GRAPHVIZ_USERS) == [2]
    page.get_by_role("menuitem", name="Edit", exact=True).click()
    page.locator(".lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Clear Outputs of All Cells'))").click()
    expect(page.locator(".stage")).to_have_count(0)
    page.wait_for_function(f"() => ({GRAPHVIZ_USERS})().length === 0")
    page.locator(".jp-Cell .jp-InputArea-prompt").nth(2).click()
    page.keyboard.press("Shift+Enter")
    expect(page.locator(".stage").first.locator("svg g.node")).to_have_count(5, timeout=60_000)  # sent by the kernel
    assert page.evaluate(GRAPHVIZ_USERS) == [1]
    assert elsewhere == []
    context.close()


def test_a_notebook_exported_by_nbconvert_shows_the_still_with_no_kernel_and_no_network(browser, tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SEED)])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()  # stores the widgets' state, as by default
    exported = tmp_path / "seed.html"
    exported.write_text(HTMLExporter().from_notebook_node(notebook)[0])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    elsewhere = _offline(page, exported.as_uri())  # the widgets' front end from a CDN: refused, as offline
    page.goto(exported.as_uri())
    still = page.locator("[data-autodiff-still] svg")
    expect(still).to_be_visible()
    for title in ("x", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"):
        expect(still.locator("text", has_text=re.compile(f"^{re.escape(title)}$"))).to_have_count(1)
    gradient = page.locator("[data-autodiff-still] tr", has=page.locator("th", has_text=re.compile("^x$")))
    expect(gradient.locator("td")).to_have_text("[5.0, 7.0]")
    assert still.evaluate("svg => svg.getBoundingClientRect().width") <= 1280
    page.screenshot(path=str(SCREENSHOTS / "notebook-nbconvert.png"), full_page=True)
    assert elsewhere, "the export asked for nothing off the machine: was the widget left out?"
    context.close()


def test_the_stage_in_marimo_draws_in_the_notebooks_dark_theme_on_a_light_system(browser, marimo_app):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(60_000)
    elsewhere = _offline(page, marimo_app)
    page.goto(marimo_app)
    _step_to_the_end(page)
    expect(page.locator(".stage").first).to_have_class(re.compile(r"\bdark\b"))
    assert elsewhere == []
    context.close()
