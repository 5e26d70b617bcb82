/**
 * The Training lesson's live stage: the network's graph with every value and gradient, the decision boundary with
 * the training points (a click adds one), each hidden unit over the plane, the loss curve, and the numbers of the
 * iteration on screen. The server computes iterations ahead in chunks; this plays them at `rate` a second, so the
 * page does not rerun per iteration. Before the first iteration it draws the graph that iteration builds (its forward,
 * the `preview`). Its colours are the contrast-tested palette's (ui/training_stage.py writes them as custom
 * properties, light and dark); its DOM is made element by element with the stage's helpers (view/dom.mjs), no HTML
 * parsed, and it follows the page's theme as the stage does (view/theme.mjs). The contract (ui/training_stage.py's
 * TypedDicts):
 *
 * @typedef {{rows: number, cols: number, data: number[]}} Grid
 * @typedef {{name: string, op: string, ops: string[], shape: number[], kind: string, inputs: number[], value: Grid, grad: (Grid|null)}} LiveNodeWire
 * @typedef {{number: number, loss: number, accuracy: number, tape: number, bytesBefore: number, bytesAfter: number, samples: number, rows: number[], nodes: LiveNodeWire[], parameters: Object<string, Grid>, gradients: Object<string, Grid>, updated: Object<string, Grid>}} FrameWire
 * @typedef {{action: string, at: number, id: number, point?: number[]}} Command
 * @typedef {{nodes: LiveNodeWire[], tape: number, parameters: Object<string, Grid>}} PreviewWire
 * @typedef {{signature: string, iterations: number, frames: FrameWire[], preview: (PreviewWire|null), losses: number[], points: number[][], labels: number[], extent: number, learningRate: number, rate: number, playing: boolean, canPlay: boolean, message: (string|null), serverRuns: number, presenter: boolean, answered: number}} TrainingPayload
 */

import { fourDigits } from "../autodiff/stage/js/model/numbers.mjs";
import { newestOnly } from "../autodiff/stage/js/hosts/mounts.mjs";
import { element, svgElement } from "../autodiff/stage/js/view/dom.mjs";
import { followTheme } from "../autodiff/stage/js/view/theme.mjs";

const CELLS = 40; // the boundary's grid, cells a side
const UNIT_CELLS = 16;
const states = new WeakMap();

const fmt = (v) => fourDigits(v).replace("-", "−");  // as the stage and Python write it: 11.00 for 10.996227
const short = (v) => {  // a number in a cell: at most 6 characters
  const a = Math.abs(v);
  const text = a === 0 ? "0" : a < 0.01 || a >= 1000 ? v.toExponential(0).replace("e", "e") : v.toPrecision(a < 1 ? 2 : 3);
  return text.replace("-", "−");
};
const signed = (v) => (v < 0 ? `(${fmt(v)})` : fmt(v));
const rgba = ([r, g, b], a) => `rgba(${r},${g},${b},${a.toFixed(3)})`;
// a cell's colour over the box, stronger with |v|, never so strong that the number on it loses its 4.5:1
const heat = (v, scale, pos, neg, ceiling) => (scale > 0 ? rgba(v >= 0 ? pos : neg, 0.08 + (ceiling - 0.08) * Math.min(1, Math.abs(v) / scale)) : "transparent");
const rgbOf = (hex) => hex.match(/[0-9a-f]{2}/gi).map((pair) => parseInt(pair, 16));  // "#rrggbb" to its channels

/** The palette's colours for the theme the stage is in now (the custom properties of ui/training_stage.py). */
function colours(root) {
  const style = getComputedStyle(root), read = (name) => style.getPropertyValue(`--tl-${name}`).trim();
  return { pos: rgbOf(read("pos")), neg: rgbOf(read("neg")), gpos: rgbOf(read("gpos")), gneg: rgbOf(read("gneg")),
    text: rgbOf(read("text")), ceiling: Number(read("heat-max")) };
}

