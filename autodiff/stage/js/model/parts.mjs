// The program's parts, DOM-free: each group's children, depth and nodes (groups.py made them), and which box shows
// each node and which edges are drawn with the groups open now, and what an edge into a folded part says.

import { fourDigits } from "./numbers.mjs";

export const MAX_DRAWN = 48;  // a view with more boxes than this cannot be read whole on a screen: it is not tried first

export function programTree(data) {
  // each container's children (nodes and groups, in the order the program made them), each group's depth and
  // nodes: groups.py lists parents before children
  const groups = new Map(data.groups.map((g) => [g.element, g]));
  const depth = new Map();
  for (const g of data.groups) depth.set(g.element, g.parent ? depth.get(g.parent) + 1 : 0);
  const first = new Map(), byId = new Map();
  for (const node of data.nodes) {
    byId.set(node.id, node);
    for (let e = node.group; e; e = groups.get(e).parent) if (!first.has(e) || node.id < first.get(e)) first.set(e, node.id);
  }
  const items = [...data.nodes.map((node) => ({ parent: node.group, key: node.id, node })),
    ...data.groups.map((group) => ({ parent: group.parent, key: first.get(group.element) ?? Infinity, group }))];
  items.sort((a, b) => a.key - b.key || (a.group ? -1 : 1));
  const kids = new Map([["", []], ...data.groups.map((g) => [g.element, []])]);
  for (const item of items) kids.get(item.parent).push(item);
  let maxDepth = -1;
  depth.forEach((d) => { if (d > maxDepth) maxDepth = d; });
  return { groups, depth, kids, byId, maxDepth };
}

export function isGroup(element) {
  return /^g\d+$/.test(element);
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
  stage.edgeShown = new Map();
  const drawn = new Map();
  for (const edge of data.edges) {
    const tail = stage.boxOf.get(edge.source), head = stage.boxOf.get(edge.target);
    if (!tail || !head || tail === head) continue;
    const element = !isGroup(tail) && !isGroup(head) ? edge.element : `b_${tail}_${head}`;
    stage.edgeShown.set(edge.element, element);
    const seen = drawn.get(element);
    if (seen) {
      seen.tracked = seen.tracked || edge.tracked;
      seen.label = longest([seen.label, edge.label]);  // out of a folded part: one of its edges' values at a time
    } else drawn.set(element, { element, tail, head, tracked: edge.tracked, label: edge.label });
  }
  // into a folded part: what the part sent the node in all, as long as it is said after any run of the part's steps
  const rooms = inflowRooms(stage);
  drawn.forEach((edge) => { if (intoPart(edge.tail, edge.head)) edge.label = rooms.get(edge.element) || ""; });
  return [...drawn.values()];
}

function intoPart(tail, head) {
  return !isGroup(tail) && isGroup(head);
}

function longest(texts) {
  return texts.reduce((a, b) => (b.length > a.length ? b : a), "");
}

function addInflows(stage, until, after) {
  // each drawn edge from a node into a folded part -> what the part has sent that node up to event `until`, added
  // up: its numbers, or, for a value too large to carry them, its last value. `after(k, sums, element)` is called
  // after each event, with the edge it added to (or null)
  const { data } = stage;
  const sums = new Map();
  for (let k = 0; k <= until && k < data.events.length; k++) {
    const e = data.events[k];
    const element = e.kind === "GradientRegistered" && e.edge ? stage.edgeShown.get(e.edge) : null;
    if (!element || !intoPart(stage.boxOf.get(e.node), stage.boxOf.get(e.source))) {
      if (after) after(k, sums, null);
      continue;
    }
    const sum = sums.get(element);
    if (!sum || !sum.numbers || !e.numbers || sum.numbers.length !== e.numbers.length) {
      sums.set(element, { numbers: sum ? null : e.numbers && [...e.numbers], shape: e.shape, last: e.value });
    } else {
      e.numbers.forEach((v, j) => { sum.numbers[j] += v; });
      sum.last = e.value;
    }
    if (after) after(k, sums, element);
  }
  return sums;
}

function said(sum) {
  return sum.numbers ? nested(sum.numbers, JSON.parse(sum.shape)) : sum.last;
}

export function sentIntoParts(stage, index) {
  // each drawn edge from a node into a folded part -> what the part has sent that node up to event `index`, added
  // up (in the 30-sample loop, w1 -> the loop stands for 30 edges: it says their sum)
  const out = new Map();
  addInflows(stage, index).forEach((sum, element) => out.set(element, said(sum)));
  return out;
}

function inflowRooms(stage) {
  // each edge into a folded part -> the longest it says at the end of any run of a part's steps (where a press stops)
  const ends = new Set(stage.data.groups.flatMap((g) => g.runs.map((run) => run.last)));
  const rooms = new Map(), changed = new Set();
  const measure = (sums) => {
    changed.forEach((element) => rooms.set(element, longest([rooms.get(element) || "", said(sums.get(element))])));
    changed.clear();
  };
  const sums = addInflows(stage, Infinity, (k, sums, element) => {
    if (element) changed.add(element);
    if (ends.has(k)) measure(sums);
  });
  measure(sums);
  return rooms;
}

function nested(flat, shape) {
  // a flat row of numbers in the tensor's shape, written as Python writes one (`[[0.5, -1.25]]`), each to four
  // significant digits
  if (!shape.length) return fourDigits(flat[0]);
  const size = flat.length / shape[0];
  return `[${Array.from({ length: shape[0] }, (_, k) => nested(flat.slice(k * size, (k + 1) * size), shape.slice(1))).join(", ")}]`;
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
