"""The picture of a folded program, in Chromium at 1440x900 (and for the labels 1024x768, and a projector's 1280x720
presenting): an edge into a folded part says what the part sent its node, added up over the runs played so far (the
30-sample loop's w1 -> loop stands for 30 edges); no edge label touches another or a box, at any press, folded, opened
or with one part opened; the moving dot carries a value its edge's label does not say twice."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from autodiff.stage import replay_payload
from playground.examples import EXAMPLES
from playground.sandbox import run_program

from .conftest import screenshot
from .test_stage_groups import load

pytestmark = pytest.mark.browser

MLP3 = "Three-layer MLP, one function per layer"
LOOP = "Per-sample loop (30 samples)"
MICROGRAD = "micrograd's README example"

# every edge label's box and its type's size in pixels, and every node's box, as drawn (a label hidden while the dot
# carries its value is not drawn)
BOXES = """() => {
  const svg = document.querySelector('.stage-svg svg');
  const unit = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const nodes = [...svg.querySelectorAll('g.node')]
    .map((g) => ({ id: g.id, r: g.querySelector('path, polygon').getBoundingClientRect().toJSON() }));
  const labels = [];
  svg.querySelectorAll('g.edge').forEach((g) => g.querySelectorAll('text').forEach((t) => {
    if (t.closest('.flow-dot') || !t.textContent.trim() || t.getAttribute('visibility') === 'hidden') return;
    const size = parseFloat(t.getAttribute('font-size')) * unit;
    labels.push({ id: g.id, text: t.textContent, size, r: t.getBoundingClientRect().toJSON() });
  }));
  return { nodes, labels };
}"""


def payload_of(program: str, presenter: bool = False):
    source = EXAMPLES[program]
    result = run_program(source)
    assert result.error is None, result.error
    run = result.backward
    return replay_payload(run.before, run.recorder, run.names, presenter, source=source, lines=result.lines)


def fold_top(page, payload) -> None:
    """Every part of the program's top level folded, as a student folds it with its button."""
    for part in [g for g in payload["groups"] if g["parent"] == ""]:
        button = page.get_by_role("button", name=re.compile(rf"^{re.escape(part['name'])}: "))
        if button.get_attribute("aria-expanded") == "true":
            button.click()
        page.locator(f".stage-svg g.node.group#{part['element']}").wait_for()


def open_all(page) -> None:
    """Every part opened, outermost first, until the program is drawn node by node."""
    closed = page.locator(".stage-parts button[aria-expanded='false']")
    while closed.count():
        before = closed.count()
        closed.first.click()
        page.wait_for_function(
            f"() => document.querySelectorAll(\".stage-parts button[aria-expanded='false']\").length !== {before}"
        )


def at_last_step(page) -> bool:
    return bool(re.match(r"Step (\d+) of \1\b", page.locator(".stage-caption").inner_text()))


def overlaps(seen: dict) -> list:
    """Each pair of an edge label and another edge's label or a box that touch: drawn less than an eighth of the
    label's type size apart, each side (two labels a quarter of it, about a space: `0.8703 to[[1.120]` reads as one
    text)."""

    def hit(a, b, room):
        return (
            a["left"] - room < b["right"]
            and b["left"] < a["right"] + room
            and a["top"] - room < b["bottom"]
            and b["top"] < a["bottom"] + room
        )

    labels, found = seen["labels"], []
    for k, a in enumerate(labels):
        found += [
            (a["id"], a["text"], b["id"], b["text"])
            for b in labels[k + 1 :]
            if a["id"] != b["id"] and hit(a["r"], b["r"], (a["size"] + b["size"]) / 8)
        ]
        found += [(a["id"], a["text"], n["id"]) for n in seen["nodes"] if hit(a["r"], n["r"], a["size"] / 8)]
    return found


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]\d+)?", text)]


