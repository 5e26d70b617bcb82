// The stage: every graph of the app, laid out once by Graphviz (WebAssembly), and for a recorded backward a player
// stepped in the browser. Every step only changes classes and text on the laid-out picture: nothing moves, nothing
// waits on the server. The current event goes back to Python a moment after stepping stops (links, exercises).
// All text comes in as data and is set with textContent: nothing here is parsed as HTML.

/**
 * The contract with Python (`StagePayload` in ui/stage.py; a test checks the two lists of keys agree).
 * @typedef {{element: string, id: number, name: string, title: string, value: string, detail: string,
 *   state: string, grad: string, grad_kind: ("leaf"|"op"|"none")}} StageNode
 * @typedef {{element: string, source: number, target: number, tracked: boolean}} StageEdge
 * @typedef {{kind: string, text: string, node?: number, nodes?: number[], source?: (number|null),
 *   edge?: (string|null), value?: string, total?: string, total_full?: string, shape?: string,
 *   accumulated?: boolean, kept?: boolean, parents?: number[], rules?: string[], op?: string,
 *   order?: number}} StageEvent
 * @typedef {{mode: ("static"|"replay"), dot: string, rankdirs: string[], nodes: StageNode[], edges: StageEdge[],
 *   box_of: Object<string, string>, events: StageEvent[], index: number, presenter: boolean,
 *   legend: Object<string, string>, words: Object<string, string>, graphviz_url: string,
 *   signature: string}} StagePayload
 */
const PAYLOAD_KEYS = ["mode", "dot", "rankdirs", "nodes", "edges", "box_of", "events", "index", "presenter",
  "legend", "words", "graphviz_url", "signature"];

const KEYS = {
  ArrowRight: "next", PageDown: "next", ArrowLeft: "prev", PageUp: "prev",
  Home: "first", End: "last", " ": "play",
};
const SVG_NS = "http://www.w3.org/2000/svg";
const MAX_SCALE = 1.6;  // a small graph is drawn larger, up to this
const NARROW = 700;  // below this width the stage stacks and the graph fits the width

function checkPayload(data) {
  const missing = PAYLOAD_KEYS.filter((key) => !(key in data));
  if (missing.length) throw new Error(`stage payload lacks ${missing.join(", ")}`);
}

function mountStage(component, loadGraphviz) {
  const { data, parentElement, setStateValue } = component;
  checkPayload(data);
  const replay = data.mode === "replay";
  let root = parentElement.querySelector(".stage");
  if (root && root.__stage && root.__stage.signature === data.signature) {
    root.__stage.setStateValue = setStateValue;  // a rerun of the page: keep the picture, position and height
    calmTyping();
    return;
  }
  if (root) { if (root.__stage) root.__stage.dispose(); root.remove(); }
  root = buildSkeleton(parentElement, replay, data.presenter);
  const stage = {
    signature: data.signature, data, root, replay, setStateValue,
    index: Math.max(0, Math.min(data.index || 0, data.events.length - 1)),
    playing: false, timer: null, reportTimer: null, nodes: new Map(), edges: new Map(), gradText: new Map(),
    labelText: new Map(), reduceMotion: window.matchMedia("(prefers-reduced-motion: reduce)").matches,
  };
  root.__stage = stage;
  root.classList.toggle("dark", isDark(root));
  // the viewer may switch the theme at any time (the app's menu, or the system's): follow it
  stage.themeTimer = setInterval(() => {
    if (!root.isConnected) return clearInterval(stage.themeTimer);
    const dark = isDark(root);
    if (dark !== root.classList.contains("dark")) root.classList.toggle("dark", dark);
  }, 250);
  let width = window.innerWidth;
  stage.onResize = () => {
    if (window.innerWidth === width) return;  // a phone's toolbar showing or hiding is not a new layout
    width = window.innerWidth;
    fitHeight(stage);
    place(stage);
  };
  stage.dispose = () => {
    clearInterval(stage.timer);
    clearInterval(stage.themeTimer);
    clearTimeout(stage.reportTimer);
    if (window.__replayStageKeys === stage.onKey) {
      document.removeEventListener("keydown", stage.onKey, true);
      window.__replayStageKeys = null;
    }
    window.removeEventListener("resize", stage.onResize);
  };
  window.addEventListener("resize", stage.onResize);
  if (replay) {
    wireControls(stage);
    stage.onKey = (event) => onKey(stage, event);
    // one listener for the page's player: a player left behind on another page stops listening
    if (window.__replayStageKeys) document.removeEventListener("keydown", window.__replayStageKeys, true);
    window.__replayStageKeys = stage.onKey;
    document.addEventListener("keydown", stage.onKey, true);  // before the page scrolls on End or Space
    watchTyping();
  }
  fitHeight(stage);
  layout(stage, loadGraphviz).then(() => {
    fitHeight(stage);
    place(stage);
    show(stage, stage.index, false, 800, false);
    if (data.presenter && replay && window.innerWidth >= NARROW) bringIntoView(stage);
  });
}

