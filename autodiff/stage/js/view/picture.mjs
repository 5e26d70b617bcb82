// The picture at an event: node states and gradients, the values sent along edges, the running line; and the
// picture saved as a file (SVG with its colours written in, or PNG at twice its size).

import { isGroup, sentIntoParts } from "../model/parts.mjs";
import { runningPart } from "../model/steps.mjs";
import { wrap, labelWidth, summarised, speaksShort, spokenShort } from "../model/dot.mjs";
import { SVG_NS } from "./dom.mjs";
import { reveal } from "./viewport.mjs";

function fillLines(texts, lines) {
  // `lines` into the text elements laid out for them (their number fixed by the widest): the rest left empty, a
  // longer text's last lines joined on the last
  const shown = [...lines.slice(0, texts.length - 1), lines.slice(texts.length - 1).join(" ")];
  texts.forEach((t, k) => { t.textContent = shown[k] || ""; });
}

export function drawPicture(stage, state, animate, period) {
  const { data, svg } = stage;
  const running = state && state.current ? stage.boxOf.get(state.current.node) : null;
  stage.nodes.forEach((g, id) => {
    const part = isGroup(stage, id) ? stage.tree.groups.get(id) : null;
    // a folded part says its output's gradient; it is drawn as a part, or as running while its steps run
    const view = part ? stage.views.get(stage.tree.byId.get(part.output).element) : stage.views.get(id);
    const recomputed = part && state && [...state.recomputed].some((n) => stage.boxOf.get(n) === id);
    const look = part ? (recomputed ? "recomputed" : running === id ? "current" : "group") : view.state;
    const selected = stage.selected && stage.selected.includes(id);
    g.setAttribute("class", `node s-${look}${part ? " group" : ""}${selected ? " selected" : ""}`);
    const texts = stage.gradText.get(id);
    if (texts) fillLines(texts, wrap(speaksShort(stage, id) ? spokenShort(view.grad, view.grad_range) : view.grad, stage.wrapWidth));
  });
  svg.querySelectorAll(".flow-dot").forEach((el) => el.remove());
  stage.labelText.forEach((texts) => texts.forEach((t) => t.removeAttribute("visibility")));  // a dot cut short
  // each drawn edge -> the last value sent along it; into a folded part, all it sent added up ({text, range})
  const sent = new Map();
  if (state) {
    state.sent.forEach((e, edge) => { if (stage.edgeShown.has(edge)) sent.set(stage.edgeShown.get(edge), { text: e.value, range: e.value_range }); });
    sentIntoParts(stage, stage.index).forEach((said, edge) => sent.set(edge, said));
  }
  stage.edges.forEach((g, id) => {
    g.classList.remove("flow", "sent");
    const labels = stage.labelText.get(id);
    const value = sent.get(id);
    if (labels) fillLines(labels, value ? wrap(saidOnEdge(stage, value), labelWidth(stage)) : []);
    if (value) g.classList.add("sent");
  });
  if (!state) return;
  const focus = state.current ? stage.nodes.get(stage.boxOf.get(state.current.node)) : null;
  for (const flow of state.flows) {
    const edge = flow.edge && stage.edges.get(stage.edgeShown.get(flow.edge));
    if (!edge) continue;
    edge.classList.add("flow");
    const path = edge.querySelector("path");
    const value = saidOnEdge(stage, { text: flow.value, range: flow.value_range });
    if (path && animate && !stage.reduceMotion) travel(stage, edge, path, value, Math.min(period * 0.7, 900), stage.labelText.get(edge.id) || []);
  }
  // the running step is followed, but not away from a part the student has just opened: the next press follows it
  if (focus && !stage.partShown) reveal(stage, focus, true);
  stage.partShown = false;
}

function saidOnEdge(stage, { text, range }) {
  // a value sent along an edge as its label and its moving dot say it: short in a folded view (dot.mjs spokenShort),
  // a large tensor as its shape and range in any (the dot's one line is never wider than the label's box)
  return stage.folded ? spokenShort(text, range) : summarised(text, range);
}

function travel(stage, edge, path, value, duration, labels) {
  // the gradient moves from the step's node back along its edge to the input it reaches, carrying its value: the
  // edge's label, which says the same value, waits for it (the value is drawn once)
  labels.forEach((t) => t.setAttribute("visibility", "hidden"));
  const length = path.getTotalLength();
  const dot = document.createElementNS(SVG_NS, "g");
  dot.setAttribute("class", "flow-dot");
  const circle = document.createElementNS(SVG_NS, "circle");
  circle.setAttribute("r", "7");
  const text = document.createElementNS(SVG_NS, "text");
  text.setAttribute("x", "11");
  text.setAttribute("y", "5");
  text.textContent = value;
  dot.append(circle, text);
  edge.appendChild(dot);
  const start = performance.now();
  const next = () => {  // a frame the stage's cleanup cancels
    const id = requestAnimationFrame((now) => { stage.frames.delete(id); step(now); });
    stage.frames.add(id);
  };
  const step = (now) => {
    const t = Math.min(1, (now - start) / duration);
    // edges point input -> node: walk back (a weight beside its part is drawn from the part: walk forward)
    const point = path.getPointAtLength(length * (stage.layout.beside.some((e) => e.element === edge.id) ? t : 1 - t));
    dot.setAttribute("transform", `translate(${point.x} ${point.y})`);
    if (t < 1 && dot.isConnected) next();
    else {
      dot.remove();
      if (!edge.querySelector(".flow-dot")) labels.forEach((l) => l.removeAttribute("visibility"));  // none left on it
    }
  };
  next();
}

