"""The stage module on its own page, as the exported HTML hosts it: mounted and unmounted 50 times, it leaves no
listener, stage or memory behind; it never writes to its payload; it refuses an event kind it does not know, in
words on the page. Its ES modules run as they are too, unbundled: each imports every name it uses."""

from __future__ import annotations

import functools
import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from autodiff.stage import GRAPHVIZ, STAGE_CSS, STAGE_JS, replay_payload, static_payload
from autodiff.stage.bundle import JS
from course.programs import PROGRAMS, record_program

pytestmark = pytest.mark.browser
MOUNTS = 50
HEAP_SLACK = 2_000_000  # bytes: a stage left behind holds its DOM, picture and payload (several times this in 50)

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><style>{css}</style></head>
<body><main></main><script type="module">
import mount from "./stage.js";
const freeze = (o) => {{  // deep: a write anywhere in the payload throws (a module is strict code)
  Object.values(o).forEach((v) => v && typeof v === "object" && freeze(v));
  return Object.freeze(o);
}};
const data = window.payload = freeze(await (await fetch("./payload.json")).json());
const parent = document.querySelector("main");
window.cycle = async (settle) => {{  // mount, (let it lay out,) unmount: what a host does when a page changes
  const cleanup = mount({{ data, parentElement: parent, setStateValue() {{}} }});
  if (settle) {{
    while (!parent.querySelector(".stage svg g.node")) await new Promise((r) => setTimeout(r, 10));
    document.dispatchEvent(new KeyboardEvent("keydown", {{ key: "ArrowRight", bubbles: true }}));
  }}
  cleanup();
}};
window.mountOnce = (payload) => mount({{ data: payload, parentElement: parent, setStateValue() {{}} }});
window.ready = true;
</script></body></html>"""


@pytest.fixture(scope="module")
def stage_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = tmp_path_factory.mktemp("stage-site")
    (site / "stage.js").write_text(STAGE_JS)
    shutil.copy(GRAPHVIZ, site / "graphviz.js")
    run = record_program("seed")
    payload = {**replay_payload(run.before, run.recorder, run.names), "graphviz_url": "graphviz.js"}
    (site / "payload.json").write_text(json.dumps(payload))
    static = {**static_payload(run.before, run.names), "graphviz_url": "graphviz.js"}  # a notebook's graph(t)
    (site / "static.json").write_text(json.dumps(static))
    (site / "index.html").write_text(PAGE.format(css=STAGE_CSS))
    # the modules as they are, imported by the browser one by one (a name a module uses but does not import fails)
    shutil.copytree(JS, site / "js")
    (site / "modules.html").write_text(PAGE.format(css=STAGE_CSS).replace('"./stage.js"', '"./js/hosts/streamlit.mjs"'))
    run = record_program("mlp3")  # folded into parts: opening one draws a new layout
    parts = replay_payload(run.before, run.recorder, run.names, source=PROGRAMS["mlp3"].source, lines=run.lines)
    (site / "parts.json").write_text(json.dumps({**parts, "graphviz_url": "graphviz.js"}))
    handler = functools.partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # loopback, a free port
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def listener_count(cdp, expression: str) -> int:
    target = cdp.send("Runtime.evaluate", {"expression": expression})["result"]["objectId"]
    return len(cdp.send("DOMDebugger.getEventListeners", {"objectId": target})["listeners"])


def measure(page, cdp) -> dict[str, int]:
    cdp.send("HeapProfiler.collectGarbage")
    cdp.send("HeapProfiler.collectGarbage")
    return {
        "window": listener_count(cdp, "window"),
        "document": listener_count(cdp, "document"),
        "stages": page.locator(".stage").count(),
        "heap": int(cdp.send("Runtime.getHeapUsage")["usedSize"]),
    }


def test_fifty_mounts_and_unmounts_leave_nothing_behind(page, stage_site):
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # a write to the frozen payload throws
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    cdp = page.context.new_cdp_session(page)
    page.evaluate("cycle(true)")  # the first mount loads Graphviz, which the module keeps for every later stage
    start = measure(page, cdp)
    mounted = page.evaluate_handle("() => ({ cleanup: mountOnce(payload) })")
    page.locator(".stage svg g.node").first.wait_for()
    held = measure(page, cdp)
    assert held["document"] > start["document"] and held["stages"] == 1  # (its box's size: a ResizeObserver)
    mounted.evaluate("mounted => mounted.cleanup()")
    for k in range(MOUNTS):
        page.evaluate("(settle) => cycle(settle)", k % 2 == 0)  # half unmounted before their layout finished
    page.wait_for_timeout(300)  # a layout its cleanup cancelled would have drawn by now
    end = measure(page, cdp)
    assert errors == []
    assert (end["window"], end["document"], end["stages"]) == (start["window"], start["document"], 0)
    assert end["heap"] - start["heap"] < HEAP_SLACK, (start, end)


def test_a_mount_overtaken_by_a_newer_one_leaves_the_newer_stage_when_its_cleanup_runs_late(page, stage_site):
    """Streamlit runs the cleanup of a mount that a newer one overtook (the rerun's data changed while the module
    loaded) when that mount resolves, after the newer mount kept the stage: the cleanup took the student's stage
    away, leaving the page blank until the next rerun."""
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    page.evaluate("() => { window.overtaken = mountOnce(payload); window.newest = mountOnce(payload); }")
    page.locator(".stage svg g.node").first.wait_for()
    page.evaluate("overtaken()")
    page.keyboard.press("ArrowRight")  # the kept stage still answers
    page.locator(".stage-caption", has_text="Step 1 of").wait_for()
    assert page.locator(".stage").count() == 1
    page.evaluate("newest()")  # the newest mount's cleanup is the one that takes it away
    assert page.locator(".stage").count() == 0


def test_an_unknown_event_kind_is_refused_in_words(page, stage_site):
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    page.evaluate("""() => {
      const events = [...payload.events, { kind: "GradientTeleported", text: "?" }];
      window.stop = mountOnce({ ...payload, events });
    }""")
    refusal = page.get_by_role("alert")
    assert "GradientTeleported" in refusal.inner_text() and refusal.is_visible()
    assert page.locator(".stage").count() == 0
    page.evaluate("stop()")
    assert page.get_by_role("alert").count() == 0


def test_the_stage_follows_the_theme_as_it_changes_without_polling(page, stage_site):
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    page.evaluate("() => { window.stop = mountOnce(payload); }")
    stage = page.locator(".stage")
    assert "dark" not in stage.get_attribute("class")
    page.emulate_media(color_scheme="dark")  # the system's theme
    page.wait_for_function("document.querySelector('.stage').classList.contains('dark')")
    page.emulate_media(color_scheme="light")
    page.wait_for_function("!document.querySelector('.stage').classList.contains('dark')")
    # a host's theme: its colours set on an ancestor (Streamlit's wrapper, a notebook's body)
    page.evaluate("document.body.style.setProperty('--st-background-color', '#0e1117')")
    page.wait_for_function("document.querySelector('.stage').classList.contains('dark')")
    page.evaluate("document.body.style.setProperty('--st-background-color', '#ffffff')")
    page.wait_for_function("!document.querySelector('.stage').classList.contains('dark')")
    page.evaluate("stop()")


# the stage's own elements again, outside any stage (its root's classes kept but `stage`): what a host page with the
# same class names (a notebook's `.chip`, `.card-input`) would be, if a rule reached beyond the stage
LEAKS = """() => {
  const copy = document.querySelector('.stage').cloneNode(true);
  copy.classList.remove('stage');
  document.body.append(copy);
  const leaks = new Set();
  const walk = (rules) => {
    for (const rule of rules) {
      if (rule.selectorText) {
        const outside = [...document.querySelectorAll(rule.selectorText)].some((e) => !e.closest('.stage'));
        if (outside) leaks.add(rule.selectorText);
      } else if (rule.cssRules) walk(rule.cssRules);  // @media: every rule, whatever the screen
    }
  };
  for (const sheet of document.styleSheets) walk(sheet.cssRules);
  copy.remove();
  return [...leaks];
}"""


def test_no_rule_of_the_stage_style_sheet_reaches_outside_the_stage(page, stage_site):
    """A notebook puts the stage's style sheet in the host's own page (JupyterLab, marimo): a rule that matched the
    host's `.chip` or `.card-input` would restyle the notebook. Every rule is scoped to the stage."""
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    page.evaluate("() => { window.stop = mountOnce(payload); }")
    page.locator(".stage svg g.node").first.wait_for()
    assert page.locator(".stage *").count() > 100  # the stage's elements, copied outside it below
    assert page.evaluate(LEAKS) == []
    page.evaluate("stop()")