function isDark(root) {
  const background = getComputedStyle(root).getPropertyValue("--st-background-color").trim();
  const rgb = background.match(/\d+(\.\d+)?/g);
  if (background.startsWith("#") && background.length >= 7) {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(background.slice(i, i + 2), 16));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
  }
  if (rgb && rgb.length >= 3) return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128;
  return window.matchMedia("(prefers-color-scheme: dark)").matches;  // the saved replay: the viewer's system
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function buildSkeleton(parent, replay, presenter) {
  const root = element("div", `stage ${replay ? "replay" : "static"}${presenter ? " presenter" : ""}`);
  const graph = element("div", "stage-graph");
  const svgBox = element("div", "stage-svg");
  svgBox.setAttribute("role", "img");
  svgBox.setAttribute("aria-label", "The graph: the same nodes are listed in the table below it.");
  svgBox.tabIndex = 0;  // a graph larger than its box scrolls, from the keyboard too
  graph.append(svgBox);
  const side = element("div", "stage-side");
  if (replay) {
    const controls = element("div", "stage-controls");
    controls.setAttribute("role", "group");
    controls.setAttribute("aria-label", "Replay controls");
    for (const [act, text, keys, label] of [
      ["first", "« First", "Home", "First event"], ["prev", "◀ Prev", "ArrowLeft PageUp", "Previous event"],
      ["next", "Next ▶", "ArrowRight PageDown", "Next event"], ["last", "Last »", "End", "Last event"],
      ["play", "Play", "Space", "Play"]]) {
      const short = presenter && act !== "play" ? text.replace(/[A-Za-z]+/, "").trim() : text;  // a projector: room
      const button = element("button", act === "play" ? "stage-play" : "", short);
      button.type = "button";
      button.dataset.act = act;
      button.setAttribute("aria-keyshortcuts", keys);
      button.setAttribute("aria-label", label);
      button.title = `${label} (${keys.replace("Arrow", "").replace(" ", " or ")})`;
      if (act === "play") button.setAttribute("aria-pressed", "false");
      controls.append(button);
    }
    const scrubber = element("div", "stage-scrubber");
    const scrub = element("input", "stage-scrub");
    scrub.type = "range";
    scrub.min = "1";
    scrub.setAttribute("aria-label", "Event");
    const speed = element("select", "stage-speed");
    speed.setAttribute("aria-label", "Playing speed");
    for (const [value, text] of [["1500", "slow"], ["800", "normal"], ["350", "fast"]]) {
      const option = element("option", "", text);
      option.value = value;
      option.selected = value === "800";
      speed.append(option);
    }
    scrubber.append(scrub, speed);
    const caption = element("p", "stage-caption");
    caption.setAttribute("aria-live", "polite");
    caption.setAttribute("aria-atomic", "true");
    side.append(controls, scrubber, caption, element("h4", "", "The current step"), element("div", "stage-step"),
      element("h4", "", "The Gradients container after this event"), element("div", "stage-container"));
  }
  const legend = element("div", "stage-legend");
  legend.setAttribute("role", "list");
  legend.setAttribute("aria-label", "Legend");
  graph.append(legend);
  const details = element("details", "stage-table");
  details.append(element("summary", "", "The graph as a table (every node, its value, gradient and state)"),
    element("div", "stage-table-body"));
  root.append(graph, side, details);
  parent.appendChild(root);
  return root;
}

function wireControls(stage) {
  const { root, data } = stage;
  root.querySelectorAll("[data-act]").forEach((button) => {
    button.onclick = () => act(stage, button.dataset.act);
  });
  const scrub = root.querySelector(".stage-scrub");
  scrub.max = String(data.events.length);
  scrub.oninput = () => show(stage, Number(scrub.value) - 1, false);
  root.querySelector(".stage-speed").onchange = () => { if (stage.playing) { pause(stage); play(stage); } };
}

