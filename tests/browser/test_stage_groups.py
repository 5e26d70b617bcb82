"""Big graphs on the stage, in Chromium: Playground programs and notebook replays of about 60, 250, 1,000 and 5,000
nodes open whole and readable on every common screen, fold into the program's parts, play at the level drawn, and
never move a box between events. The stage is the same module everywhere, so these load its exported HTML (the
replay as one file, as a course page would): one browser, no server."""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from autodiff import Device, Tensor, notebook
from autodiff.stage import export_html, replay_payload
from autodiff.stage.graph_dot import SIZES
from course.programs import record_program
from playground.examples import EXAMPLES
from playground.results import Limits
from playground.sandbox import run_program

from .conftest import screenshot
from .test_stage_view import saved_dot

pytestmark = pytest.mark.browser

LOOP = EXAMPLES["Per-sample loop (30 samples)"].replace("range(30)", "range(SAMPLES)")  # the Playground's own
PLAYGROUND = {60: 6, 250: 30, 1000: 124, 5000: 620}  # about that many nodes -> samples
SCREENS = [(1440, 900, False), (1280, 720, True), (1024, 768, False), (1280, 800, False), (1366, 768, False)]


def playground(samples: int, presenter: bool = False):
    source = LOOP.replace("SAMPLES", str(samples))
    # the Playground's 5 s limit is not what these tests are about: a busy machine gets five times it
    result = run_program(source, Limits(seconds=5 * Limits.seconds))
    assert result.error is None, result.error
    run = result.backward
    return run, replay_payload(run.before, run.recorder, run.names, presenter, source=source, lines=result.lines)


def example(name: str) -> dict:
    """The replay payload of the Playground's example `name`, as the Playground draws it."""
    source = EXAMPLES[name]
    # the Playground's 5 s limit is not what these tests are about: a busy machine gets five times it
    result = run_program(source, Limits(seconds=5 * Limits.seconds))
    assert result.error is None, result.error
    run = result.backward
    return replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)


def student_mlp(samples: int):
    """A notebook cell's MLP written with a function per layer, summed over samples: `notebook.replay(loss)`."""
    ad = Device.numpy().autodiff(keep_values=True)
    w1 = Tensor.from_floats([[0.5, -0.3, 0.8], [0.1, 0.7, -0.6]], ad).require_grad()
    w2 = Tensor.from_floats([[0.4], [-0.9], [0.2]], ad).require_grad()

    def hidden(x):
        return x.matmul(w1).tanh()

    def output(h):
        return h.matmul(w2)

    loss = None
    for i in range(samples):
        x = Tensor.from_floats([[0.1 * i, 1.0 - 0.05 * i]], ad)
        term = ((output(hidden(x)) - 1.0) ** 2).sum()
        loss = term if loss is None else loss + term
    wired = notebook.replay(loss, names={"w1": w1, "w2": w2, "loss": loss}).payload
    packed = json.loads(gzip.decompress(base64.b64decode(wired["packed"])))  # as the widget's browser unpacks it
    return {**packed, **{k: v for k, v in wired.items() if k != "packed"}}


def load(page, tmp: Path, name: str, payload, presenter: bool = False) -> None:
    """The replay's exported file, on a projector in presenter mode (its larger type) or not."""
    path = tmp / f"{name}-{presenter}.html"
    if not path.exists():
        path.write_text(export_html({**payload, "presenter": presenter, "fonts": list(SIZES[presenter])}, name))
    page.goto(path.as_uri())
    page.locator(".stage-svg svg g.node").first.wait_for(timeout=30_000)
    page.wait_for_timeout(100)


