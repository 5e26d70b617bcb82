// The program's parts, DOM-free: each group's children, depth and nodes (groups.py made them), and which box shows
// each node and which edges are drawn with the groups open now, and what an edge into a folded part says.

import { BRIEF_ABOVE, float32Number, float32Text, fourDigits, nested, shaped, significant } from "./numbers.mjs";

export const MAX_DRAWN = 48;  // a view with more boxes than this cannot be read whole on a screen: it is not tried first

export function programTree(data) {
  // each container's children (nodes and groups, in the order the program made them), each group's depth and
  // nodes: groups.py lists parents before children
  const groups = new Map(data.groups.map((g) => [g.element, g]));
  const depth = new Map();
  for (const g of data.groups) depth.set(g.element, g.parent ? depth.get(g.parent) + 1 : 0);
  const first = new Map(), byId = new Map(), byElement = new Map();
  for (const node of data.nodes) {
    byId.set(node.id, node);
    byElement.set(node.element, node);
    for (let e = node.group; e; e = groups.get(e).parent) if (!first.has(e) || node.id < first.get(e)) first.set(e, node.id);
  }
  const items = [...data.nodes.map((node) => ({ parent: node.group, key: node.id, node })),
    ...data.groups.map((group) => ({ parent: group.parent, key: first.get(group.element) ?? Infinity, group }))];
  items.sort((a, b) => a.key - b.key || (a.group ? -1 : 1));
  const kids = new Map([["", []], ...data.groups.map((g) => [g.element, []])]);
  for (const item of items) kids.get(item.parent).push(item);
  let maxDepth = -1;
  depth.forEach((d) => { if (d > maxDepth) maxDepth = d; });
  return { groups, depth, kids, byId, byElement, maxDepth, partsOf: partsTellingApart(data, groups) };
}

const REPEATED = new Set(["iteration", "function"]);  // the parts a program makes the same expressions in again

function partsTellingApart(data, groups) {
  // a loop makes the same expression once an iteration (the 30-sample loop's thirty `…²`), a class's method once a
  // call (micrograd's nine `w[0]`): where a node is named out of its box (a row of the Gradients container, a card),
  // the calls and iterations it was made in tell it from the others of its name, as the picture names them: from
  // the innermost whose name not all of them share, outwards until no other node of that name was made in those parts too
  // (`i = 3`; nested loops: `epoch = 1, i = 0`; `making Neuron 3`). Worked out here, not written into Python's
  // names: a 5,000-node loop's every caption and card would carry it (its payload 743 -> 986 KiB)
  const sharing = new Map();
  for (const node of data.nodes) {
    if (!sharing.has(node.name)) sharing.set(node.name, []);
    sharing.get(node.name).push(node);
  }
  const out = new Map();
  for (const same of sharing.values()) {
    if (same.length < 2) continue;
    const within = same.map((node) => {  // the names of the calls and iterations around each node, innermost first
      const names = [];
      for (let e = node.group; e; e = groups.get(e).parent) if (REPEATED.has(groups.get(e).kind)) names.push(groups.get(e).name);
      return names;
    });
    const holders = new Map();  // a part's name -> the nodes of `same` made in a part of that name
    within.forEach((names, k) => names.forEach((name) => {
      if (!holders.has(name)) holders.set(name, new Set());
      holders.get(name).add(k);
    }));
    within.forEach((names, k) => {
      const told = [];
      let alike = null;  // the nodes of `same` made in the parts told so far: null, every one of them
      for (const name of names) {
        if (alike && alike.size === 1) break;
        const held = holders.get(name);
        const fewer = alike ? both(alike, held) : held;
        if (fewer.size === (alike ? alike.size : same.length)) continue;  // the others left were made in one of this name too
        told.unshift(name);
        alike = fewer;
      }
      if (told.length) out.set(same[k].id, told.join(", "));
    });
  }
  return out;
}

function both(a, b) {
  const [small, large] = a.size < b.size ? [a, b] : [b, a];
  return new Set([...small].filter((k) => large.has(k)));
}

export function calledOf(stage, id, name) {
  // a node's name where it is said out of its box: `name` (the payload's, or a card's), and the parts it was made in
  // when other parts made a node of that name too (`…² (i = 3)`)
  const parts = stage.tree.partsOf.get(id);
  return parts ? `${name} (${parts})` : name;
}

export function isGroup(stage, element) {
  // a box (or an edge's end) that is a part: known by the payload's groups, not by how groups.py spells their ids
  return stage.tree.groups.has(element);
}

export function ancestorsOf(stage, node) {
  // the groups around a node, innermost first
  const out = [];
  for (let e = node ? node.group : ""; e; e = stage.tree.groups.get(e).parent) out.push(e);
  return out;
}