// -- keys: the page's arrows and clickers drive the player, unless a person is typing ------------------------

function watchTyping() {
  if (window.__stageTyping) return;
  window.__stageTyping = true;
  document.addEventListener("input", (event) => {
    const target = event.composedPath ? event.composedPath()[0] : event.target;
    if (target) target.__typed = true;
  }, true);
}

function calmTyping() {
  // the page reran (a widget's change was sent): what was typed is committed, so → and ← step again
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  if (active) active.__typed = false;
}

function onKey(stage, event) {
  const action = KEYS[event.key];
  if (!action || !stage.root.isConnected || event.altKey || event.ctrlKey || event.metaKey) return;
  const target = event.composedPath ? event.composedPath()[0] : event.target;
  const inStage = stage.root.contains(target);
  const tag = (target && target.tagName) || "";
  if (target && (target.isContentEditable || tag === "TEXTAREA")) return;
  if (tag === "SELECT" && !(inStage && event.key.startsWith("Page"))) return;
  if (tag === "BUTTON" && !inStage && (event.key === " " || event.key === "Enter")) return;
  if (tag === "INPUT" && !inStage) {
    const type = (target.type || "text").toLowerCase();
    const paging = event.key === "PageDown" || event.key === "PageUp";
    if (type === "checkbox" || type === "radio") {
      if (event.key === " ") return;  // Space toggles it
    } else if (target.getAttribute("role") === "combobox" && target.getAttribute("aria-expanded") === "true") {
      return;  // an open list: the keys choose in it
    } else if (!paging && (target.__typed || event.key === " " || event.key === "Home" || event.key === "End")) {
      return;  // typing: arrows move the caret
    }
  }
  event.preventDefault();
  event.stopPropagation();
  act(stage, action);
}

function act(stage, action) {
  const last = stage.data.events.length - 1;
  if (action === "play") return stage.playing ? pause(stage) : play(stage);
  pause(stage);
  const target = { first: 0, prev: stage.index - 1, next: stage.index + 1, last }[action];
  show(stage, Math.max(0, Math.min(last, target)), action === "next");
}

function play(stage) {
  const last = stage.data.events.length - 1;
  if (stage.index >= last) show(stage, 0, false);
  stage.playing = true;
  const button = stage.root.querySelector(".stage-play");
  button.textContent = "Pause";
  button.setAttribute("aria-pressed", "true");
  const period = Number(stage.root.querySelector(".stage-speed").value);
  stage.timer = setInterval(() => {
    if (stage.index >= last) return pause(stage);
    show(stage, stage.index + 1, true, period);
  }, period);
}

function pause(stage) {
  stage.playing = false;
  clearInterval(stage.timer);
  const button = stage.root.querySelector(".stage-play");
  if (!button) return;
  button.textContent = "Play";
  button.setAttribute("aria-pressed", "false");
}

// -- the picture ------------------------------------------------------------------------------------------------

async function layout(stage, loadGraphviz) {
  const box = stage.root.querySelector(".stage-svg");
  const graphviz = await loadGraphviz();
  let best = null;
  for (const rankdir of stage.data.rankdirs) {  // lay out each way once; keep the one that reads larger
    const svgText = graphviz.dot(stage.data.dot.replace(/rankdir=\w+/, `rankdir=${rankdir}`));
    const svg = new DOMParser().parseFromString(svgText, "image/svg+xml").documentElement;
    const w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
    const scale = fitScale(stage, box, w, h);
    if (!best || scale > best.scale + 1e-6) best = { svg, scale, w, h };
  }
  const svg = document.importNode(best.svg, true);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("aria-hidden", "true");
  svg.querySelectorAll("title").forEach((t) => t.remove());  // Graphviz's ids, not words for a person
  box.replaceChildren(svg);
  stage.svg = svg;
  stage.natural = { w: best.w, h: best.h };
  svg.querySelectorAll("g.node").forEach((g) => stage.nodes.set(g.id, g));
  svg.querySelectorAll("g.edge").forEach((g) => stage.edges.set(g.id, g));
  for (const node of stage.data.nodes) {
    const g = stage.nodes.get(node.element);
    if (!g) continue;
    const texts = g.querySelectorAll("text");
    if (texts.length >= 3) stage.gradText.set(node.element, centred(g, texts[2]));  // title, value, gradient, detail
  }
  stage.nodes.forEach((g, id) => { if (id.startsWith("order")) g.classList.add("s-bucket"); });
  stage.edges.forEach((g, id) => {
    const label = g.querySelector("text");
    if (label) stage.labelText.set(id, centred(g, label));
    const edge = stage.data.edges.find((e) => e.element === id);
    if (edge && !edge.tracked) g.classList.add("untracked");
  });
  watchTable(stage);
}