GEOMETRY = """() => {
  const svg = document.querySelector('.stage-svg svg'), box = svg.getBoundingClientRect();
  const unit = box.width / svg.viewBox.baseVal.width;
  const shapes = [...svg.querySelectorAll('g.node, g.cluster')].map((g) => {
    const r = g.querySelector('path, polygon').getBoundingClientRect();  // the box itself
    return { id: g.id, left: r.left, top: r.top, right: r.right, bottom: r.bottom };
  });
  const fonts = [...svg.querySelectorAll('g.node text, g.cluster text')].filter((t) => t.textContent.trim())
    .map((t) => parseFloat(t.getAttribute('font-size')) * unit);
  return { shapes, smallest: Math.min(...fonts), width: innerWidth, height: innerHeight };
}"""


def rect(locator) -> dict:
    """Where an element is drawn (Playwright's bounding box of an SVG shape counts its stroke's miter too)."""
    return locator.evaluate("e => e.getBoundingClientRect().toJSON()")


def assert_whole_and_readable(page, presenter: bool, what: str) -> None:
    seen = page.evaluate(GEOMETRY)
    for s in seen["shapes"]:
        assert s["left"] >= -0.5 and s["right"] <= seen["width"] + 0.5, (what, s)
        assert s["top"] >= -0.5 and s["bottom"] <= seen["height"] + 0.5, (what, s)
    assert seen["smallest"] >= (16 if presenter else 12) - 0.05, (what, seen["smallest"])


@pytest.fixture(scope="module")
def samples31():
    """The 31-sample program's run and payload, built once for the module."""
    return playground(30)