def says(said: str, total: np.ndarray) -> bool:
    """Whether an edge's label says `total`: whole, or as its range (`[2, 4] from -88.13 to 48.28`), each number to
    four significant digits."""
    match = re.fullmatch(r"\[([\d, ]+)\] (?:from (\S+) to (\S+)|all (\S+))", said)
    if match:
        shown = [float(v) for v in match.groups()[1:] if v]
        expected = [total.min(), total.max()] if match.group(2) else [total.min()]
    else:
        shown, expected = numbers(said), list(total)
    return len(shown) == len(expected) and bool(np.allclose(shown, expected, rtol=6e-4, atol=1e-9))


@pytest.mark.parametrize("program", [MLP3, LOOP])
def test_an_edge_into_a_folded_part_says_what_the_part_sent_its_node_added_up(laptop, tmp_path, program):
    payload = payload_of(program)
    page = laptop
    load(page, tmp_path, "into-parts", payload)
    fold_top(page, payload)
    parts = {g["element"]: g for g in payload["groups"] if g["parent"] == ""}
    edges = [e.get_attribute("id") for e in page.locator(".stage-svg g.edge[id^='b_n']").all()]
    # each edge from a node into a part: what the part's runs sent the node, added up run after run (groups.py's
    # values, from the engine's); a press shows one of these running totals, never an earlier one than before
    totals = {}
    for element in edges:
        node, part = re.fullmatch(r"b_n(\d+)_(g\d+)", element).groups()
        sent = [
            np.ravel(json.loads(f["value"])) for r in parts[part]["runs"] for f in r["sent"] if f["node"] == int(node)
        ]
        totals[element] = list(np.cumsum(sent, axis=0)) if sent else []
    assert sum(1 for t in totals.values() if t) >= 2, totals
    reached = dict.fromkeys(edges, 0)  # how many of each edge's runs its label has added up
    while True:
        for element in edges:
            texts = page.locator(f".stage-svg g.edge#{element} text").evaluate_all(
                "ts => ts.filter((t) => !t.closest('.flow-dot')).map((t) => t.textContent)"  # the label, not the dot
            )
            said = " ".join(t.strip() for t in texts if t.strip())
            if not said:
                assert reached[element] == 0, (element, "said nothing after saying a total")
                continue
            found = [k + 1 for k, total in enumerate(totals[element]) if says(said, total)]
            assert found and found[-1] >= reached[element], (element, said, totals[element])
            reached[element] = found[-1]
        if at_last_step(page):
            break
        page.keyboard.press("ArrowRight")
    assert all(reached[e] == len(t) for e, t in totals.items()), (reached, totals)  # at the end: everything sent
    if program == LOOP:  # w1 -> the loop: one edge for its 30 iterations' 30
        w1 = next(n["element"] for n in payload["nodes"] if n["name"] == "w1")
        loop = next(g["element"] for g in parts.values() if g["kind"] == "loop")
        assert f"b_{w1}_{loop}" in edges and totals[f"b_{w1}_{loop}"]
    screenshot(page, f"into-parts-{'loop' if program == LOOP else 'mlp3'}-1440x900")