function watchTable(stage) {  // the table in words is filled when opened, then kept up to date
  stage.root.querySelector(".stage-table").addEventListener("toggle", () => fillTable(stage));
}

function centred(g, text) {
  // Graphviz places text from its own font metrics: centre it on its box, so rewritten text stays centred
  const box = text.getBBox ? text.getBBox() : null;
  if (box && box.width) {
    text.setAttribute("text-anchor", "middle");
    text.setAttribute("x", String(box.x + box.width / 2));
  }
  return text;
}

function fitScale(stage, box, w, h) {
  const width = Math.max(box.clientWidth, 200);
  const height = stage.replay && window.innerWidth >= NARROW ? Math.max(box.clientHeight, 200) : Infinity;
  return Math.min(width / w, height / h);
}

function place(stage) {
  // drawn as large as fits, up to MAX_SCALE; never below its own size (text stays at least 12 px, 16 px in
  // presenter mode) except on a narrow screen, where it fits the width and the page scrolls instead
  if (!stage.svg) return;
  const box = stage.root.querySelector(".stage-svg");
  const { w, h } = stage.natural;
  const fit = fitScale(stage, box, w, h);
  const narrow = window.innerWidth < NARROW;
  const scale = narrow ? Math.min(fit, MAX_SCALE) : Math.max(1, Math.min(fit, MAX_SCALE));
  stage.svg.style.width = `${w * scale}px`;
  stage.svg.style.height = `${h * scale}px`;
  if (!stage.replay || narrow) box.style.height = `${Math.min(h * scale, narrow ? Infinity : stage.maxStatic)}px`;
  stage.scrollable = box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;

}

function scrollerOf(el) {
  for (let node = el; node; node = node.parentElement || (node.getRootNode && node.getRootNode().host)) {
    if (node === document.documentElement) break;
    const overflow = getComputedStyle(node).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && node.scrollHeight > node.clientHeight + 1) return node;
  }
  return document.querySelector("[data-testid='stMain']");
}

function headerBottom() {
  const header = document.querySelector("header[data-testid='stHeader']");
  return header ? Math.max(0, header.getBoundingClientRect().bottom) : 0;
}

function bringIntoView(stage) {
  // on a projector the player is the lesson: scroll it up to just under Streamlit's toolbar, once
  stage.root.style.scrollMarginTop = `${headerBottom() + 8}px`;
  stage.root.scrollIntoView({ block: "start" });
}

function fitHeight(stage) {
  // the whole player fits the window below where it starts, so nothing needs scrolling on a projector; measured
  // when it is drawn and when the window is resized, never on a rerun, so it never jumps while a student reads
  const { root } = stage;
  stage.maxStatic = Math.max(320, window.innerHeight * 0.75);
  if (!stage.replay || window.innerWidth < NARROW) { root.style.height = ""; return; }
  if (stage.data.presenter) {  // one screen: brought up under the toolbar when drawn (bringIntoView)
    root.style.height = `${Math.max(380, window.innerHeight - headerBottom() - 24)}px`;
    return;
  }
  const scroller = scrollerOf(root.parentElement);
  const top = root.getBoundingClientRect().top + (scroller ? scroller.scrollTop : window.scrollY)
    - (scroller ? scroller.getBoundingClientRect().top : 0);
  root.style.height = `${Math.max(420, window.innerHeight - Math.max(top, 0) - 16)}px`;
}

// -- what the recorded backward looks like after event i ---------------------------------------------------------