const maxAbs = (data) => data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const norm = (grid) => Math.sqrt(grid.data.reduce((s, v) => s + v * v, 0));
const bytes = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

/** The network's probabilities of class 1 at (x, y), with the frame's parameters (float64, for the pictures). */
function hiddenAt(p, x, y) {
  const w1 = p.w1.data, b1 = p.b1.data, units = p.w1.cols, out = new Float64Array(units);
  for (let j = 0; j < units; j++) out[j] = Math.max(0, x * w1[j] + y * w1[units + j] + b1[j]);
  return out;
}
function probabilityAt(p, x, y) {
  const h = hiddenAt(p, x, y), w2 = p.w2.data, b2 = p.b2.data;
  let z0 = b2[0], z1 = b2[1];
  for (let j = 0; j < h.length; j++) { z0 += h[j] * w2[2 * j]; z1 += h[j] * w2[2 * j + 1]; }
  return 1 / (1 + Math.exp(z0 - z1));
}

function skeleton(parent) {
  const title = (text) => element("h4", "tl-title", text);
  const key = (cls, text) => element("span", cls, text);
  const radio = (value, text, checked) => {
    const input = element("input", "", undefined, { type: "radio", name: "tl-class", value });
    input.checked = checked;
    const label = element("label");
    label.append(input, ` ${text}`);
    return label;
  };
  const head = element("div", "tl-head");
  const controls = element("div", "tl-controls", undefined, { role: "group", "aria-label": "Training controls" });
  controls.append(element("button", "tl-play", undefined, { type: "button" }), element("button", "tl-step", "One iteration", { type: "button" }),
    element("button", "tl-replay", undefined, { type: "button", hidden: "" }));
  head.append(controls, element("p", "tl-numbers", undefined, { "aria-live": "off" }));
  const graph = element("div", "tl-graph");
  const legend = element("p", "tl-key");
  legend.append("Grids (each on its own scale, 6 samples of a batch): values ", key("k-pos", "> 0"), " ", key("k-neg", "< 0"),
    ", gradients ∂loss/∂x ", key("k-gpos", "> 0"), " ", key("k-gneg", "< 0"),
    ". Thick border: a parameter; dashed: data. Edges carry backward's gradient ‖∂‖. Point at or focus a weight.");
  graph.append(title("The iteration's graph: forward values and, after backward, gradients"), element("div", "tl-svg"),
    legend, element("p", "tl-detail", undefined, { "aria-live": "polite" }));
  const plane = element("div", "tl-plane");
  plane.append(element("canvas", "tl-boundary", undefined, { width: CELLS, height: CELLS, "aria-hidden": "true" }),
    svgElement("svg", { class: "tl-points", role: "img", tabindex: "0" }));
  const edit = element("div", "tl-edit", undefined, { role: "group", "aria-label": "Add points" });
  edit.append(element("span", "", "A click adds a point of"), radio("0", "class 0 (circle)", true), radio("1", "class 1 (square)", false),
    element("button", "tl-clear", "Clear the points", { type: "button" }));
  const units = element("div");
  units.append(title("Each hidden unit over the plane"), element("div", "tl-units", undefined, { role: "img" }));
  const loss = element("div");
  loss.append(title("Loss, each iteration"), svgElement("svg", { class: "tl-loss", role: "img" }));
  const below = element("div", "tl-below");
  below.append(units, loss);
  const side = element("div", "tl-side");
  side.append(title("Decision boundary and the training points"), plane, edit, below);
  const root = element("div", "tl");
  root.append(head, graph, side, element("p", "tl-message", undefined, { role: "status" }));
  parent.append(root);
  return root;
}

