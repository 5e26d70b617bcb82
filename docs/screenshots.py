"""Screenshots of every lesson on a laptop (1440x900), a projector (1280x720, presenter mode), a phone (390x844) and a
laptop in dark mode, as a student would first see each, with the page's main action done (a run started, steps
stepped).

Run: python docs/screenshots.py [ADDRESS ...]   -> docs/screenshots/<lesson>-<setup>.png (every lesson, or those named
by their address, e.g. `training`; needs /usr/bin/chromium and playwright). `samples` is the Playground's per-sample
loop over 31 samples (249 nodes): a big graph folded into the program's parts, its loop run by one press. `readme` is
README's own picture, docs/screenshot.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from ui.navigation import LESSONS  # noqa: E402

SETUPS = {  # name: (width, height, query, colour scheme)
    "laptop": (1440, 900, "", "light"),
    "projector": (1280, 720, "present=1", "light"),
    "phone": (390, 844, "", "light"),
    "dark": (1440, 900, "", "dark"),
}
OUT = ROOT / "docs" / "screenshots"
README_SHOT = ROOT / "docs" / "screenshot.png"


def teach(page) -> None:
    """Class: a class running, seen by its teacher: three students (their own browser contexts) joined, the teacher
    stepped three times and asked for x's gradient, and the answers came (one right, two showing mistakes): the
    projector says how many answered; a laptop's folded "Only on your screen: who is right" is opened."""
    import re

    from tests.browser.class_answers import seed_answers
    from tests.browser.class_student import form_drawn, send_answer

    page.get_by_role("button", name="Start a class").click()
    page.locator(".stage svg g.node").first.wait_for()
    joining = page.get_by_text(re.compile("join at ", re.IGNORECASE)).first.inner_text()  # "join at" on a projector
    link = re.search(r"join at (\S+)", joining, re.IGNORECASE).group(1)
    students = []
    seed = seed_answers(page)  # the room's own numbers (issue 54): right, the forward value, a path left out
    for answer in (seed.right, seed.forward, seed.one_path):
        student = page.context.browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        student.goto(link)
        student.get_by_role("button", name="Join").click()
        student.locator(".stage svg g.node").first.wait_for(timeout=60_000)
        students.append((student, answer))
    for _ in range(3):
        page.locator(".stage-controls button").nth(2).click()
        page.wait_for_timeout(400)
    page.wait_for_timeout(1500)
    question = page.get_by_role("combobox", name=re.compile("Ask the room"))
    question.click()
    question.fill("x's gradient")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Ask", exact=True).click()
    for student, answer in students:  # a box per number, as a student fills them
        form_drawn(student, 1).wait_for()
        send_answer(student, answer)
    page.locator(".class-tally").get_by_text(re.compile("3 of 3 answered")).wait_for()
    if page.locator(".class-own").count():  # a laptop: who is right, on the teacher's own screen, opened
        page.locator(".class-own summary").click()
        page.locator(".class-own .class-bar").nth(2).wait_for()
    for student, _ in students:
        student.context.close()


def big_loop(page) -> None:
    """The Playground's per-sample loop (31 samples), run, stepped into its loop."""
    page.get_by_role("combobox", name="Examples").click()
    page.get_by_role("option", name="Per-sample loop (30 samples)").click()
    page.wait_for_timeout(1500)
    page.get_by_role("button", name="Run", exact=True).click()
    page.locator(".stage-caption").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    page.keyboard.press("ArrowRight")  # the loop's first run of steps, folded: its card adds up what it sent


def act(page, path: str) -> None:
    """What a student does first on each page, so the picture shows the lesson, not an empty form."""
    if path == "samples":
        big_loop(page)
    elif path == "class":
        teach(page)
    elif path in ("traversal", "checkpoints", "tape", "play"):
        if path == "tape":
            page.get_by_role("button", name="loss.backward()").first.click()
            page.wait_for_timeout(2500)
        if path == "play":
            page.get_by_role("button", name="Run", exact=True).click()
            page.wait_for_timeout(4000)
        page.locator(".stage-caption").first.wait_for(timeout=60_000)
        for _ in range(4):  # a press per step: the middle of the backward, a step's chain rule on its card
            page.keyboard.press("ArrowRight")
    elif path == "memory":
        page.get_by_role("button", name="Start").click()
        page.wait_for_timeout(9000)
    elif path == "training":
        page.get_by_role("button", name="Play", exact=True).click()
        page.wait_for_timeout(12000)
        page.get_by_role("button", name="Pause", exact=True).click()
    page.wait_for_timeout(1500)


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "s.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        wanted = sys.argv[1:]
        for path in [lesson.url_path for lesson in LESSONS] + ["samples"]:
            if wanted and path not in wanted:
                continue
            for setup, (width, height, query, scheme) in SETUPS.items():
                context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
                page = context.new_page()
                page.set_default_timeout(60_000)
                page.goto(f"{url}/{'play' if path == 'samples' else path}" + (f"?{query}" if query else ""))
                page.locator("[data-testid='stMain'] h1").first.wait_for()
                page.wait_for_timeout(3000)
                act(page, path)
                if path in ("class", "samples"):  # the stage itself (on a projector, as the room sees it)
                    shown = page.locator(".stage").first
                    shown.evaluate("el => { el.style.scrollMarginTop = '64px'; el.scrollIntoView({block: 'start'}); }")
                    page.wait_for_timeout(500)
                name = f"{path or 'home'}-{setup}.png"
                page.screenshot(path=str(OUT / name), full_page=True)
                print(name)
                context.close()
        if not wanted or "readme" in wanted:
            readme_shot(browser, url)
        browser.close()


def readme_shot(browser, url: str) -> None:
    """README's picture: Backward traversal on the two-layer MLP after its backward, on a laptop, as the stage draws
    it now: every step consumed, the Gradients container holding the leaves' gradients."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/traversal?program=mlp")
    page.locator(".stage svg g.node").first.wait_for()
    page.locator(".stage-caption").first.wait_for()
    page.keyboard.press("End")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(README_SHOT))
    print(README_SHOT.name)
    context.close()


if __name__ == "__main__":
    main()