function frame(data, index) {
  const started = new Set(), swept = new Set(), recomputed = new Set(), container = new Map();
  const received = new Map(), sent = new Map();
  let onTape = null, current = null, flows = [], upstream = null;
  for (let k = 0; k <= index && k < data.events.length; k++) {
    const e = data.events[k];
    if (e.kind === "TapeBuilt") {
      onTape = new Set(e.nodes);
    } else if (e.kind === "StepStarted") {
      current = e; flows = []; recomputed.clear();
      upstream = container.has(e.node) ? container.get(e.node).total : null;
      started.add(e.node);
    } else if (e.kind === "Recomputed") {
      recomputed.add(e.node);
    } else if (e.kind === "GradientRegistered") {
      container.set(e.node, e);
      received.set(e.node, e.total);
      if (current && e.source === current.node) flows.push(e);
      if (e.edge) sent.set(e.edge, e.value);
    } else if (e.kind === "GradientConsumed") {
      if (!e.kept) container.delete(e.node);
    } else if (e.kind === "SweepFreed" || e.kind === "BackwardFinished") {
      current = null; flows = []; recomputed.clear();
      if (e.kind === "SweepFreed") e.nodes.forEach((n) => swept.add(n));
    }
  }
  return { started, swept, recomputed, container, received, sent, onTape, current, flows, upstream };
}

function nodeView(data, node, state) {
  // the state a node is drawn in at this event, and the words on its gradient line
  const id = node.id, words = data.words;
  if (!state) return { state: node.state, grad: node.grad };
  const got = state.received.get(id);
  if (state.swept.has(id)) return { state: "swept", grad: words.swept };
  if (state.current && state.current.node === id) return { state: "current", grad: got ? `grad ${got}` : words.current };
  if (state.recomputed.has(id)) return { state: "recomputed", grad: words.recomputed };
  if (node.grad_kind === "none") return { state: node.state, grad: node.grad };
  if (state.onTape && !state.onTape.has(id) && !got) return { state: "unreached", grad: words.unreached };
  if (state.started.has(id)) {
    const leaf = node.grad_kind === "leaf";
    return { state: leaf ? "leaf" : "consumed", grad: got ? `grad ${got} · ${leaf ? "kept" : "consumed"}` : node.grad };
  }
  return { state: node.state, grad: got ? `grad ${got}` : words.none_yet };
}

function show(stage, index, animate, period = 800, report = true) {
  const { data, root } = stage;
  stage.index = index;
  const state = stage.replay ? frame(data, index) : null;
  stage.views = new Map(data.nodes.map((node) => [node.element, nodeView(data, node, state)]));
  if (stage.replay) {
    const event = data.events[index];
    const scrub = root.querySelector(".stage-scrub");
    scrub.value = String(index + 1);
    scrub.setAttribute("aria-valuetext", `event ${index + 1} of ${data.events.length}`);
    root.querySelector(".stage-caption").textContent = `Event ${index + 1} of ${data.events.length}. ${event.text}`;
    drawStep(stage, state);
    drawContainer(stage, state);
  }
  if (stage.svg) drawPicture(stage, state, animate, period);
  drawLegend(stage, state);
  fillTable(stage);
  clearTimeout(stage.reportTimer);  // tell Python once stepping stops: links and exercises follow
  if (report && stage.replay) stage.reportTimer = setTimeout(() => stage.setStateValue("event", index), 700);
}

function drawPicture(stage, state, animate, period) {
  const { data, svg } = stage;
  for (const node of data.nodes) {
    const g = stage.nodes.get(node.element);
    if (!g) continue;
    const view = stage.views.get(node.element);
    g.setAttribute("class", `node s-${view.state}`);
    const text = stage.gradText.get(node.element);
    if (text) text.textContent = view.grad;
  }
  svg.querySelectorAll(".flow-dot").forEach((el) => el.remove());
  stage.edges.forEach((g, id) => {
    g.classList.remove("flow", "sent");
    const label = stage.labelText.get(id);
    const value = state ? state.sent.get(id) : undefined;
    if (label) label.textContent = value || "";
    if (value) g.classList.add("sent");
  });
  if (!state) return;
  let focus = state.current ? stage.nodes.get(data.box_of[state.current.node]) : null;
  for (const flow of state.flows) {
    const edge = flow.edge && stage.edges.get(flow.edge);
    if (!edge) continue;
    edge.classList.add("flow");
    const path = edge.querySelector("path");
    if (path && animate && !stage.reduceMotion) travel(edge, path, flow.value, Math.min(period * 0.7, 900));
  }
  if (focus) reveal(stage, focus);
}

function reveal(stage, g) {
  // a graph larger than its box scrolls so that the running step is in view
  const box = stage.root.querySelector(".stage-svg");
  if (!stage.scrollable) return;
  const r = g.getBoundingClientRect(), b = box.getBoundingClientRect();
  if (r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom) return;
  box.scrollTo({
    left: box.scrollLeft + r.left - b.left - (b.width - r.width) / 2,
    top: box.scrollTop + r.top - b.top - (b.height - r.height) / 2,
    behavior: stage.reduceMotion ? "auto" : "smooth",
  });
}