function create(parentElement) {
  const root = skeleton(parentElement);
  const s = { root, parent: parentElement, frames: new Map(), shown: 0, playing: false, timer: null, focus: null, data: null,
    sent: Date.now(), awaiting: 0, asked: 0, cross: [0, 0], theme: null, listeners: new AbortController() };
  const q = (sel) => root.querySelector(sel);
  s.q = q;
  const send = (action, extra = {}) => {
    // but for "more", the server first goes back to the iteration on screen: what it computed beyond is computed again
    if (action !== "more") {
      for (const n of [...s.frames.keys()]) if (n > s.shown) s.frames.delete(n);
      s.awaiting = s.sent + 1;
      s.asked = s.shown;  // the frames asked for are gone: playing on (a point added), the next chunk is asked anew
    }
    s.setStateValue("command", { action, at: s.shown, id: ++s.sent, ...extra });
  };
  s.send = send;
  q(".tl-play").addEventListener("click", () => {
    if (s.playing) { stop(s); send("pause"); } else if (s.data.canPlay) { s.playing = true; start(s); send("play"); }
    drawHead(s);
  });
  q(".tl-step").addEventListener("click", () => { stop(s); send("step"); });
  q(".tl-replay").addEventListener("click", () => send("replay"));
  q(".tl-clear").addEventListener("click", () => { stop(s); send("clear"); });
  const addPoint = (x, y) => {
    const label = Number(root.querySelector("input[name=tl-class]:checked").value);
    s.data.points.push([x, y]); s.data.labels.push(label);
    drawPoints(s);
    send("add", { point: [Math.round(x * 1000) / 1000, Math.round(y * 1000) / 1000, label] });
  };
  q(".tl-points").addEventListener("click", (event) => {
    const box = event.currentTarget.getBoundingClientRect(), e = s.data.extent;
    addPoint(-e + (2 * e * (event.clientX - box.left)) / box.width, e - (2 * e * (event.clientY - box.top)) / box.height);
  });
  // from the keyboard: arrows move a cross over the plane (a tenth of it a press), Enter or Space adds a point there
  q(".tl-points").addEventListener("keydown", (event) => {
    const e = s.data.extent, step = e / 10, moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
    if (event.key in moves) {
      const [dx, dy] = moves[event.key];
      s.cross = [Math.max(-e, Math.min(e, s.cross[0] + dx * step)), Math.max(-e, Math.min(e, s.cross[1] + dy * step))];
    } else if (event.key === "Enter" || event.key === " ") addPoint(...s.cross);
    else return;
    event.preventDefault();
    drawPoints(s);
  });
  const detail = (event) => {
    const cell = event.target.closest && event.target.closest("[data-param]");
    if (cell) { s.focus = { param: cell.dataset.param, index: Number(cell.dataset.index) }; drawDetail(s); }
  };
  q(".tl-svg").addEventListener("pointerover", detail);
  q(".tl-svg").addEventListener("focusin", detail);
  q(".tl-svg").addEventListener("keydown", (event) => moveFocus(s, event));
  const observer = new ResizeObserver(() => draw(s));
  observer.observe(root);
  s.observer = observer;
  return s;
}

function start(s) {
  clearInterval(s.timer);
  s.timer = setInterval(() => {
    // half a second of frames left: ask for the next chunk, once per newest frame
    const newest = Math.max(s.shown, ...s.frames.keys());
    if (s.data.canPlay && newest - s.shown < s.data.rate / 2 && s.asked < newest) { s.asked = newest; s.send("more"); }
    if (!s.frames.has(s.shown + 1)) {
      // a stage mounted again while playing has the newest frames only: it goes on from the first it has
      const later = [...s.frames.keys()].filter((n) => n > s.shown);
      if (later.length) s.shown = Math.min(...later) - 1;
      else {  // waiting for the server's next chunk, or training stopped
        if (!s.data.canPlay) { stop(s); drawHead(s); }
        return;
      }
    }
    s.shown += 1;
    for (const n of s.frames.keys()) if (n < s.shown - 2) s.frames.delete(n);
    draw(s);
  }, 1000 / s.data.rate);
}
function stop(s) { s.playing = false; clearInterval(s.timer); s.timer = null; }
function release(s) { stop(s); s.observer.disconnect(); s.theme.disconnect(); s.listeners.abort(); }

