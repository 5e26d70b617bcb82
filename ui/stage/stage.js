// The replay stage: one recorded backward, laid out once by Graphviz (WebAssembly), stepped in the browser.
// Every step only changes classes and text on the laid-out picture: nothing moves, nothing waits on the
// server. The current event goes back to Python a moment after stepping stops (links, exercises).
// All text comes in as data and is set with textContent: nothing here is parsed as HTML.

const KEYS = {
  ArrowRight: "next", PageDown: "next", ArrowLeft: "prev", PageUp: "prev",
  Home: "first", End: "last", " ": "play",
};
const SVG_NS = "http://www.w3.org/2000/svg";

function mountStage(component, loadGraphviz) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.querySelector(".stage") || buildSkeleton(parentElement);
  const signature = data.signature;
  if (root.__stage && root.__stage.signature === signature) {
    root.__stage.setStateValue = setStateValue; // a rerun of the page: keep the picture and the position
    settle(root);
    return;
  }
  if (root.__stage) root.__stage.dispose();
  const stage = {
    signature, data, root, setStateValue, index: Math.min(data.index || 0, data.events.length - 1),
    playing: false, timer: null, reportTimer: null, edges: new Map(), nodes: new Map(),
  };
  root.__stage = stage;
  stage.onResize = () => fitHeight(root);
  stage.dispose = () => {
    clearInterval(stage.timer);
    clearTimeout(stage.reportTimer);
    if (window.__replayStageKeys === stage.onKey) window.__replayStageKeys = null;
    document.removeEventListener("keydown", stage.onKey, true);
    window.removeEventListener("resize", stage.onResize);
  };
  window.addEventListener("resize", stage.onResize);
  wireControls(stage);
  stage.onKey = (event) => {
    const target = event.composedPath ? event.composedPath()[0] : event.target;
    if (target && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName || ""))) return;
    const inStage = root.contains(target) || (target && target.getRootNode && target.getRootNode().host
      && target.getRootNode().host.contains(root));
    if (target && target.tagName === "INPUT" && !inStage && target.type !== "checkbox") return;  // typing
    if (target && target.tagName === "INPUT" && target.type === "checkbox" && event.key === " ") return;
    const action = KEYS[event.key];
    if (!action || !root.isConnected) return;
    event.preventDefault();
    act(stage, action);
  };
  // one listener for the page's stage: a stage left behind on another page stops listening
  if (window.__replayStageKeys) document.removeEventListener("keydown", window.__replayStageKeys, true);
  window.__replayStageKeys = stage.onKey;
  document.addEventListener("keydown", stage.onKey, true);  // before the page scrolls on End or Space
  layout(stage, loadGraphviz).then(() => { show(stage, stage.index, false, 800, false); settle(root); });
}

function buildSkeleton(parent) {
  const root = document.createElement("div");
  root.className = "stage";
  root.innerHTML = `
    <div class="stage-graph"><div class="stage-svg" aria-label="graph"></div></div>
    <div class="stage-side">
      <div class="stage-controls">
        <button data-act="first" title="First (Home)">« First</button>
        <button data-act="prev" title="Previous (←, Page Up)">◀ Prev</button>
        <button data-act="next" title="Next (→, Page Down)">Next ▶</button>
        <button data-act="last" title="Last (End)">Last »</button>
        <button data-act="play" class="stage-play" title="Play or pause (Space)">Play</button>
      </div>
      <div class="stage-scrubber">
        <input class="stage-scrub" type="range" min="1" value="1" aria-label="Event">
        <select class="stage-speed" title="Speed"><option value="1500">slow</option>
          <option value="800" selected>normal</option><option value="350">fast</option></select>
      </div>
      <p class="stage-caption"></p>
      <h4>The current step</h4>
      <div class="stage-step"></div>
      <h4>The <code>Gradients</code> container after this event</h4>
      <div class="stage-container"></div>
      <div class="stage-legend"></div>
    </div>`;
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
  const legend = root.querySelector(".stage-legend");
  legend.replaceChildren(...data.legend.map(([kind, text]) => {
    const chip = document.createElement("span");
    chip.className = `chip chip-${kind}`;
    chip.textContent = text;
    return chip;
  }));
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
  stage.root.querySelector(".stage-play").textContent = "Pause";
  const period = Number(stage.root.querySelector(".stage-speed").value);
  stage.timer = setInterval(() => {
    if (stage.index >= last) return pause(stage);
    show(stage, stage.index + 1, true, period);
  }, period);
}

