// The replay's steps without a browser, on real payloads (tests/js/stage_fixtures.py writes them into the folder
// STAGE_FIXTURES names): with every part open, the stage's stops are the steps Python counts (the class report's
// "step 3 of 7"); with the top level folded, each run of a part's steps (groups.py added them up) is one press; the
// last frame has run every step the tape holds, and leaves each node as Python's still draws it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { checkPayload, unpack } from "../../autodiff/stage/js/model/contract.mjs";
import { placeBoxes, programTree } from "../../autodiff/stage/js/model/parts.mjs";
import { frame, narration, nodeView, stopsOf } from "../../autodiff/stage/js/model/steps.mjs";

const FOLDER = process.env.STAGE_FIXTURES;
const PROGRAMS = ["seed", "loop", "mlp3"];

async function loaded(name) {
  assert.ok(FOLDER, "STAGE_FIXTURES names no folder: run tests/js/stage_fixtures.py FOLDER first");
  const fixture = JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8"));
  assert.ok("packed" in fixture.payload, "the payload travels packed, as `wire` sends it");
  const data = await unpack(fixture.payload);
  checkPayload(data);  // throws, in words, on a key or an event kind the stage does not know
  return { fixture, data };
}

function pressedByStep(data, open) {
  // the fields the stops are worked out from: a replay pressed a step at a time, the parts in `open` unfolded
  const stage = { data, replay: true, byStep: true, follow: false, tree: programTree(data), open, boxOf: new Map(),
    edgeShown: new Map() };
  placeBoxes(stage);
  return stage;
}

for (const name of PROGRAMS) {
  test(`${name}: with every part open, each stop's caption is the step Python counts there`, async () => {
    const { fixture, data } = await loaded(name);
    const stops = stopsOf(pressedByStep(data, new Set(data.groups.map((g) => g.element))));
    assert.equal(stops[0], 0);
    assert.equal(stops.at(-1), data.events.length - 1);
    assert.equal(stops.length - 1, fixture.starts.length, "as many presses as Python's steps");
    stops.slice(1).forEach((stop, k) => {
      const caption = `step ${k + 1} of ${stops.length - 1}`;  // the stage's scrubber, on a stop (controller.mjs)
      assert.equal(caption, fixture.positions[stop], `the press to event ${stop}`);
    });
  });

  test(`${name}: with the top level folded, each run of a part's steps is one press`, async () => {
    const { data } = await loaded(name);
    const stops = stopsOf(pressedByStep(data, new Set()));
    const top = data.groups.filter((g) => g.parent === "");
    for (const group of top) {
      for (const run of group.runs) {
        const where = `${group.name}, its run ${run.first}-${run.last}`;
        assert.ok(stops.includes(run.last), `${where}: a press stops at its end`);
        const inside = stops.filter((s) => run.first <= s && s < run.last);
        assert.deepEqual(inside, [], `${where}: no press stops inside it`);
      }
    }
    const open = stopsOf(pressedByStep(data, new Set(data.groups.map((g) => g.element))));
    const folded = top.reduce((n, g) => n + g.runs.reduce((m, run) => m + run.steps - 1, 0), 0);
    assert.equal(stops.length, open.length - folded, "a run of n steps saves n - 1 presses, no more");
  });

  test(`${name}: the last frame has run every step and finished`, async () => {
    const { data } = await loaded(name);
    const last = frame(data, data.events.length - 1);
    const stepped = data.events.filter((e) => e.kind === "StepStarted").map((e) => e.node);
    assert.ok(last.finished && last.current === null);
    assert.deepEqual([...last.started].sort((a, b) => a - b), [...new Set(stepped)].sort((a, b) => a - b));
  });
}

// the programs drawn still too (the loop runs in the Playground's sandbox, which keeps no gradients container)
for (const name of ["seed", "mlp3"]) {
  test(`${name}: at the last frame every node says what Python's still says of it`, async () => {
    const { fixture, data } = await loaded(name);
    assert.ok(fixture.still, "the fixture has the still's node states");
    const last = frame(data, data.events.length - 1);
    assert.deepEqual(data.nodes.map((node) => String(node.id)).sort(), Object.keys(fixture.still).sort(),
      "the still draws the replay's nodes");
    for (const node of data.nodes) {
      const { state, grad } = nodeView(data, node, last);
      assert.deepEqual({ state, grad }, fixture.still[node.id], `${node.name} (NodeId ${node.id})`);
    }
  });
}

test("the folded programs fold: the loop and mlp3 have parts, the seed has none", async () => {
  const groups = {};
  for (const name of PROGRAMS) groups[name] = (await loaded(name)).data.groups;
  assert.equal(groups.seed.length, 0);
  assert.ok(groups.loop.some((g) => g.parent === "" && g.kind === "loop"));
  assert.ok(groups.mlp3.some((g) => g.parent === "" && g.kind === "function"));
});

test("mlp3, its top level folded: a part's run is told with its values said short, as its box says them", async () => {
  // the caption sits above the card, which lists every number: eight-digit float32s in it pushed the rest of the
  // caption out of its share of the panel
  const { data } = await loaded("mlp3");
  const stage = { ...pressedByStep(data, new Set()), answers: new Map() };
  let told = 0;
  for (const stop of stopsOf(stage)) {
    const sentence = narration(stage, stop, frame(data, stop));
    if (!sentence.includes("run at once")) continue;
    told++;
    for (const number of sentence.match(/-?\d+\.\d+(?:e[-+]\d+)?/g) || []) {
      const digits = number.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "");
      assert.ok(digits.length <= 4, `${number} in: ${sentence}`);
    }
  }
  assert.ok(told >= 3, `${told} runs of a part told`);
});