function drawHead(s) {
  const { q, data } = s, frame = s.frames.get(s.shown);
  q(".tl-play").textContent = s.playing ? "Pause" : "Play";
  q(".tl-play").disabled = !s.playing && !data.canPlay;
  q(".tl-step").disabled = !data.canPlay;
  const replay = q(".tl-replay");
  replay.hidden = s.playing || !frame;
  if (frame) replay.textContent = `Step iteration ${frame.number}'s backward`;
  q(".tl-numbers").replaceChildren();
  const parts = frame
    ? [["Iteration", frame.number], ["Loss", fmt(frame.loss)], ["Accuracy", `${Math.round(frame.accuracy * 100)}%`],
      ["On the tape", `${frame.tape} operations`], ["Memory", `${bytes(frame.bytesBefore)} before backward, ${bytes(frame.bytesAfter)} after the update`],
      ["Points", frame.samples]]
    : [["Iteration", 0], ["Loss", "not yet"], ["Points", data.points.length]];
  for (const [name, value] of parts) {
    const span = element("span", "tl-number");
    span.append(element("span", "tl-name", `${name} `), element("strong", "tl-value", String(value), { "data-name": name }));
    q(".tl-numbers").append(span);
  }
  s.root.dataset.iteration = frame ? frame.number : 0;
  s.root.dataset.serverRuns = data.serverRuns;
  s.root.dataset.playing = s.playing;
  q(".tl-message").textContent = data.message || "";
}

/** One column per level of operations, from the data to the loss, each leaf above the operation that first uses it;
 * a graph wider than the box wraps into bands, each read left to right. */
function layout(s, frame, width, height) {
  const nodes = frame.nodes, column = nodes.map(() => 0);
  nodes.forEach((n, i) => {
    const ops = n.inputs.filter((k) => nodes[k].inputs.length);
    if (n.inputs.length) column[i] = ops.length ? 1 + Math.max(...ops.map((k) => column[k])) : 0;
  });
  nodes.forEach((n, i) => {
    if (n.inputs.length) return;
    const users = nodes.map((m, k) => (m.inputs.includes(i) ? column[k] : Infinity));
    column[i] = Math.min(...users);
  });
  const columns = Math.max(...column) + 1;
  const minWidth = s.data.presenter ? 130 : 96;
  const bands = Math.max(1, Math.ceil(columns / Math.max(1, Math.floor(width / minWidth))));
  const perBand = Math.ceil(columns / bands);
  const colWidth = width / perBand, bandHeight = height / bands;
  const byColumn = new Map();
  nodes.forEach((n, i) => byColumn.set(column[i], [...(byColumn.get(column[i]) || []), i]));
  const header = s.data.presenter ? 40 : 32, gap = 16;
  const boxes = nodes.map(() => null), bandBottom = new Array(bands).fill(0);
  for (const [c, members] of byColumn) {
    members.sort((a, b) => (nodes[a].inputs.length ? 1 : 0) - (nodes[b].inputs.length ? 1 : 0) || a - b);
    const band = Math.floor(c / perBand), x = (c % perBand) * colWidth + 4, w = colWidth - 26;
    const rowsOf = (n) => n.value.rows + (n.grad ? n.grad.rows : 0);
    const gridRows = members.reduce((t, i) => t + rowsOf(nodes[i]), 0);
    const room = bandHeight - members.length * (header + gap + 12) - 8;
    const cell = Math.max(2, Math.min(16, room / Math.max(1, gridRows)));
    let y = 4;  // from the band's top; the bands are placed below
    for (const i of members) {
      const n = nodes[i], cw = Math.min(s.data.presenter ? 60 : 48, (w - 10) / n.value.cols);
      const h = header + rowsOf(n) * cell + (n.grad ? 6 : 0) + 6;
      boxes[i] = { x, y, w, h, cell, cw, column: c, band };
      y += h + gap;
    }
    bandBottom[band] = Math.max(bandBottom[band], y);
  }
  // a band whose columns need more than its share of the height pushes the next band down (the stage grows, the
  // picture stays whole: the mistake's graph)
  const tops = bandBottom.map((_, k) => bandBottom.slice(0, k).reduce((t, b) => t + Math.max(b, bandHeight), 0));
  for (const box of boxes) box.y += tops[box.band];
  return { boxes, total: tops[bands - 1] + Math.max(bandBottom[bands - 1], bandHeight) };
}

