// The DOT of a view and the words a replay says, without a browser, on real payloads (tests/js/stage_fixtures.py):
// the DOT draws every box and edge of a view once, under the payload's own ids (the stage composes none but a view's
// edge into or out of a folded part), with a visitor's text escaped; and every word the stage says about a node's
// gradient, a container's entry or a step's gradient being kept or consumed is the payload's (Python's); a summary of a
// value is written from the numbers Python sent beside it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { unpack } from "../../autodiff/stage/js/model/contract.mjs";
import { dotOf, labelRows, spokenShort, summarised, wrap } from "../../autodiff/stage/js/model/dot.mjs";
import { fourDigits } from "../../autodiff/stage/js/model/numbers.mjs";
import { placeBoxes, programTree, sentIntoParts } from "../../autodiff/stage/js/model/parts.mjs";
import { entryWords, frame, narration, nodeView, runningPart, stopsOf } from "../../autodiff/stage/js/model/steps.mjs";

const FOLDER = process.env.STAGE_FIXTURES;
const PROGRAMS = ["seed", "loop", "mlp3"];
const FINISH = ["SweepFreed", "BackwardFinished"];

async function payload(name) {
  assert.ok(FOLDER, "STAGE_FIXTURES names no folder: run tests/js/stage_fixtures.py FOLDER first");
  return unpack(JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8")).payload);
}

function viewOf(data, allOpen) {
  // a replay pressed a step at a time, its parts all open or its top level folded, as the stage lays it out
  const tree = programTree(data);
  const stage = { data, tree, open: allOpen ? new Set(tree.groups.keys()) : new Set(), wrapWidth: 48, replay: true,
    byStep: true, follow: false, answers: new Map(), boxOf: new Map(), edgeShown: new Map() };
  const edges = placeBoxes(stage);
  return { stage, edges, dot: dotOf(stage, edges, "BT", true) };
}

function drawn(dot) {
  // the ids the DOT gives its boxes, its frames (open parts) and its edges, and each edge's ends
  const boxes = [...dot.matchAll(/^\s*(\S+) \[id="([^"]+)"/gm)].map((m) => { assert.equal(m[1], m[2]); return m[2]; });
  const frames = [...dot.matchAll(/^\s*subgraph cluster_(\S+) \{\n\s*id="([^"]+)"/gm)].map((m) => { assert.equal(m[1], m[2]); return m[2]; });
  const edges = [...dot.matchAll(/^\s*(\S+) -> (\S+) \[id="([^"]+)"/gm)].map((m) => ({ tail: m[1], head: m[2], element: m[3] }));
  return { boxes, frames, edges };
}

for (const name of PROGRAMS) {
  test(`${name}, every part open: the DOT draws each node and part once and each edge once, by the payload's ids`, async () => {
    const data = await payload(name);
    const { dot } = viewOf(data, true);
    assert.ok(dot.startsWith("digraph G {") && dot.endsWith("}"));
    assert.equal(dot.split("<TABLE").length, dot.split("</TABLE>").length);
    const seen = drawn(dot);
    assert.deepEqual(seen.boxes.sort(), data.nodes.map((n) => n.element).sort());
    assert.deepEqual(seen.frames.sort(), data.groups.map((g) => g.element).sort());
    const elementOf = new Map(data.nodes.map((n) => [n.id, n.element]));
    const expected = data.edges.map((e) => `${elementOf.get(e.source)} -> ${elementOf.get(e.target)} ${e.element}`);
    assert.deepEqual(seen.edges.map((e) => `${e.tail} -> ${e.head} ${e.element}`).sort(), expected.sort());
  });
}

function renamed(data) {
  // the payload with every element id spelled otherwise (as if groups.py and graph_dot.py named them so)
  const ids = new Map([...data.nodes.map((n, k) => [n.element, `Qbox${k}`]), ...data.groups.map((g, k) => [g.element, `Qpart${k}`]),
    ...data.edges.map((e, k) => [e.element, `Qarrow${k}`])]);
  const id = (element) => (element ? ids.get(element) : element);
  return {
    ids,
    data: {
      ...data,
      nodes: data.nodes.map((n) => ({ ...n, element: id(n.element), group: id(n.group) })),
      groups: data.groups.map((g) => ({ ...g, element: id(g.element), parent: id(g.parent) })),
      edges: data.edges.map((e) => ({ ...e, element: id(e.element) })),
      events: data.events.map((e) => (e.edge ? { ...e, edge: id(e.edge) } : e)),
    },
  };
}

for (const name of PROGRAMS) {
  for (const allOpen of [true, false]) {
    test(`${name}, ${allOpen ? "open" : "folded"}: the ids drawn are the payload's, whatever Python names them`, async () => {
      const data = await payload(name);
      const { ids, data: other } = renamed(data);
      const back = new Map([...ids].map(([original, spelled]) => [spelled, original]));
      const { stage, dot } = viewOf(other, allOpen);
      // the same picture, word for word, once each id is spelled as before: no id is composed or parsed here
      assert.equal(dot.replace(/Q(box|part|arrow)\d+/g, (spelled) => back.get(spelled)), viewOf(data, allOpen).dot);
      for (const node of other.nodes) {
        if (stage.boxOf.get(node.id) === node.element) assert.equal(labelRows(stage, node.element)[0][1], wrap(node.title, 48)[0]);
      }
      const madeHere = drawn(dot).edges.filter((e) => !other.edges.some((p) => p.element === e.element));
      assert.ok(madeHere.every((e) => e.element === `b_${e.tail}_${e.head}` && (stage.tree.groups.has(e.tail) || stage.tree.groups.has(e.head))));
      assert.equal(madeHere.length > 0, !allOpen && data.groups.length > 0);
    });
  }
}

test("a visitor's text in a box is escaped in the DOT, never read as its markup", async () => {
  const data = await payload("seed");
  const nodes = data.nodes.map((n, k) => (k ? n : { ...n, title: 'a<b>&c "d"' }));
  const { dot } = viewOf({ ...data, nodes }, true);
  assert.ok(dot.includes("a&lt;b&gt;&amp;c &quot;d&quot;") && !dot.includes("a<b>"));
});

function changedWords(data) {
  // each of the payload's words said otherwise (a template keeps its `{}`), and each step's kept/consumed sentence
  const words = Object.fromEntries(Object.entries(data.words).map(([key, said]) => [key, `‹${said.toUpperCase()}›`]));
  const events = data.events.map((e, k) => (e.kind === "GradientConsumed" ? { ...e, text: `Python's sentence ${k}.` } : e));
  return { ...data, words, events };
}

for (const name of PROGRAMS) {
  test(`${name}: every word the stage says of a gradient, an entry or a consumed step is the payload's`, async () => {
    const data = changedWords(await payload(name));
    const lines = ["grad_kept", "grad_consumed", "grad_held"];  // the held line's ends are the others' too: last
    const lineOf = (text) => lines.find((key) => {
      const [before, after] = data.words[key].split("{}");
      return text.startsWith(before) && text.endsWith(after);
    });
    const entries = new Set(["entry_kept", "entry_waiting", "entry_running"].map((key) => data.words[key]));
    const said = new Set();
    for (let k = 0; k < data.events.length; k++) {
      const state = frame(data, k);
      for (const node of data.nodes) {
        const { grad } = nodeView(data, node, state);
        assert.ok(grad === node.grad || Object.values(data.words).includes(grad) || lineOf(grad), `${node.name} at ${k}: ${grad}`);
        said.add(lineOf(grad));
      }
      for (const id of state.container.keys()) assert.ok(entries.has(entryWords(data, state, id)), `entry of ${id} at ${k}`);
    }
    assert.ok(said.has("grad_kept") && said.has("grad_consumed"), "a leaf's kept line and an op's consumed line are both said");
    const { stage } = viewOf(data, true);
    stage.stops = stopsOf(stage);
    let told = 0;
    for (const stop of stage.stops) {
      const sentence = narration(stage, stop, frame(data, stop));
      assert.ok(!/container keeps it|leaves the container/.test(sentence), sentence);  // the stage's own words, once
      const step = data.events.slice(0, stop + 1).findLastIndex((e) => e.kind === "StepStarted");
      const group = data.events.slice(step, stop + 1);  // the step this stop ends (not the cleanup after the last)
      const consumed = group.filter((e) => e.kind === "GradientConsumed");
      if (step >= 0 && consumed.length && !group.some((e) => FINISH.includes(e.kind))) { consumed.forEach((e) => assert.ok(sentence.includes(e.text), sentence)); told++; }
    }
    assert.ok(told >= 2, `${told} steps told`);
  });
}

for (const name of ["mlp3", "loop"]) {
  test(`${name}: a summary is written from the numbers Python sent beside a value, not from the value's text`, async () => {
    // every digit of each value a summary stands for made unreadable: a folded view's boxes and an open view's edges
    // say the same, and each summary says its range's shape and its least and greatest number to four digits
    const data = await payload(name);
    const garbled = (text) => text.replace(/\d/g, "?");
    const summary = (range) => range && !Array.isArray(range) && typeof range === "object";  // more than four numbers: said as a summary
    const unreadableValues = { ...data, nodes: data.nodes.map((n) => (summary(n.value_range) ? { ...n, value: garbled(n.value) } : n)) };
    const unreadableLabels = { ...data, edges: data.edges.map((e) => (summary(e.label_range) ? { ...e, label: garbled(e.label) } : e)) };
    const values = (view) => [...new Set(view.stage.boxOf.values())].flatMap((box) => labelRows(view.stage, box).filter((r) => r[3] === "value"));
    const folded = values(viewOf(data, false));
    assert.deepEqual(values(viewOf(unreadableValues, false)), folded);  // folded, every box says its value short
    assert.equal(viewOf(unreadableLabels, true).dot, viewOf(data, true).dot);  // open, an edge says a large tensor short
    assert.ok(data.edges.some((e) => summary(e.label_range)), "an edge carries a tensor of more than four numbers");
    const summaries = folded.map((r) => r[1]).filter((t) => / (from|all) /.test(t));
    const ranged = data.nodes.filter((n) => summary(n.value_range));
    assert.ok(summaries.length >= 1 && ranged.length >= 1, `${summaries.length} summaries`);
    for (const node of ranged) {
      const { shape, low, high } = node.value_range;
      const said = low === high ? `all ${fourDigits(low)}` : `from ${fourDigits(low)} to ${fourDigits(high)}`;
      assert.equal(summarised(node.value, node.value_range), `value [${shape.join(", ")}] ${said}`, node.element);
    }
  });
}

function readAloud(text) {
  // how the stage read a text before its numbers travelled beside it (each number printed with more than four
  // significant digits said to four): the words it said then, which the numbers must say again
  const significant = (n) => n.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").length;
  return text.replace(/-?\d+\.\d+(?:e[-+]\d+)?/g, (n) => (significant(n) > 4 ? fourDigits(Number(n)) : n));
}

// how many numbers a tensor's numbers sent beside a text stand for: four or fewer nested as the tensor (a scalar a
// bare number), more as their shape and range
const sizeOf = (range) => (typeof range === "number" ? 1 : Array.isArray(range) ? range.flat(Infinity).length
  : range.shape.reduce((a, b) => a * b, 1));

for (const name of ["mlp3", "loop", "wide"]) {
  test(`${name}: a folded view says every number from the numbers Python sent beside its text, never from the text`, async () => {
    // every digit of every text that comes with its numbers (a node's value and gradient lines, an edge's label, an
    // event's value and total, a part's flows; tensors of 1 to 4, 5 to 16 and more than 16 numbers) made unreadable:
    // the folded view draws the same DOT, and says the same gradient lines, edge labels and captions at every press
    const data = await payload(name);
    const garbled = (text, range) => (range ? text.replace(/\d/g, "?") : text);
    const flows = (list) => list.map((f) => ({ ...f, value: garbled(f.value, f.value_range) }));
    const unreadable = {
      ...data,
      nodes: data.nodes.map((n) => ({ ...n, value: garbled(n.value, n.value_range), grad: garbled(n.grad, n.grad_range), wide: garbled(n.wide, n.wide_range) })),
      edges: data.edges.map((e) => ({ ...e, label: garbled(e.label, e.label_range) })),
      events: data.events.map((e) => (e.kind === "GradientRegistered"
        ? { ...e, value: garbled(e.value, e.value_range), total: garbled(e.total, e.total_range) } : e)),
      groups: data.groups.map((g) => ({ ...g, runs: g.runs.map((r) => ({ ...r, came_in: flows(r.came_in), sent: flows(r.sent) })) })),
    };
    const [view, blind] = [viewOf(data, false), viewOf(unreadable, false)];
    assert.equal(blind.dot, view.dot);  // every box and every edge's label, laid out for all it will say
    const boxes = [...new Set(view.stage.boxOf.values())];
    const saidAt = ({ stage }, k) => {
      const state = frame(stage.data, k), { tree } = stage;
      const grads = boxes.map((box) => {
        const id = (tree.byElement.get(box) || tree.byId.get(tree.groups.get(box).output)).id;
        const { grad, grad_range } = nodeView(stage.data, stage.data.nodes.find((n) => n.id === id), state);
        return spokenShort(grad, grad_range);
      });
      const into = [...sentIntoParts(stage, k)].map(([edge, { text, range }]) => `${edge}: ${spokenShort(text, range)}`);
      const along = [...state.sent].map(([edge, e]) => `${edge}: ${spokenShort(e.value, e.value_range)}`);
      const running = runningPart(stage, state) ? narration(stage, k, state) : "";  // a folded part's run, told short
      return { grads, into, along, running };
    };
    let runs = 0;
    for (let k = 0; k < data.events.length; k += 1) {
      const said = saidAt(view, k);
      assert.deepEqual(saidAt(blind, k), said, `at ${k}`);
      runs += Boolean(said.running);
    }
    assert.ok(runs >= 1, `${runs} runs of a folded part told`);
    // where a text writes its tensor out (four numbers or fewer) or Python summarised it (more than 16), the numbers
    // say what the stage said reading the text: not one word changed
    const texts = [
      ...data.nodes.flatMap((n) => [[n.value, n.value_range], [n.grad, n.grad_range], [n.wide, n.wide_range]]),
      ...data.edges.map((e) => [e.label, e.label_range]),
      ...data.events.filter((e) => e.kind === "GradientRegistered").flatMap((e) => [[e.value, e.value_range], [e.total, e.total_range]]),
      ...data.groups.flatMap((g) => g.runs.flatMap((r) => [...r.came_in, ...r.sent].map((f) => [f.value, f.value_range]))),
      ...data.events.map((_, k) => [...sentIntoParts(view.stage, k).values()].map(({ text, range }) => [text, range])).flat(),
    ].filter(([, range]) => range && (sizeOf(range) <= 4 || sizeOf(range) > 16));
    for (const [text, range] of texts) assert.equal(spokenShort(text, range), readAloud(text), text);
    assert.ok(texts.some(([text, range]) => spokenShort(text, range) !== text), "some number is said shorter");
    const [few, many] = [texts.filter(([, r]) => sizeOf(r) <= 4), texts.filter(([, r]) => sizeOf(r) > 16)];
    if (name === "wide") {  // Python's summaries of more than 16 numbers, one of them all one number
      assert.ok(many.length >= 6 && many.some(([text]) => text.includes(", all ")), `${many.length} summaries`);
    } else assert.ok(few.length >= 10 && few.some(([, r]) => Array.isArray(r[0])) && few.some(([, r]) => !Array.isArray(r[0])), `${few.length} texts`);
  });
}