@pytest.fixture
def laptop(browser):
    """A fresh page at 1440x900 in the module's browser."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    yield context.new_page()
    context.close()  # a page left open keeps its stage's timers running through the rest of the suite


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    made = {f"playground-{nodes}": playground(samples)[1] for nodes, samples in PLAYGROUND.items()}
    made.update({f"notebook-{n}": student_mlp(s) for n, s in {60: 7, 250: 30, 1000: 120, 5000: 600}.items()})
    return made, tmp_path_factory.mktemp("stages")


@pytest.mark.parametrize("name", [f"{kind}-{n}" for kind in ("playground", "notebook") for n in (60, 250, 1000, 5000)])
def test_every_size_opens_whole_and_readable_on_every_screen(browser, programs, name):
    made, tmp = programs
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    for width, height, presenter in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        load(page, tmp, name, made[name], presenter)
        assert_whole_and_readable(page, presenter, f"{name} at {width}x{height}")
        assert page.locator(".stage-caption").inner_text().startswith("Step 0 of ")
    context.close()


# each picture Graphviz lays out, as the stage reads it: how many boxes it draws
COUNT_LAYOUTS = """
window.laidOut = [];
const parse = DOMParser.prototype.parseFromString;
DOMParser.prototype.parseFromString = function (text, type) {
  if (type === "image/svg+xml") window.laidOut.push((text.match(/class="node"/g) || []).length);
  return parse.call(this, text, type);
};
"""


def test_a_view_is_laid_out_only_when_every_view_above_it_reads(browser, programs):
    # the Playground's 30-sample loop at 1440x900 opens folded to its 4 top parts: the stage laid out its every part
    # open (39 boxes) four ways, 180 ms each, and its iterations open (24) four ways before it (its first frame 1.2 s);
    # now the levels are tried from the top, and the first that does not read ends the search
    made, tmp = programs
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(COUNT_LAYOUTS)
    page = context.new_page()
    load(page, tmp, "playground-250", made["playground-250"])
    assert_whole_and_readable(page, False, "the 30-sample loop")
    laid, drawn = page.evaluate("window.laidOut"), page.locator(".stage-svg svg g.node").count()
    views = sorted(set(laid))  # each view laid out, by its boxes: the one drawn, and the next level (it does not read)
    assert views[0] == drawn and len(views) == 2, (laid, drawn)
    context.close()


def test_the_31_sample_program_plays_by_its_parts_and_nothing_moves(laptop, samples31, tmp_path):
    run, payload = samples31
    page = laptop
    load(page, tmp_path, "samples-31", payload)
    before = {s["id"]: s for s in page.evaluate(GEOMETRY)["shapes"]}
    parts = len([g for g in payload["groups"] if g["kind"] == "iteration"]) + 1
    caption = page.locator(".stage-caption")
    presses = 0
    while not re.match(r"Step (\d+) of \1\b", caption.inner_text()):
        page.keyboard.press("ArrowRight")
        presses += 1
        assert presses <= 2 * parts + 10, "the replay moves at the level drawn"
        view = page.evaluate(GEOMETRY)
        assert {s["id"]: s for s in view["shapes"]} == before, "a box moved between events"
        running = page.locator(".stage-svg g.node.s-current > :is(path, polygon)")
        if running.count():  # the part being run is in view
            r, box = rect(running.first), rect(page.locator(".stage-svg"))
            assert box["x"] - 1 <= r["x"] and r["x"] + r["width"] <= box["x"] + box["width"] + 1
            assert box["y"] - 1 <= r["y"] and r["y"] + r["height"] <= box["y"] + box["height"] + 1
    screenshot(page, "stage_31_samples_played")


def test_a_folded_parts_card_adds_up_what_the_engine_sent(laptop, samples31, tmp_path):
    run, payload = samples31
    page = laptop
    load(page, tmp_path, "samples-card", payload)
    loop = next(g for g in payload["groups"] if g["kind"] == "loop")
    names = {v: k for k, v in run.names.items()}
    events = run.recorder.events
    inside = {n["id"] for n in payload["nodes"] if _within(payload, n["group"], loop["element"])}
    checked = 0
    for _ in range(40):
        page.keyboard.press("ArrowRight")
        card = page.locator(".stage-step").inner_text()
        if not card.startswith(loop["name"]):
            continue
        steps = int(re.search(r"runs (\d+) of its", card).group(1))
        for target in ("w1", "w2"):
            match = re.search(rf"to {target}:\s*([^\n]+)", card)
            if not match:
                continue
            shown = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", match.group(1))])
            sums = []  # what the engine sent to it from inside the loop, over each run of that many steps
            for r in (r for r in loop["runs"] if r["steps"] == steps):
                sent = [
                    e.value
                    for e in events[r["first"] : r["last"] + 1]
                    if type(e).__name__ == "GradientRegistered"
                    and e.source is not None
                    and int(e.source) in inside
                    and int(e.node_id) == names[target]
                ]
                if sent:
                    sums.append(np.ravel(sum(sent)))
            assert any(np.allclose(shown, total, rtol=1e-6, atol=1e-7) for total in sums), (target, shown, sums)
            checked += 1
    assert checked >= 2


def _within(payload, element: str, ancestor: str) -> bool:
    parents = {g["element"]: g["parent"] for g in payload["groups"]}
    while element:
        if element == ancestor:
            return True
        element = parents[element]
    return False


def test_a_click_opens_a_part_in_place_and_its_button_folds_it(laptop, samples31, tmp_path):
    _, payload = samples31
    page = laptop
    load(page, tmp_path, "samples-open", payload)
    loop = next(g for g in payload["groups"] if g["kind"] == "loop")
    page.locator(f".stage-svg g#{loop['element']}").click()
    page.locator(f".stage-svg g.cluster#{loop['element']}").wait_for()
    assert page.locator(".stage-svg g.node.group").count() >= 3  # its iterations, in ranges
    button = page.get_by_role("button", name=re.compile(rf"^{re.escape(loop['name'])}: .*Fold it"))
    assert button.get_attribute("aria-expanded") == "true"
    button.focus()
    page.keyboard.press("Enter")
    page.locator(f".stage-svg g.node#{loop['element']}").wait_for()


def test_the_exported_page_saves_the_dot_drawn_offline_as_parts_open_and_fold(laptop, samples31, tmp_path):
    """The exported file's DOT button works with no network, and its text follows the picture: a part opened is a
    frame of its own boxes in the DOT saved, folded back it is the one box again."""
    _, payload = samples31
    page = laptop
    page.context.set_offline(True)
    load(page, tmp_path, "samples-dot", {**payload, "file_stem": "per-sample-loop"})
    name, folded = saved_dot(page, tmp_path, None)
    loop = next(g for g in payload["groups"] if g["kind"] == "loop")
    assert name == "per-sample-loop.dot" and f'{loop["element"]} [id="{loop["element"]}", peripheries=2' in folded
    page.locator(f".stage-svg g#{loop['element']}").click()
    page.locator(f".stage-svg g.cluster#{loop['element']}").wait_for()
    _, opened = saved_dot(page, tmp_path, None)
    assert f"subgraph cluster_{loop['element']} {{" in opened and f"{loop['element']} [id=" not in opened
    page.get_by_role("button", name=re.compile(rf"^{re.escape(loop['name'])}: .*Fold it")).click()
    page.locator(f".stage-svg g.node#{loop['element']}").wait_for()
    assert saved_dot(page, tmp_path, None)[1] == folded


def test_a_phone_keeps_the_player_and_the_running_part_in_view(browser, samples31, tmp_path):
    _, payload = samples31
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    load(page, tmp_path, "samples-phone", payload)
    for _ in range(3):
        page.get_by_role("button", name="Next step").tap()
        page.wait_for_timeout(200)
        next_button = page.get_by_role("button", name="Next step").bounding_box()
        assert next_button["y"] >= 0 and next_button["y"] + next_button["height"] <= 844
    running = rect(page.locator(".stage-svg g.node.s-current > :is(path, polygon)").first)
    assert running and running["y"] >= 0 and running["y"] + running["height"] <= 844
    screenshot(page, "stage_phone_31_samples")
    context.close()


def test_a_drag_pans_a_zoomed_graph_without_selecting_text(laptop, samples31, tmp_path):
    _, payload = samples31
    page = laptop
    load(page, tmp_path, "samples-drag", payload)
    page.keyboard.press("+")
    page.keyboard.press("+")
    box = page.locator(".stage-svg")
    page.wait_for_function("() => document.querySelector('.stage-svg').classList.contains('zoomed')")
    before = box.evaluate("b => [b.scrollLeft, b.scrollTop]")
    r = rect(box)
    page.mouse.move(r["x"] + r["width"] / 2, r["y"] + r["height"] / 2)
    page.mouse.down()
    page.mouse.move(r["x"] + r["width"] / 2 - 150, r["y"] + r["height"] / 2 - 100, steps=8)
    page.mouse.up()
    after = box.evaluate("b => [b.scrollLeft, b.scrollTop]")
    assert after != before  # the picture moved with the pointer
    assert page.evaluate("() => String(getSelection())") == ""  # and no text was selected


def test_follow_the_step_opens_the_part_that_runs_and_folds_it_after(laptop, samples31, tmp_path):
    _, payload = samples31
    page = laptop
    load(page, tmp_path, "samples-follow", payload)
    folded = page.locator(".stage-svg g.node.group").count()
    page.get_by_label("Open the part that runs").check()
    page.keyboard.press("ArrowRight")  # the tape built
    page.keyboard.press("ArrowRight")  # the first step, inside the loop: its parts open around it
    page.locator(".stage-svg g.cluster").first.wait_for()
    running = page.locator(".stage-svg g.node.s-current")
    assert running.count() == 1 and not running.first.evaluate("g => g.classList.contains('group')")  # the step
    assert page.locator(".stage-caption").inner_text().startswith("Step 2 of ")  # a press per step
    page.get_by_label("Open the part that runs").uncheck()  # folded back as the student left it
    page.wait_for_function(f"() => document.querySelectorAll('.stage-svg g.node.group').length === {folded}")
    assert page.locator(".stage-svg g.cluster").count() == 0


@pytest.mark.parametrize("screen", [(1440, 900), (1024, 768)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_micrograds_mlp_folds_by_its_objects_reads_at_12_px_and_names_its_weights(browser, tmp_path, screen):
    payload = example("micrograd's MLP, with classes")
    assert {"making MLP 1", "MLP 1", "Layer 1", "Layer 2", "Neuron 1", "making Neuron 1"} <= {
        g["name"] for g in payload["groups"]
    }
    context = browser.new_context(viewport={"width": screen[0], "height": screen[1]})
    try:
        page = context.new_page()
        load(page, tmp_path, "mlp", payload)
        assert_whole_and_readable(page, False, f"micrograd's MLP at {screen}")
        shown = page.locator(".stage").inner_text()
        assert "for x in xs" in shown and "MLP 1" in shown
        # opened down to one neuron: its weights by the attribute that holds them, never an id
        for part in ("for x in xs", "MLP 1", "Layer 1", "Neuron 1"):
            page.locator(".stage-parts button", has_text=part).first.click()
            page.wait_for_timeout(300)
        labels = page.evaluate("() => [...document.querySelectorAll('.stage-svg svg text')].map(t => t.textContent)")
        assert "w[0]" in labels and "b" in labels, labels
        assert not [text for text in labels if re.search(r"#\d", text)], labels
        screenshot(page, f"mlp-{screen[0]}x{screen[1]}")
    finally:
        context.close()


@pytest.mark.parametrize("program", ["Three-layer MLP, one function per layer", "CS231n's neuron, with w[0]"])
def test_a_folded_part_shows_the_weights_it_uses_and_its_card_what_it_sends_them(laptop, tmp_path, program):
    """Folded, mlp3's layers (and CS231n's neuron's one statement) leave their weights drawn beside them, and each
    press on a folded layer says what it sends its weights, never "It sends nothing out of itself"."""
    source = EXAMPLES[program]
    # the Playground's 5 s limit is not what these tests are about: a busy machine gets five times it
    result = run_program(source, Limits(seconds=5 * Limits.seconds))
    assert result.error is None, result.error
    run = result.backward
    payload = replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)
    weights = sorted(run.names[int(n.id)] for n in run.before.nodes if n.requirement.name == "Grad")
    page = laptop
    load(page, tmp_path, "weights", payload)
    parts = [g for g in payload["groups"] if g["parent"] == ""]
    for part in parts:  # every part folded
        button = page.get_by_role("button", name=re.compile(rf"^{re.escape(part['name'])}: "))
        if button.get_attribute("aria-expanded") == "true":
            button.click()
        page.locator(f".stage-svg g.node.group#{part['element']}").wait_for()
    titles = page.evaluate(
        "() => [...document.querySelectorAll('.stage-svg g.node:not(.group) text')].map(t => t.textContent)"
    )
    assert set(weights) <= set(titles), (weights, titles)
    cards = []
    for _ in range(len(payload["events"])):
        page.keyboard.press("ArrowRight")
        card = page.locator(".stage-step").inner_text()
        if any(card.startswith(part["name"]) for part in parts):
            cards.append(card)
        if page.locator(".stage-caption").inner_text().startswith("Step ") and "finished" in card.lower():
            break
    assert cards and not [card for card in cards if "nothing out of itself" in card], cards
    for weight in weights:
        assert any(f"to {weight}:" in card for card in cards), (weight, cards)
    screenshot(page, f"folded-weights-{'mlp3' if 'MLP' in program else 'neuron'}")


# each node's lines by fill colour, and whether the layout drew detail lines (`NodeId(3) · mul`)
LINE_COLOURS = """() => {
  const stage = document.querySelector('.stage');
  const nodes = [...stage.querySelectorAll('.stage-svg g.node:not(.group)')].map((g) =>
    [...g.querySelectorAll('text')].filter((t) => t.textContent.trim()).map((t) => getComputedStyle(t).fill));
  const groups = [...stage.querySelectorAll('.stage-svg g.node.group text')].map((t) => getComputedStyle(t).fill);
  const probe = document.createElement('span');
  stage.append(probe);
  probe.style.color = 'var(--muted)';
  const muted = getComputedStyle(probe).color;
  probe.remove();
  return { detail: !stage.classList.contains('no-detail'), nodes, groups, muted };
}"""


def test_only_a_detail_line_is_muted_never_a_gradient(laptop, samples31, tmp_path):
    # a layout that leaves out the detail lines (a folded program) ends each box on its gradient, which reads in the
    # text colour like the rest; a part's box has no detail line at all
    seen = set()
    seed, source = record_program("seed"), EXAMPLES["Three-layer MLP, one function per layer"]
    mlp3 = run_program(source)
    assert mlp3.error is None, mlp3.error
    payloads = {
        "seed": replay_payload(seed.before, seed.recorder, seed.names),
        "loop": samples31[1],
        "mlp3": replay_payload(mlp3.backward.before, mlp3.backward.recorder, mlp3.backward.names, source=source),
    }
    for (name, payload), width in itertools.product(payloads.items(), (1440, 390)):
        laptop.set_viewport_size({"width": width, "height": 900 if width > 390 else 844})
        load(laptop, tmp_path, f"muted-{name}", payload)
        laptop.locator(".stage-svg g.node text").first.wait_for()
        drawn = laptop.evaluate(LINE_COLOURS)
        seen.add(drawn["detail"])
        for lines in drawn["nodes"]:
            plain = lines[:-1] if drawn["detail"] else lines
            assert drawn["muted"] not in plain, (name, lines)
            assert not drawn["detail"] or lines[-1] == drawn["muted"], (name, lines)
        assert drawn["muted"] not in drawn["groups"], name
    assert seen == {True, False}  # both kinds of layout were looked at


def test_the_containers_headings_fit_their_columns_on_a_phone(laptop, samples31, tmp_path):
    # each row of the Gradients container is a grid of its own: on a phone "Shape" ran into "Entry"
    laptop.set_viewport_size({"width": 390, "height": 844})
    load(laptop, tmp_path, "phone-container", samples31[1])
    laptop.keyboard.press("End")  # the container holds every leaf's gradient
    heading = laptop.locator(".stage .grad-head > span")
    expect(heading).to_have_count(4)
    spans = heading.evaluate_all("ss => ss.map((s) => [s.textContent, s.scrollWidth - s.clientWidth])")
    assert all(over <= 0 for _, over in spans), spans


TARGETS = ".stage button, .stage select, .stage label, .stage input[type=range], .stage-code .line.makes"


def test_on_a_touch_phone_every_control_of_the_stage_is_a_24_px_target(browser, samples31, tmp_path):
    # WCAG 2.2's target size (2.5.8): the follow toggle, the step slider and the program's lines were 13 to 20 px tall
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    load(page, tmp_path, "phone-targets", samples31[1])
    targets = page.evaluate(
        """() => [...document.querySelectorAll(TARGETS)]
            .filter((t) => t.getClientRects().length)
            .map((t) => { const r = t.getBoundingClientRect(); return [t.textContent.trim().slice(0, 30) || t.className,
              Math.round(r.width), Math.round(r.height)]; })""".replace("TARGETS", json.dumps(TARGETS))
    )
    context.close()
    assert len(targets) > 10 and [t for t in targets if min(t[1], t[2]) < 24] == [], targets


README_EXAMPLE, MLP3 = "micrograd's README example", "Three-layer MLP, one function per layer"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture(scope="module")
def folded_examples():
    """The two folded Playground programs a newcomer opened parts of on a phone, built once for the module."""
    return {name: example(name) for name in (README_EXAMPLE, MLP3)}


# what stays on a phone's screen over the page: every element of the stage that sticks, with where it is drawn
STUCK = """() => [...document.querySelectorAll('.stage *')].filter((e) => getComputedStyle(e).position === 'sticky')
  .map((e) => ({ name: e.className, ...e.getBoundingClientRect().toJSON() }))"""


@pytest.mark.parametrize(
    ("program", "part", "scheme", "by"),
    [(README_EXAMPLE, "line 5", "light", "its box"), (MLP3, "layer1", "dark", "its button")],
    ids=["readme-line5-light", "mlp3-layer1-dark"],
)
def test_on_a_phone_a_part_opened_is_brought_where_the_window_shows_it(
    browser, folded_examples, tmp_path, program, part, scheme, by
):
    # the graph's box is taller than a phone's screen and the step buttons stick over its foot: the part was centred
    # in the box, under the buttons or below the screen (micrograd's line 5 wholly under the player)
    payload = folded_examples[program]
    group = next(g for g in payload["groups"] if g["name"].startswith(part))
    context = browser.new_context(**PHONE, color_scheme=scheme)
    try:
        page = context.new_page()
        load(page, tmp_path, f"phone-open-{part}", payload)
        if by == "its box":
            page.locator(f".stage-svg g.node#{group['element']}").tap()
        else:
            page.get_by_role("button", name=re.compile(rf"^{re.escape(group['name'])}: .*Open it")).tap()
        frame = page.locator(f".stage-svg g.cluster#{group['element']}")
        frame.wait_for()
        expect(page.locator(".stage-caption")).to_contain_text("Opened ")  # drawn, and brought into view
        seen = rect(frame)
        name = rect(frame.locator("text").last)  # Graphviz writes a frame's name in its corner
        # the window shows the page down to the step buttons' top where they stick over its foot
        covered = min([s["top"] for s in page.evaluate(STUCK) if s["bottom"] >= 844 - 1], default=844)
        assert 0 <= seen["left"] < 390 and 0 <= seen["top"] < covered, (seen, covered)  # its corner is seen
        assert seen["bottom"] > 0 and seen["right"] > 0  # and as much of it as fits
        assert 0 <= name["top"] <= name["bottom"] <= covered and 0 <= name["left"] <= name["right"] <= 390, (
            name,
            covered,
        )
        screenshot(page, f"stage_phone_opened_{part.replace(' ', '')}_{scheme}")
    finally:
        context.close()


def test_a_part_opened_while_another_step_runs_is_shown_on_a_projector(browser, folded_examples, tmp_path):
    # presenting mlp3 at 1280x720, layer3 running: layer1 opened by its button was brought into view, and the frame
    # drawn with it scrolled straight back to the running step, layer1 below the box (the caption said "Opened")
    payload = folded_examples[MLP3]
    layer = next(g for g in payload["groups"] if g["name"] == "layer1")
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        load(page, tmp_path, "projector-open", payload, presenter=True)
        caption = page.locator(".stage-caption")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        expect(caption).to_contain_text("(layer3: ")
        page.get_by_role("button", name=re.compile(r"^layer1: .*Open it")).click()
        expect(caption).to_contain_text("Opened layer1.")
        page.wait_for_timeout(1000)  # a smooth scroll to the running step, had one started, has moved the box
        box, frame = rect(page.locator(".stage-svg")), rect(page.locator(f".stage-svg g.cluster#{layer['element']}"))
        corner_x, corner_y = frame["left"] + 8, frame["top"] + 8
        assert box["left"] <= corner_x <= box["right"] and box["top"] <= corner_y <= box["bottom"], (frame, box)
        page.keyboard.press("ArrowRight")  # the next press follows the running step again
        running = page.locator(".stage-svg g.node.s-current")
        expect(running).to_have_count(1)
        deadline = time.monotonic() + 10
        while True:
            seen = rect(running)
            if box["top"] <= seen["top"] and seen["bottom"] <= box["bottom"] or time.monotonic() > deadline:
                break
            page.wait_for_timeout(100)
        assert box["top"] <= seen["top"] and seen["bottom"] <= box["bottom"], (seen, box)
    finally:
        context.close()


def test_opening_or_folding_a_part_says_why_the_count_of_steps_changed(laptop, folded_examples, tmp_path):
    # "step 0 of 12" became "step 0 of 14" and nothing said why: a folded part is one press per run of its steps,
    # open each step is a press
    payload = folded_examples[MLP3]
    layer = next(g for g in payload["groups"] if g["name"] == "layer1")
    page = laptop
    load(page, tmp_path, "recount", payload)
    caption = page.locator(".stage-caption")
    folded = int(re.match(r"Step 0 of (\d+)\.", caption.inner_text()).group(1))
    page.get_by_role("button", name=re.compile(r"^layer1: .*Open it")).click()
    expect(caption).to_contain_text("Opened layer1.")
    opened = int(re.match(r"Step 0 of (\d+)\.", caption.inner_text()).group(1))
    runs = len(layer["runs"])  # folded, each run of its steps is one press (groups.py)
    assert opened > folded
    assert (
        f"Opened layer1. Its steps take {runs + opened - folded} presses now, not {runs} "
        f"(open, a part's steps are stops of their own): {opened} in all."
    ) in caption.inner_text()
    screenshot(page, "stage_1440_opened_layer1")
    page.keyboard.press("ArrowRight")
    expect(caption).to_have_text(re.compile(rf"^Step 1 of {opened}\. "))
    assert "Opened" not in caption.inner_text()  # said once
    page.get_by_role("button", name=re.compile(r"^layer1: .*Fold it")).click()
    expect(caption).to_contain_text(
        f"Folded layer1. Its steps take {runs} press{'' if runs == 1 else 'es'} now, not {runs + opened - folded} "
        f"(folded, a part runs its steps one after another in one press): {folded} in all."
    )


# One row of the five step buttons (a 32 px button, its 0.3 rem padding above and below): the slider, the choices
# and the parts' buttons scroll with the page. Two rows would be over 70 px; the whole player stuck was 200 to 266.
STUCK_AT_MOST = 56


@pytest.mark.parametrize("program", [README_EXAMPLE, MLP3], ids=["readme", "mlp3"])
def test_on_a_phone_only_the_step_buttons_stick_and_every_control_is_reachable(
    browser, folded_examples, tmp_path, program
):
    context = browser.new_context(**PHONE)
    try:
        page = context.new_page()
        payload = folded_examples[program]
        load(page, tmp_path, "phone-sticky", payload)
        first = next(g for g in payload["groups"] if g["parent"] == "")
        page.get_by_role("button", name=re.compile(rf"^{re.escape(first['name'])}: .*Open it")).tap()
        expect(page.locator(".stage-caption")).to_contain_text("Opened ")  # opened, the graph is taller than the screen
        page.evaluate("() => scrollTo(0, 0)")
        stuck = page.evaluate(STUCK)
        assert sum(s["height"] for s in stuck) <= STUCK_AT_MOST, stuck
        assert [s["name"] for s in stuck] == ["stage-controls"], stuck
        assert stuck[0]["bottom"] == pytest.approx(844, abs=1)  # at the screen's foot, over the graph
        page.get_by_role("button", name="Next step").tap()
        expect(page.locator(".stage-caption")).to_have_text(re.compile(r"^Step 1 of "))
        # each control, scrolled to, is the element a finger lands on at its centre: none is under the buttons
        hidden = page.evaluate(
            """(targets) => [...document.querySelectorAll(targets)].filter((t) => t.getClientRects().length)
              .filter((t) => { t.scrollIntoView({ block: 'center' }); const r = t.getBoundingClientRect();
                const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                return !(hit && (t === hit || t.contains(hit) || hit.contains(t))); })
              .map((t) => t.textContent.trim().slice(0, 30) || t.className)""",
            TARGETS,
        )
        assert hidden == [], hidden
    finally:
        context.close()