function label(n) {
  const shape = n.shape.join("×"), bare = (op) => op.replace(/\(.*\)/, "");
  if (n.ops.length > 1) return { title: n.name || bare(n.op), sub: "cross-entropy", ops: n.ops.map(bare).join(", ") };
  if (n.kind !== "op") return { title: n.name || bare(n.op), sub: shape };  // the border says parameter or data
  return { title: n.name || bare(n.op), sub: n.name ? `${bare(n.op)} · ${shape}` : shape };
}

function drawGraph(s, frame) {
  const pane = s.q(".tl-svg");
  if (!s.root.classList.contains("tall")) s.fitHeight = pane.clientHeight;  // the screen's share, not grown
  const width = Math.max(280, pane.clientWidth), fit = Math.max(240, s.fitHeight || pane.clientHeight);
  const { boxes, total } = layout(s, frame, width, fit);
  const height = Math.max(fit, Math.ceil(total));
  s.root.classList.toggle("tall", height > fit + 1);
  const svg = svgElement("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "group",
    "aria-label": `The graph of iteration ${frame.number}${frame.preview ? ", before it runs (forward values)" : ""}: ${frame.nodes.length} tensors, ${frame.tape} operations on the tape` });
  const edges = svgElement("g", { class: "tl-edges" });
  svg.append(edges);
  const norms = frame.nodes.map((n) => (n.grad ? norm(n.grad) : 0));
  const largest = Math.max(...norms, 1e-12);
  frame.nodes.forEach((n, i) => n.inputs.forEach((k) => {
    const a = boxes[k], b = boxes[i];
    let d, x1, y1, x2, y2;
    if (a.column === b.column) {  // a leaf above the op that uses it
      x1 = a.x + a.w - 12; y1 = a.y + a.h; x2 = b.x + b.w - 12; y2 = b.y;
      d = `M${x1},${y1} L${x2},${y2}`;
    } else {
      x1 = a.x + a.w; y1 = a.y + Math.min(a.h / 2, 24); x2 = b.x; y2 = b.y + Math.min(b.h / 2, 20);
      const mid = (x1 + x2) / 2;
      d = x2 > x1 ? `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` : `M${x1},${y1} C${x1 + 60},${y1 + 80} ${x2 - 60},${y2 - 80} ${x2},${y2}`;
    }
    const mid = (x1 + x2) / 2;
    const strength = norms[k] / largest;
    edges.append(svgElement("path", { d, class: `tl-edge${frame.nodes[k].grad ? " carries" : ""}${s.playing ? " flowing" : ""}`,
      "stroke-width": (1 + 4 * Math.sqrt(strength)).toFixed(2) }));
    if (frame.nodes[k].grad && Math.abs(x2 - x1) > 30) {
      const t = svgElement("text", { x: mid, y: (y1 + y2) / 2 - 3, class: "tl-edge-label", "text-anchor": "middle" }, `‖∂‖ ${fmt(norms[k])}`);
      edges.append(t);
    }
  }));
  frame.nodes.forEach((n, i) => svg.append(drawNode(s, frame, n, boxes[i])));
  pane.replaceChildren(svg);
}