# the graph inside its box, and no control over a node
FITS_AND_UNCOVERED = """() => {
  const stage = document.querySelector('.stage');
  const box = stage.querySelector('.stage-svg').getBoundingClientRect();
  const svg = stage.querySelector('.stage-svg svg').getBoundingClientRect();
  const nodes = [...stage.querySelectorAll('svg g.node')].map((n) => n.getBoundingClientRect());
  const controls = [...stage.querySelectorAll('.stage-zoom button')].map((b) => b.getBoundingClientRect());
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  return {
    inside: svg.left >= box.left - 1 && svg.right <= box.right + 1 && stage.scrollWidth <= stage.clientWidth + 1,
    covered: nodes.filter((n) => controls.some((c) => meet(n, c))).length,
    nodes: nodes.length,
  };
}"""


@pytest.mark.parametrize("width", [200, 260, 319])
def test_a_static_graph_fits_a_box_narrower_than_a_phone_whole_and_uncovered(page, stage_site, width):
    """A notebook's side panel or a narrow column: `graph(t)` in a box under 320 px, in a laptop's window. The whole
    graph fits the box's width, and the zoom buttons sit under it, covering no node."""
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    page.evaluate(f"document.querySelector('main').style.width = '{width}px'")
    page.evaluate("async () => { window.stop = mountOnce(await (await fetch('./static.json')).json()); }")
    page.locator(".stage svg g.node").first.wait_for()
    page.wait_for_function("document.querySelector('.stage').classList.contains('slim')")
    fit = page.evaluate(FITS_AND_UNCOVERED)
    assert fit == {"inside": True, "covered": 0, "nodes": 6}, fit
    page.evaluate("stop()")


