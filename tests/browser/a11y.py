"""axe-core in Chromium: the WCAG 2.1 A and AA rules, run on whatever a Playwright page shows now.

axe-core comes pinned inside `axe-playwright-python` (requirements-dev.txt) and is injected into the page from
the installed package, so the check needs no network. axe walks open shadow roots, so components-v2
components (which render in one) are checked too.
"""

from __future__ import annotations

import io
from typing import Any

from axe_playwright_python.base import AXE_SCRIPT
from PIL import Image

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")  # the impacts a page must have none of


def blocking_violations(page: Any) -> list[dict[str, Any]]:
    """The critical and serious violations of the WCAG 2.1 A/AA rules on the whole page as it is now (axe walks
    the stage's shadow root too)."""
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    # a tooltip the pointer left behind (over a button a scroll moved under it) is read mid-fade, in colours no
    # one sees: move the pointer to the window's right edge and let any tooltip go first
    size = page.viewport_size or {"width": 1280, "height": 720}
    page.mouse.move(size["width"] - 2, size["height"] // 2)
    page.locator("[data-testid=stTooltipContent]").first.wait_for(state="detached", timeout=10_000)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SCRIPT)
    results = page.evaluate("options => axe.run(document, options)", options)
    return [v for v in results["violations"] if v["impact"] in BLOCKING]


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per failing node: rule, impact, where, and axe's own summary of what to fix."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            target = " >> ".join(str(t) for t in node["target"])
            summary = node.get("failureSummary", "").replace("\n", " ")
            lines.append(f"{violation['id']} ({violation['impact']}) at {target}: {summary[:300]}")
    return "\n".join(lines)


SIDEBAR_LEFT = "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().left"
SIDEBAR_RIGHT = "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().right"


def open_lesson(page: Any, app_url: str, path: str) -> None:
    """Open a page and wait until the app has finished drawing it (heading, no run in progress, graphs laid out)."""
    page.goto(f"{app_url}/{path}")
    settle(page)


def settle(page: Any) -> None:
    """Wait until the current run is drawn: a heading, the script no longer running, every stage's picture, the
    sidebar at rest (fully open or fully out of sight, not sliding)."""
    page.locator("h1").first.wait_for()
    page.wait_for_load_state("networkidle")
    page.locator(".stApp[data-test-script-state='notRunning']").wait_for()
    stages = page.locator(".stage")
    for i in range(stages.count()):
        stages.nth(i).locator("svg g.node").first.wait_for()
    page.wait_for_function(f"() => ({SIDEBAR_LEFT})() >= 0 || ({SIDEBAR_RIGHT})() <= 0")
    page.wait_for_function(STILL)


# The page has stopped changing: the same height 0.7 s apart, and no run in progress (pages that compute draw
# in more than one pass).
STILL = """() => new Promise(resolve => {
  const main = document.querySelector('[data-testid=stMain]');
  const height = main.scrollHeight;
  setTimeout(() => resolve(main.scrollHeight === height
    && document.querySelector('.stApp').dataset.testScriptState === 'notRunning'), 700);
})"""


def turn_on_presenter(page: Any) -> None:
    """Switch presenter mode on from the sidebar (opening it where it is collapsed, and closing it again)."""
    collapsed = page.evaluate(SIDEBAR_LEFT) < 0  # a collapsed sidebar slides off the left edge
    if collapsed:
        page.locator('[data-testid="stExpandSidebarButton"]').click()
        page.wait_for_function(f"() => ({SIDEBAR_LEFT})() >= 0")
    page.get_by_text("Presenter mode").click()
    page.wait_for_function("() => parseFloat(getComputedStyle(document.querySelector('h1')).fontSize) > 34")
    if collapsed:
        page.get_by_role("button", name="Collapse sidebar").click()
        page.wait_for_function(f"() => ({SIDEBAR_RIGHT})() <= 0")  # slid out of sight
    settle(page)


# The element that has keyboard focus, through open shadow roots (components v2), with what identifies it and
# where it is on the screen.
FOCUSED = """() => {
  let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  if (!e || e === document.body) return null;
  const box = e.getBoundingClientRect();
  const owner = e.closest('[data-testid]');
  return {
    tag: e.tagName, type: e.type || '', role: e.getAttribute('role') || '',
    name: (e.getAttribute('aria-label') || e.innerText || '').trim().replace(/\\s+/g, ' ').slice(0, 80),
    testid: owner ? owner.getAttribute('data-testid') : '', in_form: !!e.closest('[data-testid=stForm]'),
    checked: !!e.checked, box: {x: box.x, y: box.y, width: box.width, height: box.height},
  };
}"""


def focused(page: Any) -> dict[str, Any] | None:
    return page.evaluate(FOCUSED)


def _region(shot: bytes, box: dict[str, float], margin: float = 5) -> bytes:
    image = Image.open(io.BytesIO(shot))
    left, top = max(int(box["x"] - margin), 0), max(int(box["y"] - margin), 0)
    right = min(int(box["x"] + box["width"] + margin) + 1, image.width)
    bottom = min(int(box["y"] + box["height"] + margin) + 1, image.height)
    return image.crop((left, top, max(right, left + 1), max(bottom, top + 1))).tobytes()


def tab(page: Any) -> tuple[dict[str, Any] | None, bool]:
    """Press Tab; return what has focus now, and whether focus shows on screen (WCAG 2.4.7): the pixels around
    the newly focused element differ from those just before the key press."""
    before = page.screenshot(animations="disabled")
    page.keyboard.press("Tab")
    now = focused(page)
    if now is None or now["box"]["width"] == 0 or now["box"]["height"] == 0:
        return now, False
    after = page.screenshot(animations="disabled")
    return now, _region(before, now["box"]) != _region(after, now["box"])


def tab_until(page: Any, wanted: Any, limit: int = 60) -> list[dict[str, Any]]:
    """Tab until `wanted(focused element)` holds; every element passed on the way must show its focus.
    Returns the elements focused on the way, the wanted one last."""
    visited = []
    for _ in range(limit):
        now, visible = tab(page)
        if now is None:
            continue
        assert visible, f"no visible focus indicator on {now['tag']} {now['name']!r} ({now['testid']})"
        visited.append(now)
        if wanted(now):
            return visited
    raise AssertionError(f"not reached with {limit} Tabs; focus went through {[v['name'] for v in visited]}")