@pytest.fixture
def laptop(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    yield context.new_page()
    context.close()


SCREENS = [(1440, 900, False), (1024, 768, False), (1280, 720, True)]  # and a projector, presenting (16 px labels)


def screen_id(screen: tuple[int, int, bool]) -> str:
    return f"{screen[0]}x{screen[1]}{'-presenting' if screen[2] else ''}"


@pytest.mark.parametrize("screen", SCREENS, ids=screen_id)
@pytest.mark.parametrize("program", [MICROGRAD, MLP3])
@pytest.mark.parametrize("opened", [False, True], ids=["as-opened", "every-part-open"])
def test_no_edge_label_overlaps_another_or_a_box_at_any_press(browser, tmp_path, program, opened, screen):
    context = browser.new_context(viewport={"width": screen[0], "height": screen[1]})
    try:
        page = context.new_page()
        payload = payload_of(program, screen[2])
        load(page, tmp_path, "labels", payload, screen[2])
        if opened:
            open_all(page)
        else:
            fold_top(page, payload)
        no_label_overlaps_at_any_press(page)
        name = "micrograd" if program == MICROGRAD else "mlp3"
        screenshot(page, f"labels-{name}-{'open' if opened else 'folded'}-{screen_id(screen)}")
    finally:
        context.close()


@pytest.mark.parametrize("screen", [SCREENS[0], SCREENS[2]], ids=screen_id)
def test_no_edge_label_overlaps_another_or_a_box_with_one_part_opened_and_the_rest_folded(browser, tmp_path, screen):
    # each of mlp3's layers opened alone (as a student opens the one they study): its nodes drawn between folded
    # parts' boxes, whose edges say sums, the picture the lead saw two labels touch in (layer1 open, presenting)
    context = browser.new_context(viewport={"width": screen[0], "height": screen[1]})
    try:
        page = context.new_page()
        payload = payload_of(MLP3, screen[2])
        for part in [g for g in payload["groups"] if g["parent"] == ""]:
            load(page, tmp_path, "one-part", payload, screen[2])
            fold_top(page, payload)
            page.get_by_role("button", name=re.compile(rf"^{re.escape(part['name'])}: ")).click()
            page.locator(f".stage-svg g.cluster#{part['element']}").wait_for()
            no_label_overlaps_at_any_press(page, part["name"])
            screenshot(page, f"labels-mlp3-{part['element']}-alone-{screen_id(screen)}")
    finally:
        context.close()


def no_label_overlaps_at_any_press(page, what: str = "") -> None:
    presses, labelled = 0, 0
    while True:
        page.locator(".stage-svg .flow-dot").first.wait_for(state="detached")  # every label shown, the dots arrived
        seen = page.evaluate(BOXES)
        assert not overlaps(seen), (what, page.locator(".stage-caption").inner_text()[:40], overlaps(seen))
        labelled = max(labelled, len(seen["labels"]))
        if at_last_step(page):
            break
        page.keyboard.press("ArrowRight")
        presses += 1
    assert presses >= 10 and labelled >= 10, (what, presses, labelled)  # a whole replay, with its labels drawn


# a press, and at once (the dot is on its way): each moving dot's value, and whether its edge's label shows too
PRESS_AND_LOOK = """() => {
  document.querySelector('.stage [data-act="next"]').click();
  return [...document.querySelectorAll('.stage-svg .flow-dot')].map((dot) => {
    const edge = dot.closest('g.edge');
    const labels = [...edge.querySelectorAll('text')].filter((t) => !t.closest('.flow-dot') && t.textContent.trim());
    const shown = labels.filter((t) => t.getAttribute('visibility') !== 'hidden').map((t) => t.textContent);
    return { edge: edge.id, value: dot.textContent, shown, labels: labels.length };
  });
}"""


def test_the_moving_dot_carries_a_value_its_edges_label_does_not_say_twice(laptop, tmp_path):
    page = laptop
    load(page, tmp_path, "dot", payload_of(MICROGRAD))
    travelled = said = 0
    while not at_last_step(page):
        dots = page.evaluate(PRESS_AND_LOOK)
        for dot in dots:
            assert dot["shown"] == [], dot  # the label waits for the dot: the value is drawn once
        travelled += sum(1 for dot in dots if dot["labels"])
        page.locator(".stage-svg .flow-dot").first.wait_for(state="detached")  # arrived
        for dot in dots:  # and then the label says it, as the dot said it (an edge into a folded part: its sum)
            shown = page.locator(f".stage-svg g.edge#{dot['edge']} text:not([visibility])").evaluate_all(
                "ts => ts.map((t) => t.textContent).join(' ')"
            )
            assert shown.strip() if dot["labels"] else True, dot
            if dot["labels"] and not re.fullmatch(r"b_n\d+_g\d+", dot["edge"]):
                assert " ".join(shown.split()) == dot["value"], (shown, dot)
                said += 1
    assert travelled >= 5 and said >= 3, (travelled, said)


# each edge from a weight into the folded layer beside it (on its rank), and where a moving dot on one of them is
# now: its centre's distance to the layer's box and to the weight's
BESIDE = """() => {
  const centre = (r) => [(r.left + r.right) / 2, (r.top + r.bottom) / 2];
  const box = (id) => document.querySelector(`.stage-svg g.node#${CSS.escape(id)}`).querySelector('path, polygon')
    .getBoundingClientRect();
  const out = [];
  document.querySelectorAll('.stage-svg g.edge').forEach((g) => {
    const ends = g.id.match(/^b_(.+)_(g\\d+)$/);
    if (!ends || !document.querySelector(`.stage-svg g.node.group#${ends[2]}`)) return;
    const weight = box(ends[1]), part = box(ends[2]);
    if (weight.top > part.bottom || weight.bottom < part.top) return;  // not on the part's rank
    const dot = g.querySelector('.flow-dot circle');
    const at = dot ? centre(dot.getBoundingClientRect()) : null;
    const far = (r) => Math.hypot(at[0] - centre(r)[0], at[1] - centre(r)[1]);
    out.push({ edge: g.id, right: weight.left > part.right, toPart: at && far(part), toWeight: at && far(weight) });
  });
  return out;
}"""


def test_a_gradient_to_a_weight_beside_its_folded_layer_moves_from_the_layer_to_the_weight(laptop, tmp_path):
    # the edge from a weight drawn beside its layer is written from the layer (Graphviz draws a flat edge left to
    # right, and the weights go right of their layer): its dot still leaves the layer and arrives at the weight. At
    # 1024x768, where mlp3 folded reads below 12 px laid out the quick ways, so its weights are tried beside
    page = laptop
    page.set_viewport_size({"width": 1024, "height": 768})
    page.clock.install()
    payload = payload_of(MLP3)
    load(page, tmp_path, "beside", payload)
    fold_top(page, payload)
    beside = page.evaluate(BESIDE)
    assert len(beside) >= 4 and all(edge["right"] for edge in beside), beside  # the weights right of their layers
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    moved = 0
    while not at_last_step(page):
        page.keyboard.press("ArrowRight")
        page.clock.run_for(40)  # the dot has just left
        leaving = {e["edge"]: e for e in page.evaluate(BESIDE) if e["toPart"] is not None}
        page.clock.run_for(420)  # most of its way (it travels for 560 ms)
        arriving = {e["edge"]: e for e in page.evaluate(BESIDE) if e["toPart"] is not None}
        for edge, start in leaving.items():
            assert start["toPart"] < start["toWeight"], start
            assert edge in arriving and arriving[edge]["toWeight"] < arriving[edge]["toPart"], arriving.get(edge)
            moved += 1
        page.clock.run_for(1000)
    assert moved >= 3, moved


def test_each_row_of_the_per_sample_loops_container_names_its_own_node(laptop, tmp_path):
    # the loop's 30 passes make the same seven expressions: a row of the Gradients container says which pass made its
    # node (`sum(…²) (i = 24)`), as the loop's iteration box is named (`i = 24`), never ten rows all `sum(…²)`
    page = laptop
    payload = payload_of(LOOP)
    iterations = {g["name"] for g in payload["groups"] if g["kind"] == "iteration"}
    load(page, tmp_path, "loop-container", payload)
    rows = page.locator(".stage .grad-body [role=row] > :first-child")
    most: list[str] = []
    while not at_last_step(page):
        page.keyboard.press("ArrowRight")
        page.locator(".stage-svg .flow-dot").first.wait_for(state="detached")
        names = rows.evaluate_all("cells => cells.map((c) => c.textContent)")  # a row off screen is not laid out
        assert len(set(names)) == len(names), names
        passes = [re.fullmatch(r".+ \((i = \d+)\)", name) for name in names]
        assert all(p.group(1) in iterations for p in passes if p), names
        most = max(most, names, key=len)
    # at its fullest, most of it one expression (`tanh(x @ w1)`) of many passes, each row its own
    expressions = Counter(re.sub(r" \(i = \d+\)$", "", name) for name in most)
    assert len(most) >= 10 and max(expressions.values()) >= 8, most
