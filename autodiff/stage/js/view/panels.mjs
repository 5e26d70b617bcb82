// The panels beside the graph: the chain rule of the running step, the Gradients container, the legend and
// the table in words.

import { nodeById, nameOf } from "../model/contract.mjs";
import { calledOf } from "../model/parts.mjs";
import { question, runningPart, entryWords } from "../model/steps.mjs";
import { SVG_NS, element, table, strong } from "./dom.mjs";
import { verdictLine, askForm } from "../features/exercise.mjs";

export function watchTable(stage) {  // the table in words is filled when opened, then kept up to date
  stage.root.querySelector(".stage-table").addEventListener("toggle", () => fillTable(stage));
}

export function drawStep(stage, state) {
  // the chain rule of the running step in numbers: what it received, times each input's local derivative, is
  // what it sends; where paths meet, the sum written out
  const { data, root } = stage;
  const box = root.querySelector(".stage-step");
  const step = state.current;
  if (!step) {
    const leaves = data.nodes.filter((n) => n.grad_kind === "leaf" && state.received.has(n.id) && data.sums[n.id]);
    const parts = [element("p", "stage-note", "No step is running at this event.")];
    if (leaves.length && state.started.size) {
      parts.push(element("p", "stage-note", "Where each kept gradient came from:"));
      for (const n of leaves) parts.push(sumLine(stage, data.sums[n.id]));
    }
    return box.replaceChildren(...parts);
  }
  const running = runningPart(stage, state);
  if (running) return box.replaceChildren(...partCard(stage, running));
  const card = data.cards[state.currentAt];
  const q = question(stage, state.currentAt);
  const upstream = card ? card.upstream : state.upstream ?? "—";
  const head = element("p", "stage-note");
  head.append(strong(calledOf(stage, step.node, card ? card.title : nameOf(data, step.node))), ` received the gradient ${upstream}.`);
  const parts = [head];
  const sum = data.sums[step.node];
  if (sum && sum.terms.length > 1) parts.push(element("p", "stage-note", "Its paths met: the gradients sent along them add up."), sumLine(stage, sum));
  if (!step.parents.length) {
    parts.push(element("p", "stage-note", step.op && nodeById(data, step.node)?.grad_kind === "leaf"
      ? "A leaf has no inputs: its step only takes its gradient, and for a leaf that asked for one (require_grad) the container keeps it."
      : "It has no tracked inputs: its step only consumes its gradient."));
    return box.replaceChildren(...parts);
  }
  if (q && !stage.answers.has(q.key)) {
    parts.push(askForm(stage, q, card));
    return box.replaceChildren(...parts);
  }
  if (q) parts.push(verdictLine(stage.answers.get(q.key)));
  const sent = state.flows.slice();
  step.parents.forEach((parent, k) => {
    const i = sent.findIndex((f) => f.node === parent);
    const flow = i >= 0 ? sent.splice(i, 1)[0] : null;
    parts.push(cardInput(stage, step, k, card, flow));
  });
  box.replaceChildren(...parts);
}

function partCard(stage, { group, run }) {
  // a folded part's steps in one card: what came into it, and what it sent to each node outside it (added up)
  const head = element("p", "stage-note");
  head.append(strong(group.name), ` (${group.summary}) runs ${run.steps} of its ${group.steps} steps now.`);
  const parts = [head];
  if (run.came_in.length) {
    parts.push(element("p", "stage-note", "Into it came:"));
    const list = element("ul", "card-paths");
    run.came_in.forEach((f) => list.append(element("li", "", `${f.value} at ${calledOf(stage, f.node, f.name)}`)));
    parts.push(list);
  }
  if (run.sent.length) {
    parts.push(element("p", "stage-note", "It sent out of itself, added up over these steps:"));
    for (const f of run.sent) {
      const row = element("div", "card-input");
      const to = element("p", "card-to");
      to.append("to ", strong(calledOf(stage, f.node, f.name)), ": ");
      row.append(to, element("p", "card-math", f.value));
      parts.push(row);
    }
  } else {
    parts.push(element("p", "stage-note", "It sent nothing out of itself in these steps: its gradients stay inside it for now."));
  }
  parts.push(element("p", "stage-note", "Open it (click it, or its button under the graph) to see each step's chain rule."));
  return parts;
}

