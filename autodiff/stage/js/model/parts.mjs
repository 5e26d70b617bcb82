// The program's parts, DOM-free: each group's children, depth and nodes (groups.py made them), and which box shows
// each node and which edges are drawn with the groups open now.

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
    // an edge into or out of a folded part carries no label: the part's card says what went in and out, and a
    // label would push its ranks apart
    const label = isGroup(tail) || isGroup(head) ? "" : edge.label;
    if (seen) seen.tracked = seen.tracked || edge.tracked;
    else drawn.set(element, { element, tail, head, tracked: edge.tracked, label });
  }
  return [...drawn.values()];
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