export function selectNodes(stage, elements, fromGraph, line) {
  // a node clicked lights the program line that made it; a line clicked marks the nodes it made
  stage.selected = elements;
  stage.nodes.forEach((g, id) => g.classList.toggle("selected", elements.includes(id)));
  const { data, root } = stage;
  let lines = [];
  if (line) lines = [line];
  else if (fromGraph && data.program) {
    const node = data.nodes.find((n) => n.element === elements[0]);
    const span = node && data.program.spans[node.id];
    if (span) for (let k = span[0]; k <= span[1]; k++) lines.push(k);
  }
  root.querySelectorAll(".stage-code .line").forEach((el) => el.classList.toggle("selected", lines.includes(Number(el.dataset.line))));
}

export function lightLines(stage, state) {
  const { data, root } = stage;
  if (!data.program) return;
  const running = runningPart(stage, state);
  const span = running ? running.group.lines : state.current ? data.program.spans[state.current.node] : null;
  let lit = null;
  root.querySelectorAll(".stage-code .line").forEach((el) => {
    const k = Number(el.dataset.line);
    const on = !!span && span[0] <= k && k <= span[1];
    el.classList.toggle("running", on);
    if (on && !lit) lit = el;
  });
  if (lit) {  // a long program keeps its running line in view, without moving the page
    const pre = lit.closest(".stage-code");
    // the code's box holds the tallest line lit so far whole (a long line wraps to three on a projector): stage.css
    // gives the box and the program that least height. It only grows, so the card above never jumps back and forth
    if (lit.offsetHeight > stage.litLine) {
      stage.litLine = lit.offsetHeight;
      pre.parentElement.style.setProperty("--lit-line", `${lit.offsetHeight}px`);
    }
    if (pre.scrollHeight > pre.clientHeight + 1) {
      const r = lit.getBoundingClientRect(), b = pre.getBoundingClientRect();
      // a third of the box above it, or less where the line would not fit whole (a wrapped line in a short box)
      if (r.top < b.top || r.bottom > b.bottom) pre.scrollTop += r.top - b.top - Math.max(0, Math.min(b.height / 3, b.height - r.height));
    }
  }
}

const PAINT = ["fill", "stroke", "stroke-width", "stroke-dasharray", "font-size", "font-family", "font-weight", "opacity"];

function standaloneSvg(stage) {
  const clone = stage.svg.cloneNode(true);
  const originals = [stage.svg, ...stage.svg.querySelectorAll("*")];
  [clone, ...clone.querySelectorAll("*")].forEach((el, k) => {
    const style = getComputedStyle(originals[k]);
    el.setAttribute("style", PAINT.map((p) => `${p}:${style.getPropertyValue(p)}`).join(";"));
  });
  clone.querySelectorAll(".flow-dot").forEach((el) => el.remove());
  clone.querySelectorAll("[visibility]").forEach((el) => el.removeAttribute("visibility"));  // a label a dot carried
  const { w, h } = stage.natural;
  clone.setAttribute("xmlns", SVG_NS);
  clone.setAttribute("width", String(w));
  clone.setAttribute("height", String(h));
  clone.removeAttribute("aria-hidden");
  const background = document.createElementNS(SVG_NS, "rect");
  Object.entries({ x: "-10%", y: "-10%", width: "120%", height: "120%" }).forEach(([k, v]) => background.setAttribute(k, v));
  background.setAttribute("style", `fill:${getComputedStyle(stage.root).getPropertyValue("--bg")}`);
  clone.insertBefore(background, clone.firstChild);
  return new XMLSerializer().serializeToString(clone);
}

function fileName(stage, extension) {
  const position = stage.replay ? `-event-${stage.index + 1}` : "";
  return `${stage.data.file_stem}${position}.${extension}`;
}

function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);  // holds only the URL: left to run after a cleanup
}

export function saveSvg(stage) {
  if (stage.svg) download(fileName(stage, "svg"), new Blob([standaloneSvg(stage)], { type: "image/svg+xml" }));
}

export function saveDot(stage) {
  // the DOT text Graphviz laid out the picture from, as drawn now (its parts folded or open, its direction): opened
  // in any Graphviz viewer, it is this picture
  if (stage.layout) download(`${stage.data.file_stem}.dot`, new Blob([stage.layout.dot], { type: "text/vnd.graphviz" }));
}

export function savePng(stage) {
  if (!stage.svg) return;
  const { w, h } = stage.natural;
  const image = new Image();
  image.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(w * 2);
    canvas.height = Math.round(h * 2);
    const context = canvas.getContext("2d");
    context.scale(2, 2);
    context.drawImage(image, 0, 0, w, h);
    canvas.toBlob((blob) => { if (blob) download(fileName(stage, "png"), blob); }, "image/png");
  };
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(standaloneSvg(stage))}`;
}