def test_the_modules_run_unbundled_as_the_bundle_does(page, stage_site):
    """Each host runs the bundle, one scope; the modules are real ES modules too (node's tests import the model's):
    loaded one by one, a name a module uses without importing it fails. Every path a press takes is walked."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(stage_site.replace("index.html", "modules.html"))
    page.wait_for_function("window.ready === true")
    page.evaluate("async () => { window.stop = mountOnce(await (await fetch('./parts.json')).json()); }")
    page.locator(".stage svg g.node").first.wait_for()
    for key in ["ArrowRight", "ArrowRight", "End", "Home", "+", "0"]:
        page.keyboard.press(key)
    part = page.locator(".stage-part").first
    part.click()  # opened in place: a layout of its own, drawn at the current event
    page.locator(".stage-part[aria-expanded='true']").first.wait_for()
    page.select_option(".stage-by", "event")
    page.locator(".stage-follow").check()
    page.keyboard.press("ArrowRight")
    page.locator(".stage-table summary").click()
    page.locator(".stage-table tbody tr").first.wait_for()
    page.locator(".stage-code .line.makes").first.click()
    assert page.locator(".stage-refused").count() == 0 and errors == [], errors
    assert page.locator(".stage-caption").inner_text().startswith("Event ")
    page.evaluate("stop()")


# the timers a page has running: each interval until it is cleared, each timeout until it fires or is cleared
TIMERS = """(() => {
  const live = (window.liveTimers = new Set());
  const { setInterval: every, clearInterval: stopEvery, setTimeout: once, clearTimeout: stopOnce } = window;
  window.setInterval = (act, ms, ...rest) => { const id = every(act, ms, ...rest); live.add(`i${id}`); return id; };
  window.clearInterval = (id) => { live.delete(`i${id}`); stopEvery(id); };
  window.setTimeout = (act, ms, ...rest) => {
    const id = once((...args) => { live.delete(`t${id}`); if (typeof act === "function") act(...args); }, ms, ...rest);
    live.add(`t${id}`);
    return id;
  };
  window.clearTimeout = (id) => { live.delete(`t${id}`); stopOnce(id); };
})();"""

# a payload that passes the contract (`checkPayload`) but cannot be drawn: a gradient sent along an edge whose value
# is a number where the contract says text (the picture writes it on the edge); the first such event, from `at` on
UNDRAWABLE = """at => {
  const k = payload.events.findIndex((e, j) => j >= at && e.kind === "GradientRegistered" && e.edge);
  const events = payload.events.map((e, j) => (j === k ? { ...e, value: 5 } : e));
  window.stop = mountOnce({ ...payload, events, index: at ? k : 0 });
  return k;
}"""
STOPPED = re.compile(r"^This stage stopped drawing: .+\. Reload the page to start it again\.$")


def opened_with_timers(page, stage_site) -> list[str]:
    """The stage's page, its timers watched; returns the list every uncaught error lands in."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.add_init_script(TIMERS)
    page.goto(stage_site)
    page.wait_for_function("window.ready === true")
    return errors


def test_a_stage_that_cannot_draw_what_it_opens_at_says_so_in_words(page, stage_site):
    """An error thrown while the first picture was drawn ended in an unhandled rejection: an empty box, no word, the
    stage's listeners and timers left running. It stops and says why, in one sentence where the stage was."""
    errors = opened_with_timers(page, stage_site)
    assert page.evaluate(UNDRAWABLE, 1) > 0
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert STOPPED.match(alert.inner_text()), alert.inner_text()
    assert alert.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"  # the stage's refusal, not bare text
    assert page.locator(".stage").count() == 0 and errors == [], errors
    assert page.evaluate("[...liveTimers]") == []


def test_a_press_that_cannot_be_drawn_stops_the_player_and_says_so(page, stage_site):
    """A press whose event cannot be drawn (a key, the player's clock) threw out of `show`: the player kept ticking
    into the same error every period. The stage stops, its timers cleared, and says so."""
    errors = opened_with_timers(page, stage_site)
    for press in ("End", "Play"):
        page.evaluate(UNDRAWABLE, 0)  # opens on the first event, which it draws
        page.locator(".stage svg g.node").first.wait_for()
        assert page.get_by_role("alert").count() == 0
        if press == "End":
            page.keyboard.press("End")
        else:
            page.get_by_role("button", name="Play").click()
            page.wait_for_function("[...liveTimers].some((id) => id.startsWith('i'))")  # the player's clock
        alert = page.get_by_role("alert")
        alert.wait_for()
        assert STOPPED.match(alert.inner_text()), (press, alert.inner_text())
        assert page.locator(".stage").count() == 0 and errors == [], (press, errors)
        assert page.evaluate("[...liveTimers]") == [], press
        page.evaluate("stop()")