export function placeBoxes(stage) {
  // which box shows each node with the groups open now (its own, or its outermost folded group's), and the edges
  // drawn between boxes: several edges between two boxes are drawn once
  const { data, tree, open } = stage;
  stage.boxOf = new Map();
  for (const node of data.nodes) {
    let box = node.element;
    for (let e = node.group; e; e = tree.groups.get(e).parent) if (!open.has(e)) box = e;
    stage.boxOf.set(node.id, box);
  }
  stage.folded = [...stage.boxOf.values()].some((box) => isGroup(stage, box));  // a view with a part folded speaks short (dot.mjs)
  stage.edgeShown = new Map();
  const drawn = new Map();
  for (const edge of data.edges) {
    const tail = stage.boxOf.get(edge.source), head = stage.boxOf.get(edge.target);
    if (!tail || !head || tail === head) continue;
    // an edge with a folded part at an end exists in this view alone (it may stand for many of the payload's): its
    // id is made here, the one id the stage makes
    const element = !isGroup(stage, tail) && !isGroup(stage, head) ? edge.element : `b_${tail}_${head}`;
    stage.edgeShown.set(edge.element, element);
    const seen = drawn.get(element);
    // what it says ({text, range}: payload.py's Said), and the longest of it, which its label is laid out for
    const says = { text: edge.label, range: edge.label_range };
    if (seen) {
      seen.tracked = seen.tracked || edge.tracked;
      seen.says.push(says);  // out of a folded part: one of its edges' values at a time
      labelled(seen, seen.says);
    } else drawn.set(element, { element, tail, head, tracked: edge.tracked, label: edge.label, label_range: edge.label_range, says: [says] });
  }
  // into a folded part: what the part sent the node in all, as long as it is said at any press (a run's end)
  const inflows = inflowsOf(stage);
  drawn.forEach((edge) => {
    if (!intoPart(stage, edge.tail, edge.head)) return;
    edge.says = saidAtRuns(stage, inflows.get(edge.element), edge.head);
    labelled(edge, edge.says);
  });
  return [...drawn.values()];
}

function labelled(edge, says) {
  // `edge` labelled with the longest of what it says (the first, of texts as long)
  const { text, range } = says.reduce((a, b) => (b.text.length > a.text.length ? b : a));
  edge.label = text;
  edge.label_range = range;
}

function intoPart(stage, tail, head) {
  return !isGroup(stage, tail) && isGroup(stage, head);
}

const INFLOWS = new WeakMap();  // a payload -> the groups open -> its view's inflows: each view's worked out once

function inflowsOf(stage) {
  // each drawn edge from a node into a folded part -> the events that sent the node something from inside the part,
  // and the running total after each: its numbers, or, for a value too large to carry them, the last value sent
  // (with its range)
  const key = [...stage.open].sort().join(",");
  let views = INFLOWS.get(stage.data);
  if (!views) INFLOWS.set(stage.data, (views = new Map()));
  if (views.has(key)) return views.get(key);
  const out = new Map();
  stage.data.events.forEach((e, k) => {
    const element = e.kind === "GradientRegistered" && e.edge ? stage.edgeShown.get(e.edge) : null;
    if (!element || !intoPart(stage, stage.boxOf.get(e.node), stage.boxOf.get(e.source))) return;
    if (!out.has(element)) out.set(element, { at: [], totals: [], shape: e.shape });
    const flow = out.get(element), before = flow.totals.at(-1);
    const adds = e.numbers && (!before || (before.numbers && before.numbers.length === e.numbers.length));
    flow.at.push(k);
    // added in float32, as the engine adds gradients (each number sent as the engine prints it: Math.fround makes it
    // the float32 again)
    const numbers = adds ? e.numbers.map((v, j) => Math.fround(Math.fround(v) + (before ? before.numbers[j] : 0))) : null;
    flow.totals.push({ numbers, last: { text: e.value, range: e.value_range } });
  });
  views.set(key, out);
  return out;
}

function totalAt(flow, index) {
  // the running total after the last event at or before `index` (a binary search: a press is not a walk of the
  // trace), or null before the first
  let low = 0, high = flow.at.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (flow.at[mid] <= index) low = mid + 1;
    else high = mid;
  }
  if (!low) return null;
  const total = flow.totals[low - 1];
  if (total.said === undefined) total.said = total.numbers ? summed(total.numbers, JSON.parse(flow.shape)) : total.last;
  return total.said;  // written once: a press redraws every label
}

function summed(numbers, shape) {
  // a running total as payload.py's Said: written as Python's `brief` writes a value (more than four numbers each to
  // four significant digits), with its numbers as format.py's tensor_range sends them when all are finite: each as
  // the engine prints it, the number its text writes (a folded view says it from these, as it says Python's), four
  // or fewer nested as the tensor when one has more than four significant digits, more as their shape and range
  const printed = numbers.map(float32Number);
  let range = null;
  if (numbers.length > BRIEF_ABOVE && numbers.every(Number.isFinite)) range = { shape, low: Math.min(...printed), high: Math.max(...printed) };
  else if (numbers.every(Number.isFinite) && printed.some((v) => significant(float32Text(v)) > 4)) range = shaped(printed, shape);
  return { text: nested(numbers, shape, numbers.length > BRIEF_ABOVE ? fourDigits : float32Text), range };
}

export function sentIntoParts(stage, index) {
  // each drawn edge from a node into a folded part -> what the part has sent that node up to event `index`, added
  // up (in the 30-sample loop, w1 -> the loop stands for 30 edges: it says their sum), as {text, range}
  const out = new Map();
  inflowsOf(stage).forEach((flow, element) => {
    const said = totalAt(flow, index);
    if (said !== null) out.set(element, said);
  });
  return out;
}

function saidAtRuns(stage, flow, part) {
  // what an edge into `part` says at the end of each run of the part's steps, where a press stops
  const nothing = { text: "", range: null };
  if (!flow) return [nothing];
  return stage.tree.groups.get(part).runs.map((run) => totalAt(flow, run.last) || nothing);
}

export function drawnCount(stage, open, container = "") {
  let count = 0;
  for (const kid of stage.tree.kids.get(container)) {
    count += kid.group && open.has(kid.group.element) ? drawnCount(stage, open, kid.group.element) : 1;
    if (count > MAX_DRAWN) return count;
  }
  return count;
}

export function placeBoxesEdges(stage) {
  // each drawn edge's element -> whether a gradient can flow along it
  const out = new Map();
  for (const edge of stage.data.edges) {
    const shown = stage.edgeShown.get(edge.element);
    if (shown) out.set(shown, (out.get(shown) || false) || edge.tracked);
  }
  return out;
}