function travel(edge, path, value, duration) {
  // the gradient moves from the step's node back along its edge to the input it reaches, carrying its value
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
  const step = (now) => {
    const t = Math.min(1, (now - start) / duration);
    const point = path.getPointAtLength(length * (1 - t));  // edges point input -> node: walk back
    dot.setAttribute("transform", `translate(${point.x} ${point.y})`);
    if (t < 1 && dot.isConnected) requestAnimationFrame(step);
    else dot.remove();
  };
  requestAnimationFrame(step);
}

// -- the panels beside it ---------------------------------------------------------------------------------------

function table(columns, rows, caption) {
  const t = element("table");
  if (caption) t.createCaption().textContent = caption;
  const head = t.createTHead().insertRow();
  columns.forEach((c) => { const th = element("th", "", c); th.scope = "col"; head.appendChild(th); });
  const body = t.createTBody();
  rows.forEach((row) => {
    const tr = body.insertRow();
    row.forEach((cell) => { tr.insertCell().textContent = cell; });
  });
  return t;
}

function nodeById(data, id) {
  if (!data.__byId) data.__byId = new Map(data.nodes.map((n) => [n.id, n]));
  return data.__byId.get(id);
}

function nameOf(data, id) {
  const node = nodeById(data, id);
  return node ? node.name : `NodeId(${id})`;
}

function drawStep(stage, state) {
  const { data, root } = stage;
  const box = root.querySelector(".stage-step");
  const step = state.current;
  if (!step) return box.replaceChildren(element("p", "stage-note", "No step is running at this event."));
  const head = element("p", "stage-note",
    `${nameOf(data, step.node)}: ${step.op}, order ${step.order}. It received the gradient ${state.upstream ?? "—"}.`);
  if (!step.parents.length) {
    return box.replaceChildren(head, element("p", "stage-note",
      "A leaf's step only consumes its gradient: for a Grad leaf, the container keeps the entry."));
  }
  const sent = state.flows.slice();
  const rows = step.parents.map((parent, k) => {
    const i = sent.findIndex((f) => f.node === parent);
    const flow = i >= 0 ? sent.splice(i, 1)[0] : null;
    return [nameOf(data, parent), step.rules[k], flow ? flow.value : "not yet",
      flow ? (flow.accumulated ? "added to its entry" : "a new entry") : ""];
  });
  box.replaceChildren(head, table(["Input", "Local rule", "Sends", "In the container"], rows));
}

function drawContainer(stage, state) {
  const { data, root } = stage;
  const box = root.querySelector(".stage-container");
  if (!state.container.size) return box.replaceChildren(element("p", "stage-note", "The container is empty."));
  const rows = [...state.container.entries()].sort((a, b) => a[0] - b[0]).map(([node, entry]) => {
    const kind = nodeById(data, node);
    const leaf = kind && kind.grad_kind === "leaf";
    const waiting = !state.started.has(node);
    return [nameOf(data, node), entry.total_full, entry.shape,
      leaf ? "kept: a Grad leaf" : waiting ? "waiting for its step" : "its step is running"];
  });
  box.replaceChildren(table(["Node", "Gradient", "Shape", "Entry"], rows));
}

function drawLegend(stage, state) {
  const { data, root } = stage;
  const present = new Set([...stage.views.values()].map((v) => v.state));
  if ([...stage.nodes.keys()].some((id) => id.startsWith("order"))) present.add("bucket");
  const chips = [...Object.keys(data.legend)].filter((key) => present.has(key)).map((key) => chip(key, data.legend[key]));
  if (data.edges.some((e) => !e.tracked)) chips.push(chip("untracked_edge", data.legend.untracked_edge, "line"));
  if (state && state.flows.length) chips.push(chip("flow", data.legend.flow, "line"));
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

function fillTable(stage) {
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

// -- loading Graphviz: the app's own pinned copy (the saved replay carries it inline instead) ---------------------

let graphvizPromise = null;

function loadGraphvizFrom(url) {
  if (!graphvizPromise) {
    graphvizPromise = import(url).then((module) => module.Graphviz.load());
  }
  return graphvizPromise;
}

export default function (component) {
  const url = new URL(component.data.graphviz_url, document.baseURI).href;
  mountStage(component, () => loadGraphvizFrom(url));
}