function cardInput(stage, step, k, card, flow) {
  const input = card ? card.inputs[k] : null, parent = step.parents[k];
  const row = element("div", "card-input");
  const head = element("p", "card-to");
  head.append("to ", strong(calledOf(stage, parent, input ? input.input : nameOf(stage.data, parent))), ": ");
  if (input && input.derivative) {  // `∂(x·3)/∂x = 3`, not `= 3 = 3`
    const known = input.derivative.endsWith(` = ${input.derivative_value}`) || !input.derivative_value;
    head.append(known ? input.derivative : `${input.derivative} = ${input.derivative_value}`);
  }
  else head.append(`rule ${input ? input.rule : step.rules[k]}`);
  row.append(head);
  if (input) row.append(element("p", "card-math", input.product));
  // what went, as the product above wrote it (the event's value is the picture's, four digits from five numbers on)
  const sent = flow && (input ? input.sends : flow.value);
  const status = flow ? `sent ${sent}: ${flow.accumulated ? "added to its entry" : "a new entry in the container"}` : "not sent yet";
  row.append(element("p", `card-status${flow ? "" : " waiting"}`, status));
  return row;
}

function sumLine(stage, sum) {
  const p = element("p", "card-sum");
  p.append(strong(`${calledOf(stage, sum.node, nameOf(stage.data, sum.node))}: `), element("span", "card-sum-text", sum.text));
  const list = element("ul", "card-paths");
  sum.terms.forEach((term) => list.append(element("li", "", `${term.value} ${term.path}`)));
  const wrap = element("div", "card-sum-box");
  wrap.append(p);
  if (sum.terms.length > 1) wrap.append(list);
  return wrap;
}

const CONTAINER_COLUMNS = ["Node", "Gradient", "Shape", "Entry"];

export function drawContainer(stage, state) {
  // the container's entries as a table (rows of a grid, with the table's roles): a row off screen is not laid out
  // (`content-visibility`), and the rows are updated in place, so a long container steps as fast as a short one
  const { data, root } = stage;
  const box = root.querySelector(".stage-container");
  if (!state.container.size) return box.replaceChildren(element("p", "stage-note", "The container is empty."));
  const rows = [...state.container.entries()].sort((a, b) => a[0] - b[0])
    .map(([node, entry]) => [calledOf(stage, node, nameOf(data, node)), entry.total_full, entry.shape, entryWords(data, state, node)]);
  let body = box.querySelector(".grad-body");
  if (!body) {
    const grid = element("div", "grad-table");
    grid.setAttribute("role", "table");
    grid.setAttribute("aria-label", "The Gradients container");
    const head = element("div", "grad-row grad-head");
    head.setAttribute("role", "row");
    CONTAINER_COLUMNS.forEach((c) => { const th = element("span", "", c); th.setAttribute("role", "columnheader"); head.append(th); });
    const heads = element("div");
    heads.setAttribute("role", "rowgroup");
    heads.append(head);
    body = element("div", "grad-body");
    body.setAttribute("role", "rowgroup");
    grid.append(heads, body);
    box.replaceChildren(grid);
  }
  while (body.children.length > rows.length) body.lastElementChild.remove();
  rows.forEach((row, k) => {
    let tr = body.children[k];
    if (!tr) {
      tr = element("div", "grad-row");
      tr.setAttribute("role", "row");
      CONTAINER_COLUMNS.forEach(() => { const cell = element("span"); cell.setAttribute("role", "cell"); tr.append(cell); });
      body.append(tr);
    }
    row.forEach((text, c) => { if (tr.children[c].textContent !== text) tr.children[c].textContent = text; });
  });
}