function drawNode(s, frame, n, box) {
  const g = svgElement("g", { class: `tl-node ${n.kind}`, transform: `translate(${box.x},${box.y})` });
  const { title, sub, ops } = label(n);
  g.append(svgElement("rect", { class: "tl-box", width: box.w, height: box.h, rx: 6 }));
  g.append(svgElement("title", {}, `${title}: ${ops || n.op}, ${n.shape.join("×")}`));
  g.append(svgElement("text", { x: 6, y: s.data.presenter ? 18 : 15, class: "tl-node-title" }, title));
  g.append(svgElement("text", { x: 6, y: s.data.presenter ? 34 : 28, class: "tl-node-sub" }, sub));
  const header = s.data.presenter ? 40 : 32;
  const param = n.kind === "parameter" || (n.kind === "op" && frame.parameters[n.name]) ? n.name : null;
  const c = s.colours;
  grid(g, n.value, header, box, c.neg, c.pos, c.ceiling, param);
  if (n.grad) grid(g, n.grad, header + n.value.rows * box.cell + 6, box, c.gneg, c.gpos, c.ceiling, null);
  return g;
}

function grid(g, values, top, box, neg, pos, ceiling, param) {
  const scale = maxAbs(values.data);
  const cw = Math.min(box.cw, (box.w - 10) / values.cols), ch = box.cell;
  const numbers = cw >= 40 && ch >= 13;
  for (let r = 0; r < values.rows; r++) {
    for (let c = 0; c < values.cols; c++) {
      const index = r * values.cols + c, v = values.data[index];
      const x = 5 + c * cw, y = top + r * ch;
      const rect = svgElement("rect", { x, y, width: Math.max(1, cw - (cw > 4 ? 1 : 0)), height: Math.max(1, ch - (ch > 4 ? 1 : 0)), fill: heat(v, scale, pos, neg, ceiling), class: "tl-cell" });
      if (param) {
        rect.setAttribute("data-param", param);
        rect.setAttribute("data-index", index);
        rect.setAttribute("tabindex", index === 0 ? "0" : "-1");
        rect.setAttribute("role", "img");
        rect.setAttribute("aria-label", `${param}[${r}, ${c}] = ${fmt(v)}`);
      }
      g.append(rect);
      if (numbers) g.append(svgElement("text", { x: x + cw / 2, y: y + ch - 3, class: "tl-cell-number", "text-anchor": "middle" }, short(v)));
    }
  }
}

function moveFocus(s, event) {
  const cell = event.target.closest && event.target.closest("[data-param]");
  if (!cell) return;
  const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: "down", ArrowUp: "up" };
  if (!(event.key in moves)) return;
  event.preventDefault();
  const frame = s.frames.get(s.shown) || previewFrame(s), grid = frame.parameters[cell.dataset.param];
  let index = Number(cell.dataset.index), step = moves[event.key];
  if (step === "down") step = grid.cols; else if (step === "up") step = -grid.cols;
  index = Math.max(0, Math.min(grid.data.length - 1, index + step));
  const next = s.q(`.tl-svg [data-param="${cell.dataset.param}"][data-index="${index}"]`);
  if (next) { cell.setAttribute("tabindex", "-1"); next.setAttribute("tabindex", "0"); next.focus(); }
}

function drawDetail(s) {
  const frame = s.frames.get(s.shown) || previewFrame(s), out = s.q(".tl-detail");
  const before = "Iteration 1's forward, before it runs: Play or One iteration runs its backward and the update.";
  if (!frame || !s.focus || !frame.parameters[s.focus.param]) { out.textContent = frame && frame.preview ? before : ""; return; }
  const { param, index } = s.focus, w = frame.parameters[param], cols = w.cols;
  const at = `${param}[${Math.floor(index / cols)}, ${index % cols}]`;
  const grad = frame.gradients[param], after = frame.updated[param];
  if (frame.preview) { out.textContent = `${at} = ${fmt(w.data[index])}: iteration 1's backward gives its gradient, then the update.`; return; }
  if (!grad) { out.textContent = `${at} = ${fmt(w.data[index])}: backward gave it no gradient.`; return; }
  out.textContent = `${at} ← ${fmt(w.data[index])} − ${s.data.learningRate} × ${signed(grad.data[index])} = `
    + `${fmt(after.data[index])}   (w − learning rate × ∂loss/∂w, iteration ${frame.number})`;
}