function pause(stage) {
  stage.playing = false;
  clearInterval(stage.timer);
  stage.root.querySelector(".stage-play").textContent = "Play";
}

// -- the picture ------------------------------------------------------------------------------------

async function layout(stage, loadGraphviz) {
  const box = stage.root.querySelector(".stage-svg");
  fitHeight(stage.root);
  const graphviz = await loadGraphviz();
  const width = box.clientWidth, height = box.clientHeight;
  let best = null;
  for (const rankdir of stage.data.rankdirs) {  // lay out each way once; keep the one that reads larger
    const svgText = graphviz.dot(stage.data.dot.replace(/rankdir=\w+/, `rankdir=${rankdir}`));
    const svg = new DOMParser().parseFromString(svgText, "image/svg+xml").documentElement;
    const w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
    const scale = Math.min(width / w, height / h);
    if (!best || scale > best.scale) best = { svg, scale };
  }
  const svg = document.importNode(best.svg, true);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  box.replaceChildren(svg);
  stage.svg = svg;
  svg.querySelectorAll("g.node").forEach((g) => stage.nodes.set(g.id, g));
  svg.querySelectorAll("g.edge").forEach((g) => stage.edges.set(g.id, g));
}

function settle(root) {
  // what sits above the stage may still be drawing: fit again while the page settles
  fitHeight(root);
  [200, 600, 1200, 2500].forEach((ms) => setTimeout(() => fitHeight(root), ms));
}

function fitHeight(root) {
  // the whole stage fits the window below where it starts, so nothing needs scrolling on a projector
  const top = root.getBoundingClientRect().top + window.scrollY;
  const height = Math.max(380, window.innerHeight - top - 12);
  root.style.height = `${height}px`;
}

// -- what the recorded backward looks like after event i (the same rules as ui/replay_state.py) ----------

function stateAt(events, index) {
  const consumed = new Set(), swept = new Set(), container = new Map();
  let current = null, flows = [], upstream = null;
  for (let k = 0; k <= index; k++) {
    const e = events[k];
    if (e.kind === "StepStarted") {
      current = e; flows = [];
      upstream = container.has(e.node) ? container.get(e.node).total : null;
    } else if (e.kind === "GradientRegistered") {
      if (current && e.source === current.node) flows.push(e);
      container.set(e.node, { total: e.total, shape: e.shape });
    } else if (e.kind === "GradientConsumed") {
      if (!e.kept) container.delete(e.node);
    } else if (e.kind === "SavedStateFreed") {
      consumed.add(e.node);
    } else if (e.kind === "SweepFreed" || e.kind === "BackwardFinished") {
      current = null; flows = [];
      if (e.kind === "SweepFreed") e.nodes.forEach((n) => swept.add(n));
    }
  }
  return { consumed, swept, container, current, flows, upstream };
}

function show(stage, index, animate, period = 800, report = true) {
  const { data, root } = stage;
  stage.index = index;
  const state = stateAt(data.events, index);
  const event = data.events[index];
  root.querySelector(".stage-scrub").value = String(index + 1);
  root.querySelector(".stage-caption").textContent = `Event ${index + 1} of ${data.events.length}. ${event.text}`;
  if (stage.svg) drawOverlay(stage, state, animate, period);
  drawStep(stage, state);
  drawContainer(stage, state);
  clearTimeout(stage.reportTimer);  // tell Python once stepping stops: links and exercises follow
  if (report) stage.reportTimer = setTimeout(() => stage.setStateValue("event", index), 700);
}

function boxOf(data, node) {
  return data.box_of[node] || `n${node}`;
}

