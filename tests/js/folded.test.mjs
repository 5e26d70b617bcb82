// A folded view, without a browser, on real payloads (tests/js/stage_fixtures.py): its boxes and edges speak short
// (a tensor of more than four numbers as its shape and range, every number to four significant digits) and are laid
// out for the longest they say at any event, not for the widest any numbers could make; a layer's weights may be
// drawn beside their folded layer.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { unpack } from "../../autodiff/stage/js/model/contract.mjs";
import { besideParts, dotOf, labelRows, labelWidth, spokenShort, wrap } from "../../autodiff/stage/js/model/dot.mjs";
import { ancestorsOf, isGroup, placeBoxes, programTree, sentIntoParts } from "../../autodiff/stage/js/model/parts.mjs";
import { frame, nodeView, recount, stopsOf } from "../../autodiff/stage/js/model/steps.mjs";

const FOLDER = process.env.STAGE_FIXTURES;

async function folded(name, wrapWidth) {
  assert.ok(FOLDER, "STAGE_FIXTURES names no folder: run tests/js/stage_fixtures.py FOLDER first");
  const data = await unpack(JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8")).payload);
  const stage = { data, tree: programTree(data), open: new Set(), wrapWidth };
  return { data, stage, edges: placeBoxes(stage) };
}

function fits(said, room, what) {
  // `said` (its lines) fits the lines laid out for it: no more of them, none longer than the longest (a box is one
  // column, as wide as its widest line)
  const widest = Math.max(...room.map((line) => line.length));
  assert.ok(said.length <= room.length, `${what}: ${JSON.stringify(said)} in ${JSON.stringify(room)}`);
  said.forEach((line) => assert.ok(line.length <= widest, `${what}: ${JSON.stringify(said)} in ${JSON.stringify(room)}`));
}

test("spoken short: more than four numbers as a shape and range, each number to four significant digits", () => {
  const range = (shape, low, high) => ({ shape, low, high, numbers: null });
  assert.equal(spokenShort("[[1.5, 2.25], [3.0, 4.125], [5.0, -6.0]]", range([3, 2], -6, 5)), "[3, 2] from -6 to 5");
  // more than 16 numbers, which Python summarised (format.py's compact): its words, each number said short from the
  // numbers sent beside them, whatever the text's digits say
  const large = range([64, 4], -0.80000001, 0.96);
  assert.equal(spokenShort("value [64, 4] from -0.80000001 to 0.96", large), "value [64, 4] from -0.8 to 0.96");
  assert.equal(spokenShort("grad [??, ?] from -?.???????? to ?.?? · kept", range([64, 4], -0.81234567, 0.96)),
    "grad [64, 4] from -0.8123 to 0.96 · kept");
  assert.equal(spokenShort("[?, ?], all ?.?", range([6, 4], 3, 3)), "[6, 4], all 3.0");
  assert.equal(spokenShort("value [64, 4], 256 values", range([64, 4], 0, 1)), "value [64, 4], 256 values");  // not a summary
  // a text without numbers beside it is said as it is: no number is read out of a text
  assert.equal(spokenShort("grad 10.996227 · consumed"), "grad 10.996227 · consumed");
  assert.equal(spokenShort("value [nan, 1.3061234e-05]"), "value [nan, 1.3061234e-05]");
  assert.equal(spokenShort("not reached: no gradient"), "not reached: no gradient");
  // a class's student, before the room reaches them: masked, as Python wrote it
  const masked = "grad [64, 4] from 0.0000000000 to 0.0000000000 · kept";
  assert.equal(spokenShort(masked, range([64, 4], 0, 0), true), masked);
});

test("spoken short from the numbers sent beside a text: four numbers or fewer written from them, in the tensor's place", () => {
  // the text's digits say otherwise, or nothing: the numbers, nested as the tensor (a scalar bare), are what is said
  assert.equal(spokenShort("grad [[?, ?], [?, ?]] · kept", [[0.032801434, -0.29530662], [1.218788, -0.08876477]]),
    "grad [[0.03280, -0.2953], [1.219, -0.08876]] · kept");
  assert.equal(spokenShort("value [[9.9, 9.9, 9.9, 9.9]]", [[0, 0, 0, 0.12345678]]), "value [[0.0, 0.0, 0.0, 0.1235]]");
  assert.equal(spokenShort("grad ??.?????? · consumed", 10.996227), "grad 11.00 · consumed");  // a scalar
  assert.equal(spokenShort("value -?.???????e-??", -1.3061234e-05), "value -1.306e-05");
  assert.equal(spokenShort("[0.5, 2.0]", [0.5, 2]), "[0.5, 2.0]");  // as the engine prints it: short already
  // numbers a class's student is not told yet: said masked, as wide as any numbers make them
  const masked = "grad [0.0000000000, 0.0000000000] · kept";
  assert.equal(spokenShort(masked, [0, 0], true), masked);
});

for (const name of ["mlp3", "loop"]) {
  for (const width of [48, 26]) {
    test(`${name}, folded, lines of ${width}: each box's gradient lines hold what it says at every event`, async () => {
      const { data, stage } = await folded(name, width);
      const drawn = new Set(stage.boxOf.values());
      const frames = data.events.map((_, k) => frame(data, k));
      let checked = 0;
      for (const element of drawn) {
        const node = isGroup(stage, element) ? stage.tree.byId.get(stage.tree.groups.get(element).output)
          : data.nodes.find((n) => n.element === element);
        const room = labelRows(stage, element).filter((r) => r[3] === "grad").map((r) => r[1]);
        assert.ok(room.length, element);
        assert.ok(!room.join(" ").includes("-0.0001234"), `${element}: laid out for what it says, ${room}`);
        for (const [k, state] of frames.entries()) {
          const view = nodeView(data, node, state);
          fits(wrap(spokenShort(view.grad, view.grad_range), width), room, `${element} at ${k}`);
          checked++;
        }
      }
      assert.ok(checked >= 50, `${checked} lines checked`);
    });
  }
}

test("mlp3, folded, as a class's student holds it (numbers to come masked): its boxes hold what the room reveals", async () => {
  // payload.py's redacted: every gradient still to come blank, each node's widest line with its numbers masked
  const { data } = await folded("mlp3", 32);
  const mask = (text) => text.replace(/-?\d+(?:\.\d+)?(?:e[-+]?\d+)?/g, "0.0000000000");
  const held = { ...data, nodes: data.nodes.map((n) => ({ ...n, wide: mask(n.wide) })),
    events: data.events.map((e) => (e.kind === "GradientRegistered" ? { ...e, total: "", total_range: null, value: "", value_range: null } : e)) };
  const stage = { data: held, tree: programTree(held), open: new Set(), wrapWidth: 32 };
  placeBoxes(stage);
  const frames = data.events.map((_, k) => frame(data, k));  // what the room reveals, event by event
  let checked = 0;
  for (const element of new Set(stage.boxOf.values())) {
    const node = isGroup(stage, element) ? stage.tree.byId.get(stage.tree.groups.get(element).output)
      : data.nodes.find((n) => n.element === element);
    const room = labelRows(stage, element).filter((r) => r[3] === "grad").map((r) => r[1]);
    for (const [k, state] of frames.entries()) {
      const view = nodeView(data, node, state);
      fits(wrap(spokenShort(view.grad, view.grad_range), 32), room, `${element} at ${k}`);
      checked++;
    }
  }
  assert.ok(checked >= 50, `${checked} lines checked`);
});

test("mlp3, folded: each edge's label holds what it says at every press, said short", async () => {
  const { data, stage, edges } = await folded("mlp3", 32);
  const dot = dotOf(stage, edges, "BT", false);
  const width = labelWidth(stage);
  let checked = 0;
  for (const edge of edges.filter((e) => e.label)) {
    const label = dot.match(new RegExp(`id="${edge.element}"[^\\n]*label=<(.*)>\\];`))[1];
    const room = label.split("<BR/>").map((l) => l.replace(/<[^>]*>/g, ""));  // the lines, without the tags around them
    for (let k = 0; k < data.events.length; k += 1) {
      const into = sentIntoParts(stage, k).get(edge.element);
      const along = [...frame(data, k).sent].filter(([e]) => stage.edgeShown.get(e) === edge.element)
        .map(([, e]) => ({ text: e.value, range: e.value_range }));
      const said = isGroup(stage, edge.head) && !isGroup(stage, edge.tail) ? [into] : along;
      for (const { text, range } of said.filter(Boolean)) {
        fits(wrap(spokenShort(text, range), width), room, `${edge.element} at ${k}`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 20, `${checked} labels checked`);
});

test("mlp3, folded: each layer's weights may be drawn beside it, on its rank, right of it", async () => {
  const { data, stage, edges } = await folded("mlp3", 32);
  const beside = besideParts(stage, edges);
  const nameOf = (element) => data.nodes.find((n) => n.element === element).name;
  const layers = new Map(data.groups.filter((g) => g.parent === "").map((g) => [g.element, g.name]));
  const pairs = beside.map((e) => `${nameOf(e.tail)} ${layers.get(e.head)}`).sort();
  assert.deepEqual(pairs, ["b1 layer1", "b2 layer2", "b3 layer3", "w1 layer1", "w2 layer2", "w3 layer3"]);
  const dot = dotOf(stage, edges, "BT", false, beside);
  for (const e of beside) {
    assert.ok(dot.includes(`{rank=same; ${e.tail}; ${e.head}}`), e.element);
    // written from the part, its arrowhead at the part: Graphviz draws it left to right, the weight right of its part
    assert.match(dot, new RegExp(`^  ${e.head} -> ${e.tail} \\[id="${e.element}".*dir=back\\];$`, "m"));
  }
  const below = dotOf(stage, edges, "BT", false);
  assert.ok(!below.includes("rank=same") && !below.includes("dir=back"));
});

for (const name of ["mlp3", "loop"]) {
  test(`${name}: opening and folding each top part says how many presses its steps take, and the new count`, async () => {
    // folded, a part's steps are a press per run of them (groups.py's runs); open, a press per step, unless a part
    // inside it is still folded: counted here from the payload, not from the stops the sentence is made from
    const { data, stage } = await folded(name, 32);
    Object.assign(stage, { replay: true, byStep: true, follow: false });
    const tops = data.groups.filter((g) => g.parent === "");
    let changed = 0;
    for (const group of tops) {
      const folded = stopsOf(stage);
      stage.open.add(group.element);
      placeBoxes(stage);
      stage.stops = stopsOf(stage);
      const inside = data.events.filter((e) => e.kind === "StepStarted"
        && ancestorsOf(stage, stage.tree.byId.get(e.node)).includes(group.element)).length;
      const nested = data.groups.some((g) => g.parent === group.element);
      const opened = recount(stage, folded, group, true);
      if (stage.stops.length === folded.length) {  // each of its runs was one step: the count stays, nothing is said
        assert.equal(opened, "");
        stage.open.delete(group.element);
        placeBoxes(stage);
        continue;
      }
      changed++;
      const presses = nested ? "\\d+" : String(inside);  // a part folded inside it is a press per run too
      assert.match(opened, new RegExp(`^Opened ${group.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\. Its steps take ${presses} presses `
        + `now, not ${group.runs.length} \\(open, a part's steps are stops of their own${nested ? ", but for the parts still folded inside it" : ""}\\): `
        + `${stage.stops.length - 1} in all\\.$`));
      const open = stage.stops;
      stage.open.delete(group.element);
      placeBoxes(stage);
      stage.stops = stopsOf(stage);
      assert.equal(stage.stops.length, folded.length);
      assert.match(recount(stage, open, group, false), new RegExp(`Its steps take ${group.runs.length} press(es)? now, not ${presses} `
        + `\\(folded, a part runs its steps one after another in one press\\): ${folded.length - 1} in all\\.$`));
    }
    assert.ok(changed >= 1, `${changed} parts changed the count`);
  });
}