function drawBoundary(s, frame) {
  const canvas = s.q(".tl-boundary"), ctx = canvas.getContext("2d"), e = s.data.extent;
  const image = ctx.createImageData(CELLS, CELLS);
  for (let r = 0; r < CELLS; r++) for (let c = 0; c < CELLS; c++) {
    const x = -e + (2 * e * (c + 0.5)) / CELLS, y = e - (2 * e * (r + 0.5)) / CELLS;
    const p = frame ? probabilityAt(frame.parameters, x, y) : 0.5;
    const [R, G, B] = p >= 0.5 ? s.colours.pos : s.colours.neg, a = Math.abs(p - 0.5) * 2 * 0.55;
    const k = 4 * (r * CELLS + c);
    image.data[k] = R; image.data[k + 1] = G; image.data[k + 2] = B; image.data[k + 3] = Math.round(a * 255);
  }
  ctx.putImageData(image, 0, 0);
  drawPoints(s);
}

function drawPoints(s) {
  const svg = s.q(".tl-points"), e = s.data.extent, { points, labels } = s.data;
  svg.setAttribute("viewBox", "0 0 200 200");
  const ones = labels.filter((c) => c === 1).length;
  const [cx, cy] = s.cross.map((v) => Math.round(v * 100) / 100);
  svg.setAttribute("aria-label", `The plane, coloured by the model's probability of class 1 (orange above 50 %, blue below), with ${labels.length - ones} points of class 0 (circles) and ${ones} of class 1 (squares). Arrow keys move the cross, now at x ${cx}, y ${cy}; Enter adds a point there.`);
  svg.replaceChildren();
  const [kx, ky] = [((s.cross[0] + e) / (2 * e)) * 200, ((e - s.cross[1]) / (2 * e)) * 200];
  svg.append(svgElement("path", { d: `M${kx - 6},${ky} H${kx + 6} M${kx},${ky - 6} V${ky + 6}`, class: "tl-cross" }));
  points.forEach(([x, y], i) => {
    const px = ((x + e) / (2 * e)) * 200, py = ((e - y) / (2 * e)) * 200;
    svg.append(labels[i] === 0 ? svgElement("circle", { cx: px, cy: py, r: 2.6, class: "tl-point c0" })
      : svgElement("rect", { x: px - 2.4, y: py - 2.4, width: 4.8, height: 4.8, class: "tl-point c1" }));
  });
}

function drawUnits(s, frame) {
  const box = s.q(".tl-units");
  const units = frame ? frame.parameters.w1.cols : 0;
  if (box.children.length !== units) {
    box.replaceChildren(...Array.from({ length: units }, (_, j) => element("canvas", "", undefined, { width: UNIT_CELLS, height: UNIT_CELLS, title: `unit ${j + 1}` })));
  }
  box.setAttribute("aria-label", `${units} small pictures, one per hidden unit: where over the plane its ReLU output is large (strong) or zero (clear).`);
  if (!frame) return;
  const e = s.data.extent, outs = [];
  for (let r = 0; r < UNIT_CELLS; r++) for (let c = 0; c < UNIT_CELLS; c++) {
    outs.push(hiddenAt(frame.parameters, -e + (2 * e * (c + 0.5)) / UNIT_CELLS, e - (2 * e * (r + 0.5)) / UNIT_CELLS));
  }
  const [R, G, B] = s.colours.text;
  [...box.children].forEach((canvas, j) => {
    const ctx = canvas.getContext("2d"), image = ctx.createImageData(UNIT_CELLS, UNIT_CELLS);
    const top = Math.max(1e-12, ...outs.map((h) => h[j]));
    outs.forEach((h, k) => { image.data[4 * k] = R; image.data[4 * k + 1] = G; image.data[4 * k + 2] = B; image.data[4 * k + 3] = Math.round((h[j] / top) * 230); });
    ctx.putImageData(image, 0, 0);
  });
}