function drawOverlay(stage, state, animate, period) {
  const { data, svg } = stage;
  stage.nodes.forEach((g) => g.classList.remove("consumed", "swept", "current"));
  stage.edges.forEach((g) => g.classList.remove("flow"));
  svg.querySelectorAll(".flow-label, .flow-dot").forEach((el) => el.remove());
  state.consumed.forEach((n) => stage.nodes.get(boxOf(data, n))?.classList.add("consumed"));
  state.swept.forEach((n) => stage.nodes.get(boxOf(data, n))?.classList.add("swept"));
  if (state.current) stage.nodes.get(boxOf(data, state.current.node))?.classList.add("current");
  const used = new Map();
  for (const flow of state.flows) {
    const base = `e${flow.node}_${flow.source}`;
    const k = used.get(base) || 0;
    used.set(base, k + 1);
    const edge = stage.edges.get(`${base}_${k}`);
    if (!edge) continue;
    edge.classList.add("flow");
    const path = edge.querySelector("path");
    if (!path) continue;
    const length = path.getTotalLength();
    const middle = path.getPointAtLength(length / 2);
    const label = document.createElementNS(SVG_NS, "text");
    label.setAttribute("class", "flow-label");
    label.setAttribute("x", middle.x);
    label.setAttribute("y", middle.y - 6);
    label.setAttribute("text-anchor", "middle");
    label.textContent = flow.value;
    edge.appendChild(label);
    if (animate) travel(edge, path, length, Math.min(period * 0.7, 900));
  }
}

function travel(edge, path, length, duration) {
  // the gradient moves from the step's node back along its edge to the input it reaches
  const dot = document.createElementNS(SVG_NS, "circle");
  dot.setAttribute("class", "flow-dot");
  dot.setAttribute("r", "6");
  edge.appendChild(dot);
  const start = performance.now();
  const frame = (now) => {
    const t = Math.min(1, (now - start) / duration);
    const point = path.getPointAtLength(length * (1 - t));  // edges point input -> node: walk back
    dot.setAttribute("cx", point.x);
    dot.setAttribute("cy", point.y);
    if (t < 1 && dot.isConnected) requestAnimationFrame(frame);
    else dot.remove();
  };
  requestAnimationFrame(frame);
}

function table(columns, rows) {
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  columns.forEach((c) => { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); });
  const body = t.createTBody();
  rows.forEach((row) => {
    const tr = body.insertRow();
    row.forEach((cell) => { tr.insertCell().textContent = cell; });
  });
  return t;
}

function note(text) {
  const p = document.createElement("p");
  p.className = "stage-note";
  p.textContent = text;
  return p;
}

function drawStep(stage, state) {
  const { data, root } = stage;
  const box = root.querySelector(".stage-step");
  const step = state.current;
  if (!step) return box.replaceChildren(note("No step is running at this event."));
  const head = note(`${data.names[step.node] || `NodeId(${step.node})`} — ${step.op}, order ${step.order}. `
    + `Upstream gradient: ${state.upstream ?? "—"}`);
  if (!step.parents.length) {
    return box.replaceChildren(head, note("A leaf's step only consumes its gradient: for a Grad leaf, the entry is kept."));
  }
  const sent = state.flows.slice();
  const rows = step.parents.map((parent, k) => {
    const i = sent.findIndex((f) => f.node === parent);
    const flow = i >= 0 ? sent.splice(i, 1)[0] : null;
    return [`${k + 1}. ${data.names[parent] || `NodeId(${parent})`}`, step.rules[k],
      flow ? flow.value : "not yet", flow ? (flow.accumulated ? "yes: added to an entry" : "no") : ""];
  });
  box.replaceChildren(head, table(["Input", "Local rule", "Value sent", "Accumulated"], rows));
}

function drawContainer(stage, state) {
  const { data, root } = stage;
  const box = root.querySelector(".stage-container");
  if (!state.container.size) return box.replaceChildren(note("The Gradients container is empty."));
  const rows = [...state.container.entries()].sort((a, b) => a[0] - b[0]).map(([node, entry]) => [
    data.names[node] || `NodeId(${node})`, `${entry.total} ${entry.shape}`,
    data.kept.includes(node) ? "kept: a Grad leaf" : "awaiting its step",
  ]);
  box.replaceChildren(table(["Node", "Gradient [shape]", "Kind"], rows));
}

// -- loading Graphviz: the app's own pinned copy (the exported replay carries it inline instead) ----------

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