export function drawLegend(stage) {
  // every state this picture shows at some event, in one fixed place: stepping never resizes the graph. Worked out
  // from the events' kinds, not by replaying each event over each node (a 5,000-node replay has 18,000 events)
  const { data, root } = stage;
  const present = new Set(data.nodes.map((n) => n.state));
  let flows = false;
  if (stage.replay) {
    const kinds = new Set(data.events.map((e) => e.kind));
    const onTape = new Set((data.events.find((e) => e.kind === "TapeBuilt") || { nodes: [] }).nodes);
    if (kinds.has("StepStarted")) present.add("current");
    for (const node of data.nodes) {
      if (node.grad_kind === "op" && onTape.has(node.id)) present.add("consumed");
      if (node.grad_kind !== "none" && kinds.has("TapeBuilt") && !onTape.has(node.id)) present.add("unreached");
    }
    if (data.events.some((e) => e.kind === "SweepFreed" && e.nodes.length)) present.add("swept");
    if (kinds.has("Recomputed")) present.add("recomputed");
    flows = data.events.some((e) => e.kind === "GradientRegistered" && e.source !== null);
  }
  if (data.groups.length) present.add("group");
  const chips = Object.keys(data.legend).filter((key) => present.has(key)).map((key) => chip(key, data.legend[key]));
  if (data.edges.some((e) => !e.tracked)) chips.push(chip("untracked_edge", data.legend.untracked_edge, "line"));
  if (flows) chips.push(chip("flow", data.legend.flow, "line"));
  root.querySelector(".stage-legend").replaceChildren(...chips);
}

function chip(key, text, shape = "box") {
  const item = element("span", "chip");
  item.setAttribute("role", "listitem");
  const swatch = document.createElementNS(SVG_NS, "svg");
  swatch.setAttribute("viewBox", "0 0 30 16");
  swatch.setAttribute("aria-hidden", "true");
  swatch.setAttribute("class", "chip-swatch");
  if (shape === "box") {
    const rect = document.createElementNS(SVG_NS, "rect");
    Object.entries({ x: 2, y: 2, width: 26, height: 12, rx: 3 }).forEach(([k, v]) => rect.setAttribute(k, v));
    rect.setAttribute("class", `swatch s-${key}`);
    swatch.append(rect);
  } else {
    const line = document.createElementNS(SVG_NS, "line");
    Object.entries({ x1: 2, y1: 8, x2: 28, y2: 8 }).forEach(([k, v]) => line.setAttribute(k, v));
    line.setAttribute("class", `swatch-line ${key}`);
    swatch.append(line);
  }
  item.append(swatch, element("span", "", text));
  return item;
}

export function fillTable(stage) {
  // the picture in words, for a screen reader and for anyone who wants the numbers in a list
  const { data, root } = stage;
  const body = root.querySelector(".stage-table-body");
  if (!body || !stage.views || !root.querySelector(".stage-table").open) return;  // filled when opened
  const rows = data.nodes.map((node) => {
    const view = stage.views.get(node.element);
    return [node.title, node.detail, node.value.replace(/^value /, ""), view.grad, data.legend[view.state] || view.state];
  });
  const existing = body.querySelector("table");
  if (existing) {  // update in place: a row a reader is on keeps its focus
    existing.querySelectorAll("tbody tr").forEach((tr, k) => {
      [...tr.cells].forEach((cell, c) => { if (cell.textContent !== rows[k][c]) cell.textContent = rows[k][c]; });
    });
    return;
  }
  const t = table(["Node", "NodeId and op", "Value", "Gradient", "State"], rows);
  t.querySelectorAll("tbody tr").forEach((tr, k) => {
    tr.tabIndex = 0;  // focusing a row marks its node in the picture
    tr.onfocus = () => stage.nodes.get(data.nodes[k].element)?.classList.add("focused");
    tr.onblur = () => stage.nodes.get(data.nodes[k].element)?.classList.remove("focused");
  });
  body.replaceChildren(t);
}