function drawLoss(s) {
  const svg = s.q(".tl-loss"), losses = s.data.losses.slice(0, s.shown);
  const w = Math.max(160, Math.round(svg.clientWidth || 240)), h = Math.max(80, Math.round(svg.clientHeight || 120));
  const left = 40, bottom = 18;
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  const top = Math.max(1, ...losses), span = Math.max(100, losses.length);
  svg.setAttribute("aria-label", losses.length ? `The loss over ${losses.length} iterations: ${fmt(losses[0])} at the first, ${fmt(losses[losses.length - 1])} now.` : "The loss curve starts with the first iteration.");
  const x = (i) => left + ((w - left - 6) * i) / span, y = (v) => h - bottom - ((h - bottom - 6) * v) / top;
  svg.replaceChildren(
    svgElement("line", { x1: left, y1: y(0), x2: w - 4, y2: y(0), class: "tl-axis" }),
    svgElement("line", { x1: left, y1: y(0), x2: left, y2: 4, class: "tl-axis" }),
    svgElement("text", { x: left - 4, y: y(0), "text-anchor": "end", class: "tl-tick" }, "0"),
    svgElement("text", { x: left - 4, y: y(top) + 8, "text-anchor": "end", class: "tl-tick" }, fmt(top)),
    svgElement("text", { x: w - 4, y: h - 3, "text-anchor": "end", class: "tl-tick" }, `iteration ${span}`),
    svgElement("polyline", { points: losses.map((v, i) => `${x(i + 1).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: "tl-curve" }),
  );
}

/** Before the first iteration, the graph it builds: its forward values, no gradient yet, and the network it starts
 * with (the boundary and the units of the untrained network). */
function previewFrame(s) {
  const { preview } = s.data;
  return s.shown === 0 && preview ? { number: 1, preview: true, nodes: preview.nodes, tape: preview.tape, parameters: preview.parameters, gradients: {}, updated: {} } : null;
}

function draw(s) {
  s.colours = colours(s.root);
  const frame = s.frames.get(s.shown) || previewFrame(s);
  drawHead(s);
  if (frame) drawGraph(s, frame);
  else s.q(".tl-svg").replaceChildren(element("p", "tl-empty", "Add points to the plane: the graph of each iteration is drawn here."));
  drawBoundary(s, frame);
  drawUnits(s, frame);
  drawLoss(s);
  drawDetail(s);
}

function fit(s) {
  // the whole stage in the window from where it starts: one screen, no scrolling (a phone stacks it instead)
  const top = s.root.getBoundingClientRect().top + window.scrollY;
  const room = window.innerHeight - Math.min(top, window.innerHeight * 0.45) - 12;
  s.root.style.setProperty("--tl-height", `${Math.max(420, Math.round(room))}px`);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const cleanupOfNewest = newestOnly(parentElement);
  let s = states.get(parentElement);
  if (!s || s.data.signature !== data.signature) {
    if (s) { release(s); s.root.remove(); }
    s = create(parentElement);
    states.set(parentElement, s);
    s.data = data;
    followTheme(s, () => draw(s));  // the stage's own (view/theme.mjs): a switch paints the canvases again
    if (data.playing && data.canPlay) { s.playing = true; start(s); }  // a remount while playing plays on
  }
  s.setStateValue = setStateValue;
  const unmount = cleanupOfNewest(() => { release(s); s.root.remove(); states.delete(parentElement); });
  // a picture the server drew before it applied this stage's last command (a chunk asked for before a pause, late
  // on a busy machine) would take the stage back to where it was then: only a newer one is taken
  if (data.answered < s.awaiting) return unmount;
  s.data = data;
  for (const frame of data.frames) s.frames.set(frame.number, frame);
  // paused, the stage shows where the server is (it rewound to the stage's iteration, then acted); playing, the
  // stage's own clock moves on through what the server computed ahead
  if (!s.playing) s.shown = data.iterations;
  s.root.classList.toggle("presenter", data.presenter);
  fit(s);
  draw(s);
  return unmount;
}
