// The edges into and out of a folded part without a browser, on real payloads (tests/js/stage_fixtures.py): each
// has room for a label, and an edge from a node into a part says what the part sent that node over the runs of its
// steps played so far, added up (groups.py added up each run), to four significant digits.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { unpack } from "../../autodiff/stage/js/model/contract.mjs";
import { dotOf, labelWidth, spokenShort, wrap } from "../../autodiff/stage/js/model/dot.mjs";
import { calledOf, isGroup, placeBoxes, programTree, sentIntoParts } from "../../autodiff/stage/js/model/parts.mjs";

const FOLDER = process.env.STAGE_FIXTURES;

async function folded(name) {
  // the program with its top level folded, as a stage draws it
  assert.ok(FOLDER, "STAGE_FIXTURES names no folder: run tests/js/stage_fixtures.py FOLDER first");
  const data = await unpack(JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8")).payload);
  const stage = { data, tree: programTree(data), open: new Set() };
  return { data, stage, edges: placeBoxes(stage) };
}

const numbersOf = (text) => text.match(/-?[\d.]+(?:e[-+]\d+)?/g).map(Number);
const longest = (texts) => texts.reduce((a, b) => (b.length > a.length ? b : a), "");

function sentBy(group, node, until) {
  // what `group`'s runs that ended by event `until` sent `node`, added up from Python's values
  const runs = group.runs.filter((run) => run.last <= until);
  const values = runs.flatMap((run) => run.sent.filter((f) => f.node === node).map((f) => JSON.parse(f.value).flat(Infinity)));
  return values.length ? values.reduce((sum, v) => sum.map((s, k) => s + v[k])) : null;
}

for (const name of ["loop", "mlp3"]) {
  test(`${name}, folded: an edge into a part has the room of the longest it says at a press, one out of it its longest edge's`, async () => {
    const { data, stage, edges } = await folded(name);
    const into = edges.filter((e) => !isGroup(stage, e.tail) && isGroup(stage, e.head));
    const out = edges.filter((e) => isGroup(stage, e.tail));
    assert.ok(into.length >= 2 && out.length >= 1, "the folded program has edges into and out of its parts");
    for (const edge of into) {
      const presses = stage.tree.groups.get(edge.head).runs.map((r) => r.last);  // where a press on the part stops
      const said = presses.map((k) => (sentIntoParts(stage, k).get(edge.element) || { text: "" }).text);
      assert.ok(edge.label, `${edge.element}: the part sends its node something`);
      assert.ok(said.includes(edge.label), edge.element);
      assert.equal(edge.label.length, longest(said).length, `${edge.element}: room for the longest`);
    }
    for (const edge of out) {
      const mapped = data.edges.filter((e) => stage.edgeShown.get(e.element) === edge.element).map((e) => e.label);
      assert.ok(mapped.length >= 1);
      assert.equal(edge.label, longest(mapped), edge.element);
    }
  });

  test(`${name}, folded: an edge into a part says what the part sent its node so far, added up`, async () => {
    const { data, stage, edges } = await folded(name);
    const into = edges.filter((e) => !isGroup(stage, e.tail) && isGroup(stage, e.head));
    const ends = [...new Set(data.groups.filter((g) => g.parent === "").flatMap((g) => g.runs.map((r) => r.last)))];
    let checked = 0;
    for (const index of [...ends, data.events.length - 1]) {
      const said = sentIntoParts(stage, index);
      for (const edge of into) {
        const expected = sentBy(stage.tree.groups.get(edge.head), Number(edge.tail.slice(1)), index);
        if (!expected) { assert.equal(said.get(edge.element), undefined, `${edge.element} at ${index}: nothing yet`); continue; }
        const { text, range } = said.get(edge.element);
        const got = numbersOf(text);
        assert.equal(got.length, expected.length, edge.element);
        got.forEach((v, k) => assert.ok(Math.abs(v - expected[k]) <= 5e-4 * Math.abs(expected[k]) + 1e-12,
          `${edge.element} at ${index}: ${text} for ${expected}`));
        // its numbers, beside it, as Python sends them: the least and greatest of the sum, or, for four numbers or
        // fewer, each as the engine prints it (the number its text writes), nested as the tensor, when one of them
        // has more than four significant digits to say short
        const near = (a, b) => Math.abs(a - b) <= 1e-6 * Math.abs(b) + 1e-12;
        if (expected.length > 4) {
          assert.ok(near(range.low, Math.min(...expected)) && near(range.high, Math.max(...expected)), `${edge.element}: ${JSON.stringify(range)}`);
        } else if (range === null) {
          assert.ok(text.match(/-?\d+\.\d+(?:e[-+]\d+)?/g).every((n) => n.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").length <= 4), text);
        } else assert.deepEqual([range].flat(Infinity), got, edge.element);  // the very numbers its text writes
        checked++;
      }
    }
    assert.ok(checked >= 4, `${checked} sums checked`);
  });
}

test("loop, folded: w1 -> the loop stands for its 30 iterations' edges and says their sum", async () => {
  const { data, stage } = await folded("loop");
  const loop = data.groups.find((g) => g.kind === "loop" && g.parent === "");
  const w1 = data.nodes.find((n) => n.name === "w1");
  const element = `b_${w1.element}_${loop.element}`;
  const along = data.edges.filter((e) => stage.edgeShown.get(e.element) === element);
  assert.equal(along.length, 30);
  const events = data.events.filter((e) => e.kind === "GradientRegistered" && along.some((a) => a.element === e.edge));
  assert.equal(events.length, 30);
  const sum = events.reduce((s, e) => s.map((v, k) => v + e.numbers[k]), events[0].numbers.map(() => 0));
  const said = numbersOf(sentIntoParts(stage, data.events.length - 1).get(element).text);
  said.forEach((v, k) => assert.ok(Math.abs(v - sum[k]) <= 5e-4 * Math.abs(sum[k]), `${v} for ${sum[k]}`));
});

for (const name of ["loop", "mlp3"]) {
  test(`${name}, folded: what an edge into a part says at any press fits the label laid out for it`, async () => {
    const { stage, edges } = await folded(name);
    stage.wrapWidth = 48;  // the widest a stage lays out
    const width = labelWidth(stage);
    const dot = dotOf(stage, edges, "BT", false);
    let checked = 0;
    for (const edge of edges.filter((e) => !isGroup(stage, e.tail) && isGroup(stage, e.head) && e.label)) {
      // the lines Graphviz lays the label out with
      const label = dot.match(new RegExp(`id="${edge.element}"[^\\n]*label=<(.*)>\\];`))[1];
      const room = label.split("<BR/>").map((l) => l.replace(/<[^>]*>/g, ""));  // the lines, without the tags around them
      for (const run of stage.tree.groups.get(edge.head).runs) {
        const said = sentIntoParts(stage, run.last).get(edge.element);
        if (!said) continue;
        const lines = wrap(spokenShort(said.text, said.range), width);  // as the picture writes it in a folded view
        assert.ok(lines.length <= room.length, `${edge.element}: ${lines} in ${room}`);
        assert.ok(Math.max(...lines.map((l) => l.length)) <= Math.max(...room.map((l) => l.length)), `${edge.element}: ${lines} in ${room}`);
        checked++;
      }
    }
    assert.ok(checked >= 3, `${checked} presses checked`);
  });
}

test("mlp3, folded: four numbers or fewer into a part are said as the engine prints them, as its card says them", async () => {
  const { data, stage, edges } = await folded("mlp3");
  let checked = 0;
  for (const edge of edges.filter((e) => !isGroup(stage, e.tail) && isGroup(stage, e.head))) {
    const sent = stage.tree.groups.get(edge.head).runs.flatMap((r) => r.sent).filter((f) => f.node === stage.tree.byElement.get(edge.tail).id);
    if (sent.length !== 1 || JSON.parse(sent[0].value).flat(Infinity).length > 4) continue;  // one run: its sum is the total
    // and with the numbers Python sent beside the part's sum (groups.py: summed in numpy)
    assert.deepEqual(sentIntoParts(stage, data.events.length - 1).get(edge.element), { text: sent[0].value, range: sent[0].value_range }, edge.element);
    checked++;
  }
  assert.ok(checked >= 3, `${checked} edges checked`);
});

test("loop: a node named out of its box says its iteration where other iterations made a node of its name", async () => {
  // the 30-sample loop makes the same seven expressions each iteration: its Gradients container listed ten rows all
  // `…²`. Named out of its box (a container row, a card), each is told apart by the iteration the picture names
  const { data, stage } = await folded("loop");
  const iterations = new Map(data.groups.filter((g) => g.kind === "iteration").map((g) => [g.element, g.name]));
  const called = data.nodes.map((node) => calledOf(stage, node.id, node.name));
  assert.equal(new Set(called).size, data.nodes.length, "every node has a name of its own");
  const inside = data.nodes.filter((node) => iterations.has(node.group));
  assert.ok(inside.length >= 30 * 7, inside.length);
  for (const node of inside) assert.equal(calledOf(stage, node.id, node.name), `${node.name} (${iterations.get(node.group)})`);
  const alone = data.nodes.filter((node) => data.nodes.filter((other) => other.name === node.name).length === 1);
  assert.ok(alone.length >= 2 && alone.every((node) => calledOf(stage, node.id, node.name) === node.name), "a name no other node has is said as it is");
});

test("nested loops: a node says the iterations of each depth where the nodes of its name differ", () => {
  // y = tanh(y·2) made in epochs 0 and 1, at i = 0 and 1 each; y + 1 once an epoch, outside the inner loop
  const groups = [{ element: "e0", name: "epoch = 0", parent: "", kind: "iteration" }, { element: "e1", name: "epoch = 1", parent: "", kind: "iteration" },
    ...["e0", "e1"].flatMap((e) => [0, 1].map((i) => ({ element: `${e}i${i}`, name: `i = ${i}`, parent: e, kind: "iteration" })))];
  const nodes = [{ id: 1, name: "x", group: "" },
    ...["e0", "e1"].flatMap((e, k) => [{ id: 10 * k + 2, name: "y = tanh(y·2)", group: `${e}i0` }, { id: 10 * k + 3, name: "y = tanh(y·2)", group: `${e}i1` },
      { id: 10 * k + 4, name: "y = y + 1", group: e }])];
  const data = { nodes, groups, edges: [] };
  const stage = { data, tree: programTree(data) };
  const said = Object.fromEntries(nodes.map((n) => [n.id, calledOf(stage, n.id, n.name)]));
  assert.deepEqual(said, { 1: "x", 2: "y = tanh(y·2) (epoch = 0, i = 0)", 3: "y = tanh(y·2) (epoch = 0, i = 1)", 4: "y = y + 1 (epoch = 0)",
    12: "y = tanh(y·2) (epoch = 1, i = 0)", 13: "y = tanh(y·2) (epoch = 1, i = 1)", 14: "y = y + 1 (epoch = 1)" });
});

test("calls: micrograd's nine w[0] say the call that made each, a line part never", () => {
  // each Neuron's weights are made in a call of its own (`making Neuron 3`), inside a layer's; the statement's line
  // part is the same in each call and tells nothing
  const groups = [{ element: "m", name: "making MLP 1", parent: "", kind: "function" },
    ...[1, 2].map((l) => ({ element: `l${l}`, name: `making Layer ${l}`, parent: "m", kind: "function" })),
    ...[1, 2, 3].map((n) => ({ element: `n${n}`, name: `making Neuron ${n}`, parent: n < 3 ? "l1" : "l2", kind: "function" })),
    ...[1, 2, 3].map((n) => ({ element: `s${n}`, name: "line 4", parent: `n${n}`, kind: "line" }))];
  const nodes = [1, 2, 3].flatMap((n) => [{ id: 10 * n, name: "w[0]", group: `s${n}` }, { id: 10 * n + 1, name: "b", group: `n${n}` }]);
  const data = { nodes, groups, edges: [] };
  const stage = { data, tree: programTree(data) };
  assert.deepEqual(nodes.map((n) => calledOf(stage, n.id, n.name)), ["w[0] (making Neuron 1)", "b (making Neuron 1)",
    "w[0] (making Neuron 2)", "b (making Neuron 2)", "w[0] (making Neuron 3)", "b (making Neuron 3)"]);
});
