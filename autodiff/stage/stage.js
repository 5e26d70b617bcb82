// The stage: every graph of the app, laid out once by Graphviz (WebAssembly), and for a recorded backward a player
// stepped in the browser. Every step only changes classes and text on the laid-out picture: nothing moves, nothing
// waits on the server. The current event goes back to Python a moment after stepping stops (links, exercises).
// All text comes in as data and is set with textContent: nothing here is parsed as HTML.

/**
 * The contract with Python (`StagePayload` in payload.py, each event kind in events.py): a test checks that
 * both sides name the same kinds and keys, at every level.
 * @typedef {{element: string, id: number, name: string, title: string, value: string, detail: string,
 *   state: string, grad: string, grad_kind: ("leaf"|"op"|"none"), wide: string, group: string}} StageNode
 * @typedef {{element: string, source: number, target: number, tracked: boolean, label: string}} StageEdge
 * @typedef {{node: number, name: string, value: string}} GroupFlow
 * @typedef {{first: number, last: number, steps: number, came_in: GroupFlow[], sent: GroupFlow[]}} GroupRun
 * @typedef {{element: string, name: string, kind: ("function"|"loop"|"iteration"|"scope"|"line"|"repeat"|"range"),
 *   parent: string, summary: string, output: number, nodes: number, steps: number, lines: (number[]|null),
 *   runs: GroupRun[]}} StageGroup
 * @typedef {{kind: "TapeBuilt", text: string, nodes: number[]}} TapeBuiltEvent
 * @typedef {{kind: "StepStarted", text: string, node: number, op: string, order: number, parents: number[],
 *   rules: string[]}} StepStartedEvent
 * @typedef {{kind: "Recomputed", text: string, node: number}} RecomputedEvent
 * @typedef {{kind: "GradientRegistered", text: string, node: number, source: (number|null), edge: (string|null),
 *   value: string, total: string, total_full: string, shape: string, accumulated: boolean,
 *   numbers: (number[]|null)}} GradientRegisteredEvent
 * @typedef {{kind: "GradientConsumed", text: string, node: number, kept: boolean}} GradientConsumedEvent
 * @typedef {{kind: "SavedStateFreed", text: string, node: number}} SavedStateFreedEvent
 * @typedef {{kind: "SweepFreed", text: string, nodes: number[]}} SweepFreedEvent
 * @typedef {{kind: "BackwardFinished", text: string}} BackwardFinishedEvent
 * @typedef {(TapeBuiltEvent|StepStartedEvent|RecomputedEvent|GradientRegisteredEvent|GradientConsumedEvent|
 *   SavedStateFreedEvent|SweepFreedEvent|BackwardFinishedEvent)} StageEvent
 * @typedef {{node: number, input: string, rule: string, derivative: string, derivative_value: string,
 *   product: string, sends: string}} CardInput
 * @typedef {{node: number, title: string, upstream: string, inputs: CardInput[]}} StepCard
 * @typedef {{value: string, path: string}} SumTerm
 * @typedef {{node: number, terms: SumTerm[], total: string, text: string}} GradientSum
 * @typedef {{lines: Array<Array<Array<(string|null)>>>, spans: Object<string, number[]>}} StageProgram
 * @typedef {{role: ("teacher"|"student"), room: string, secret: string, api: string, join: string,
 *   asked: Object<string, number>, mistakes: Object<string, string>, phase: string, histogram: boolean}} ClassroomLink
 * @typedef {{start: number, events: StageEvent[], cards: Object<string, StepCard>,
 *   sums: Object<string, GradientSum>, runs: GroupRun[][]}} RevealedEvents
 * @typedef {{mode: ("static"|"replay"), rankdirs: string[], fonts: number[],
 *   nodes: StageNode[], edges: StageEdge[], groups: StageGroup[], events: StageEvent[], index: number,
 *   presenter: boolean, embed: boolean, legend: Object<string, string>, words: Object<string, string>,
 *   graphviz_url: string, graph_fonts: Object<string, string>, signature: string, program: (StageProgram|null), cards: Object<string, StepCard>,
 *   sums: Object<string, GradientSum>, exercise: boolean, tolerance: number[],
 *   classroom: (ClassroomLink|null)}} StagePayload
 */
const PAYLOAD_KEYS = ["mode", "rankdirs", "fonts", "nodes", "edges", "groups", "events", "index",
  "presenter", "embed", "legend", "words", "graphviz_url", "graph_fonts", "signature", "program", "cards", "sums", "exercise",
  "tolerance", "classroom"];
const EVENT_KINDS = new Set(["TapeBuilt", "StepStarted", "Recomputed", "GradientRegistered", "GradientConsumed",
  "SavedStateFreed", "SweepFreed", "BackwardFinished"]);

const KEYS = {
  ArrowRight: "next", PageDown: "next", ArrowLeft: "prev", PageUp: "prev",
  Home: "first", End: "last", " ": "play",
};
const ZOOM_KEYS = { "+": "zoomIn", "=": "zoomIn", "-": "zoomOut", "_": "zoomOut", "0": "fit" };
const SVG_NS = "http://www.w3.org/2000/svg";
const MAX_SCALE = 1.6;  // a small graph is drawn larger, up to this
const MAX_ZOOM = 3;  // zoomed in, at most this many times the graph's own size
const NARROW = 700;  // below this width the stage stacks and the graph fits the width
const STACK = 880;  // a stage narrower than this puts its panel below the graph, which then takes the width
const FINISH = new Set(["SweepFreed", "BackwardFinished"]);

function checkPayload(data) {
  const missing = PAYLOAD_KEYS.filter((key) => !(key in data));
  if (missing.length) throw new Error(`This stage's data lacks ${missing.join(", ")}.`);
  const unknown = data.events.find((e) => !EVENT_KINDS.has(e.kind));
  if (unknown) {
    throw new Error(`This stage cannot replay an event of kind "${unknown.kind}": it knows ${[...EVENT_KINDS].join(", ")}.`);
  }
}

// The module's own state (never the window's): the stage mounted in each parent, kept across a host's reruns,
// and the one replay whose player the page's keys drive.
const mounted = new WeakMap();
let keysOwner = null;

function newStage(data, parent, root, setStateValue) {
  // every field a stage has, in one place; sealed, so a field added anywhere else is an error
  return Object.seal({
    signature: data.signature, data, parent, root, replay: data.mode === "replay", setStateValue,
    index: Math.max(0, Math.min(data.index || 0, data.events.length - 1)),
    byStep: readBy() !== "event", stops: [], answers: new Map(), selected: null,
    playing: false, timer: null, reportTimer: null,
    svg: null, natural: null, nodes: new Map(), edges: new Map(), gradText: new Map(), labelText: new Map(),
    views: null, current: null, scale: 1, fit: 1, fitted: true, readableScale: 1, maxStatic: 320,
    reduceMotion: window.matchMedia("(prefers-reduced-motion: reduce)").matches,
    typed: new WeakSet(),  // fields a person typed in since the page last reran: their arrows move the caret
    listeners: new AbortController(),  // every listener outside the stage's own elements, removed at once
    keys: new AbortController(),  // the page's keys, given up when another player takes them
    timeouts: new Set(), frames: new Set(), theme: null, disposed: false,
    following: data.classroom && data.classroom.role === "student",  // a student's stage moves with the room's
    room: null,  // the room as the push route told it last (class mode)
    posting: null,  // the teacher's step being sent, and the one to send after it
    countdownTimer: null,  // the open vote's countdown, ticking each second
    whole: data.index + 1,  // a class's student: the events held whole (the rest, redacted, come as the room moves)
    countdownFor: "",  // the question and phase the teacher's countdown was started for
    timeUp: false,  // the open vote's countdown reached 0: a stored answer is final
    storedAnswer: null,  // a student's answer the server stored for the open vote, as its receipt says it
    roomAsked: "",  // the room's question and phase a teacher's stage last asked its page to draw the controls of
    badgeView: null,  // the graph's own viewBox, before a badge beside a node made room for itself
    tree: programTree(data),  // the program's parts: each group's children, depth and nodes (groups.py made them)
    open: new Set(),  // the groups drawn unfolded, in place; the others are one box each
    boxOf: new Map(),  // NodeId -> the element that shows it now: its own box, or its folded group's
    edgeShown: new Map(),  // a payload edge's element -> the edge drawn for it (between boxes), if any
    graphviz: null, layouts: new Map(),  // Graphviz once loaded, and each view's layout once made
    follow: false,  // "follow the step": the part being run is opened while it runs, folded back after
    chosenOpen: new Set(),  // the parts open as the student left them (follow opens more, for a while)
    dragged: false,  // a drag that panned the graph is not a click on what it ended over
    lastFrame: null,  // the last frame shown, to step forward from
    layout: null,  // the layout drawn now
    stackForReading: false,  // the graph read too small beside the panel: the panel went below it
    wideWrap: window.innerWidth < NARROW ? 26 : WRAP,  // a box's longest line, in characters: shorter on a phone
    wrapWidth: WRAP,  // the line width the drawn layout was made with (bestLayout tries it and a shorter one)
  });
}

function mountStage(component, loadGraphviz, pageKeys = true) {
  // mounts the stage in `component.parentElement` and returns its cleanup; mounted again with the same data (a
  // host's rerun), it keeps the picture, position and height and returns the same cleanup. A replay takes the
  // page's keys (`pageKeys`: a lesson page, a slide) or only its own while focus is in it (a notebook, where the
  // page's keys are the notebook's). The data's heavy part arrives packed: it is unpacked first (`unpack`)
  const { data, parentElement } = component;
  const kept = mounted.get(parentElement);
  if (kept && kept.signature === data.signature) {
    if (kept.unpacking) { kept.latest = component; return () => dispose(kept); }
    return remount(kept, component);
  }
  if (kept) dispose(kept);
  parentElement.querySelectorAll(":scope > .stage-refused").forEach((refusal) => refusal.remove());
  const shell = { signature: data.signature, unpacking: true, latest: component, disposed: false, real: null };
  mounted.set(parentElement, shell);
  unpack(data).then((full) => {
    if (shell.disposed) return;
    const { packed, ...latest } = shell.latest.data;  // the newest rerun's own fields (a class's room, an exercise)
    shell.real = mountUnpacked({ ...shell.latest, data: { ...full, ...latest } }, loadGraphviz, pageKeys);
  }).catch((error) => { if (!shell.disposed) refuse(parentElement, `This stage's data could not be read: ${error.message}`); });
  return () => dispose(shell);
}

async function unpack(data) {
  // the heavy part travels gzip-compressed in one base64 text (payload.py's `wire`): a 5,000-node replay is 7 MB of
  // JSON, mostly the same words again
  if (!("packed" in data)) return data;
  const { packed, ...rest } = data;
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return { ...JSON.parse(await new Response(stream).text()), ...rest };
}

function refuse(parentElement, message) {
  // a payload the stage cannot show is refused in words on the page, not a blank space
  const refusal = element("p", "stage-refused", message);
  refusal.setAttribute("role", "alert");
  parentElement.appendChild(refusal);
  return () => refusal.remove();
}

function remount(kept, component) {
  // the host reran with the same stage: keep everything, take the room and the exercise as it drew them
  const { data, setStateValue } = component;
  kept.setStateValue = setStateValue;
  calmTyping(kept);
  if (data.classroom) {  // the room as this rerun drew it (its controls' phase, the histogram shown or not)
    kept.data = { ...kept.data, classroom: data.classroom };
    if (kept.room) drawTally(kept);
  }
  if (kept.data.exercise !== data.exercise) {  // the exercise turned on or off: ask (or not) from here on
    kept.data = { ...kept.data, exercise: data.exercise };
    kept.stops = stopsOf(kept);
    show(kept, kept.index, false, 800, false);
  }
  return () => dispose(kept);
}

function mountUnpacked(component, loadGraphviz, pageKeys) {
  const { data, parentElement, setStateValue } = component;
  try {
    checkPayload(data);
  } catch (error) {
    return { disposed: false, unmount: refuse(parentElement, error.message) };
  }
  const root = buildSkeleton(parentElement, data, data.mode === "replay");
  const stage = newStage(data, parentElement, root, setStateValue);
  mounted.set(parentElement, stage);
  followTheme(stage);
  const { signal } = stage.listeners;
  // a new width is a new layout: the window's, or the stage's box alone (JupyterLab's sidebar opening, a notebook's
  // column); a height alone is not (a phone's toolbar showing or hiding, the stage's own height as it fits)
  let width = root.clientWidth;  // the stage's own box (its parent may be a shadow root, which has none)
  const refit = new ResizeObserver(() => {
    if (root.clientWidth === width) return;
    width = root.clientWidth;
    fitHeight(stage);
    place(stage, stage.fitted ? null : stage.scale);
  });
  refit.observe(root);
  // so is a new place to start from: content above the stage that arrives after it (an element drawn late on a busy
  // machine, a font swapping in) moves it down, and it fits the rest of the screen from there again
  let top = pageTop(root);
  const moved = new ResizeObserver(() => {
    if (Math.abs(pageTop(root) - top) < 1) return;
    top = pageTop(root);
    fitHeight(stage);
    place(stage, stage.fitted ? null : stage.scale);
  });
  moved.observe(document.body);
  signal.addEventListener("abort", () => { refit.disconnect(); moved.disconnect(); });
  const bar = stickyBar();
  if (bar) {  // the bar grew or shrank (a question asked): refit below it
    const watcher = new ResizeObserver(() => { fitHeight(stage); place(stage, stage.fitted ? null : stage.scale); });
    watcher.observe(bar);
    signal.addEventListener("abort", () => watcher.disconnect());
  }
  stage.stops = stopsOf(stage);
  wireControls(stage);
  if (stage.replay && pageKeys) {
    // one listener for the page's player: a player left behind elsewhere on the page stops listening
    if (keysOwner) keysOwner.keys.abort();
    keysOwner = stage;
    document.addEventListener("keydown", (event) => onKey(stage, event), { capture: true, signal: stage.keys.signal });  // before the page scrolls on End or Space
    watchTyping(stage);
  } else {
    root.addEventListener("keydown", (event) => onKey(stage, event));  // keys while focus is in the stage
  }
  fitHeight(stage);
  layout(stage, loadGraphviz).then((done) => {
    if (!done) return;  // unmounted while Graphviz loaded
    fitHeight(stage);
    placeReadable(stage);
    show(stage, stage.index, false, 800, false);
    // a class's teacher on a projector starts on the room code and QR code above the stage, for the room to join
    const joining = data.classroom && data.classroom.role === "teacher";
    if ((data.presenter || data.embed) && stage.replay && window.innerWidth >= NARROW && !joining) bringIntoView(stage);
    if (data.classroom) joinRoom(stage);
  }, (failed) => {  // Graphviz could not be loaded: say so in words, not a blank box
    if (!stage.disposed) refuse(parentElement, `The graph cannot be drawn: ${failed.message || failed}`);
  });
  return stage;
}

function dispose(stage) {
  // everything the stage started outside its own elements stops; its elements leave the page. A stage still being
  // unpacked (a shell) or refused in words leaves too
  if (stage.disposed) return;
  stage.disposed = true;
  clearInterval(stage.countdownTimer);
  if (stage.unpacking) {
    if (mounted.get(stage.latest.parentElement) === stage) mounted.delete(stage.latest.parentElement);
    if (stage.real) dispose(stage.real);
    return;
  }
  if (stage.unmount) { stage.unmount(); return; }
  clearInterval(stage.timer);
  clearTimeout(stage.reportTimer);
  stage.timeouts.forEach(clearTimeout);
  stage.frames.forEach(cancelAnimationFrame);
  stage.listeners.abort();
  stage.keys.abort();
  if (stage.theme) stage.theme.disconnect();
  if (keysOwner === stage) keysOwner = null;
  if (mounted.get(stage.parent) === stage) mounted.delete(stage.parent);
  stage.root.remove();
}

function later(stage, act, ms) {
  // a timeout the stage's cleanup cancels
  const id = setTimeout(() => { stage.timeouts.delete(id); act(); }, ms);
  stage.timeouts.add(id);
}

function followTheme(stage) {
  // the viewer may switch the theme at any time (the host's menu, or the system's): the host's colours live on an
  // ancestor (its class or style), so watch those attributes up the tree, through shadow roots, and the system's
  const { root } = stage;
  const update = () => {
    const dark = isDark(root);
    if (dark !== root.classList.contains("dark")) root.classList.toggle("dark", dark);
    const bar = stickyBar();  // the stage scrolls under it: it wears the page's own background, opaque
    if (bar) bar.style.backgroundColor = getComputedStyle(document.body).backgroundColor;
  };
  update();
  stage.theme = new MutationObserver(update);
  for (let node = stage.parent; node; node = node.parentElement || (node.getRootNode && node.getRootNode().host)) {
    stage.theme.observe(node, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  }
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", update, { signal: stage.listeners.signal });
}

// where each host says its theme: the attributes it switches, and its background colour's variable (Streamlit,
// JupyterLab, VS Code); any other host (marimo, Colab, a saved replay) by the first opaque background behind the stage
const THEME_ATTRIBUTES = ["class", "style", "data-theme", "data-jp-theme-light", "data-jp-theme-name"];
const HOST_BACKGROUNDS = ["--st-background-color", "--jp-layout-color0", "--vscode-editor-background"];

function isDark(root) {
  const style = getComputedStyle(root);
  for (const name of HOST_BACKGROUNDS) {
    const light = lightness(style.getPropertyValue(name).trim());
    if (light !== null) return light < 128;
  }
  // up through the page, and out of a shadow root through its host (marimo draws a widget inside one)
  for (let node = root.parentElement; node; node = node.parentElement || (node.getRootNode && node.getRootNode().host)) {
    const light = lightness(getComputedStyle(node).backgroundColor);
    if (light !== null) return light < 128;
  }
  return window.matchMedia("(prefers-color-scheme: dark)").matches;  // nothing behind it says: the viewer's system
}

function lightness(colour) {
  // a colour's luma (0-255) from `#rrggbb`, `rgb(a)(…)` or `color(srgb r g b / a)` (0-1 each: how Chromium
  // computes a colour a page wrote in oklch, as marimo's themes are); null when it is transparent or not a colour
  let channels = null;
  if (/^#[0-9a-f]{6}/i.test(colour)) {
    channels = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16)).concat(1);
  } else if (colour.startsWith("rgb")) {
    const parts = (colour.match(/[\d.]+/g) || []).map(Number);
    if (parts.length >= 3) channels = parts.length > 3 ? parts.slice(0, 4) : parts.concat(1);
  } else if (colour.startsWith("color(srgb ")) {
    const parts = (colour.slice("color(srgb ".length).match(/[\d.]+/g) || []).map(Number);
    if (parts.length >= 3) channels = parts.slice(0, 3).map((c) => c * 255).concat(parts.length > 3 ? parts[3] : 1);
  }
  if (!channels || channels[3] === 0) return null;
  return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2];
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function button(text, act, label, keys) {
  const b = element("button", "", text);
  b.type = "button";
  b.dataset.act = act;
  b.setAttribute("aria-label", label);
  if (keys) {
    b.setAttribute("aria-keyshortcuts", keys);
    b.title = `${label} (${keys.replace(/Arrow/g, "").replace(/ /g, " or ")})`;
  } else {
    b.title = label;
  }
  return b;
}

function select(className, label, options, chosen) {
  // a choice with its words beside it, visible (the select inside its label)
  const s = element("select", className);
  for (const [value, text] of options) {
    const option = element("option", "", text);
    option.value = value;
    option.selected = value === chosen;
    s.append(option);
  }
  const field = element("label", "stage-field");
  field.append(element("span", "", label), s);
  return field;
}

function buildSkeleton(parent, data, replay) {
  const { presenter, embed } = data;
  const student = data.classroom && data.classroom.role === "student" ? " student" : "";  // the teacher steps for them
  const root = element("div", `stage ${replay ? "replay" : "static"}${presenter ? " presenter" : ""}${embed ? " embed" : ""}${student}`);
  const graph = element("div", "stage-graph");
  const svgBox = element("div", "stage-svg");
  svgBox.setAttribute("role", "img");
  svgBox.setAttribute("aria-label", "The graph: the same nodes are listed in the table below it.");
  svgBox.tabIndex = 0;  // zoomed in, the graph scrolls: from the keyboard too
  const bar = element("div", "stage-bar");
  const zoom = element("div", "stage-zoom");
  zoom.setAttribute("role", "group");
  zoom.setAttribute("aria-label", "Zoom");
  zoom.append(button("−", "zoomOut", "Zoom out", "-"), button("Fit", "fit", "Fit the whole graph", "0"),
    button("+", "zoomIn", "Zoom in", "+"));
  const legend = element("div", "stage-legend");
  legend.setAttribute("role", "list");
  legend.setAttribute("aria-label", "Legend");
  const parts = element("div", "stage-parts");
  parts.setAttribute("role", "group");
  parts.setAttribute("aria-label", "Folded parts: open or fold each");
  parts.hidden = true;
  parts.append(element("span", "stage-parts-title", "Parts:"), element("div", "stage-parts-list"));
  bar.append(legend);
  if (!presenter) {  // under the legend, not in the graph's corner: the fewer buttons over it, the larger it is drawn
    const save = element("div", "stage-save");
    save.setAttribute("role", "group");
    save.setAttribute("aria-label", "Save the picture");
    save.append(button("SVG", "saveSvg", "Save this picture as SVG"), button("PNG", "savePng", "Save this picture as PNG"));
    bar.append(save);
  }
  graph.append(svgBox, zoom);
  const side = element("div", "stage-side");
  const player = element("div", "stage-player");
  if (replay) {
    const controls = element("div", "stage-controls");
    controls.setAttribute("role", "group");
    controls.setAttribute("aria-label", "Replay controls");
    for (const [act, text, keys, label] of [
      ["first", "« First", "Home", "First step"], ["prev", "◀ Prev", "ArrowLeft PageUp", "Previous step"],
      ["next", "Next ▶", "ArrowRight PageDown", "Next step"], ["last", "Last »", "End", "Last step"],
      ["play", "Play", "Space", "Play"]]) {
      const short = presenter && act !== "play" ? text.replace(/[A-Za-z]+/, "").trim() : text;  // a projector: room
      const b = button(short, act, label, keys);
      if (act === "play") { b.classList.add("stage-play"); b.setAttribute("aria-pressed", "false"); }
      controls.append(b);
    }
    const scrubber = element("div", "stage-scrubber");
    const scrub = element("input", "stage-scrub");
    scrub.type = "range";
    scrub.min = "1";
    scrub.setAttribute("aria-label", "Step");
    scrubber.append(scrub,
      select("stage-by", "Each press shows", [["step", "a step"], ["event", "an event"]], "step"),
      select("stage-speed", "Playing speed", [["1500", "slow"], ["800", "normal"], ["350", "fast"]], "800"));
    if (data.groups.length) {  // a folded part runs in one press, or opens while it runs
      const follow = element("label", "stage-field");
      const box = element("input", "stage-follow");
      box.type = "checkbox";
      follow.append(box, element("span", "", "Open the part that runs"));
      scrubber.append(follow);
    }
    const caption = element("p", "stage-caption");
    caption.setAttribute("aria-live", "polite");
    caption.setAttribute("aria-atomic", "true");
    if (data.classroom) player.append(classPanel(data));
    if (data.classroom && data.classroom.role === "student") {  // the teacher steps: the player only shows where
      controls.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      scrub.disabled = true;
    }
    // the player is its own part of the stage: beside the graph on a screen, kept at the bottom on a phone
    player.append(controls, scrubber, parts);  // beside the graph: opening a part never shrinks the picture
    // the card and the container scroll between the caption and the program: a long card never pushes the lit
    // line out of view
    const middle = element("div", "stage-middle");
    middle.tabIndex = 0;  // it scrolls beside the graph: the keyboard can scroll it too
    middle.setAttribute("role", "region");
    middle.setAttribute("aria-label", "The chain rule and the Gradients container");
    middle.append(element("h4", "", "The chain rule at this step"), element("div", "stage-step"),
      element("h4", "", "The Gradients container after this event"), element("div", "stage-container"));
    side.append(caption, middle);
    if (data.program) {
      const program = element("div", "stage-program");
      program.append(element("h4", "", "The program (its running line lit)"), codePanel(data.program));
      side.append(program);
    }
  } else if (data.program) {
    side.append(element("h4", "", "The program"), codePanel(data.program));
  }
  if (!replay) bar.append(parts);
  const details = element("details", "stage-table");
  details.append(element("summary", "", "The graph as a table (every node, its value, gradient and state)"),
    element("div", "stage-table-body"));
  root.append(graph);
  if (player.childElementCount) root.append(player);
  if (side.childElementCount) root.append(side);
  else root.classList.add("alone");
  root.append(bar);  // under the graph and the panel, the whole width: the graph keeps the height
  root.append(details);
  parent.appendChild(root);
  return root;
}

function codePanel(program) {
  // the program beside the graph: the running step's line is lit; a line and the nodes it made select each other
  const pre = element("pre", "stage-code");
  const code = element("code");
  program.lines.forEach((segments, k) => {
    const line = element("span", "line");
    line.dataset.line = String(k + 1);
    const text = segments.map((s) => s[1]).join("");
    const hang = text.length - text.trimStart().length + 4;  // a wrapped line continues under its own start
    line.style.paddingLeft = `${hang}ch`;
    line.style.textIndent = `-${hang}ch`;
    for (const [kind, part] of segments) line.append(kind ? element("span", `token ${kind}`, part) : document.createTextNode(part));
    if (!segments.length) line.append(document.createTextNode("\n"));
    code.append(line);
  });
  pre.append(code);
  return pre;
}

function wireControls(stage) {
  const { root, data } = stage;
  root.querySelectorAll("[data-act]").forEach((b) => { b.onclick = () => act(stage, b.dataset.act); });
  const box = root.querySelector(".stage-svg");
  box.addEventListener("wheel", (event) => {  // Ctrl+wheel, and a trackpad's pinch, zoom the graph alone
    if (!event.ctrlKey || !stage.svg) return;
    event.preventDefault();
    zoomTo(stage, stage.scale * Math.exp(-event.deltaY / 300), event);
  }, { passive: false });
  let pinch = null;
  box.addEventListener("touchstart", (event) => {
    if (event.touches.length === 2) pinch = { distance: spread(event.touches), scale: stage.scale };
  }, { passive: true });
  box.addEventListener("touchmove", (event) => {
    if (!pinch || event.touches.length !== 2) return;
    event.preventDefault();
    zoomTo(stage, pinch.scale * spread(event.touches) / pinch.distance);
  }, { passive: false });
  box.addEventListener("touchend", () => { pinch = null; });
  box.addEventListener("click", (event) => {  // a node selects its program line; a part opens, its frame folds it
    if (stage.dragged) return;
    const g = event.target.closest && event.target.closest("g.node, g.cluster");
    if (!g) return;
    if (isGroup(g.id)) toggleGroup(stage, g.id);
    else selectNodes(stage, [g.id], true);
  });
  box.addEventListener("pointerdown", (event) => {  // zoomed in, a drag pans the graph (it never selects text)
    if (stage.fitted || event.button !== 0 || event.pointerType === "touch") return;
    const start = { x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop };
    stage.dragged = false;
    const move = (e) => {
      const dx = e.clientX - start.x, dy = e.clientY - start.y;
      if (Math.abs(dx) + Math.abs(dy) > 4) stage.dragged = true;
      box.scrollLeft = start.left - dx;
      box.scrollTop = start.top - dy;
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      later(stage, () => { stage.dragged = false; }, 0);
    };
    window.addEventListener("pointermove", move, { signal: stage.listeners.signal });
    window.addEventListener("pointerup", up, { once: true, signal: stage.listeners.signal });
    event.preventDefault();
  });
  root.querySelectorAll(".stage-code .line").forEach((line) => {
    const nodes = nodesOnLine(data, Number(line.dataset.line));
    if (!nodes.length) return;
    line.classList.add("makes");
    line.tabIndex = 0;
    line.setAttribute("role", "button");
    line.setAttribute("aria-label", `Line ${line.dataset.line}: show the nodes it made`);
    const choose = () => selectNodes(stage, [...new Set(nodes.map((id) => stage.boxOf.get(id)))], false, Number(line.dataset.line));
    line.onclick = choose;
    line.onkeydown = (event) => { if (event.key === "Enter") { event.preventDefault(); choose(); } };
  });
  if (!stage.replay) return;
  const scrub = root.querySelector(".stage-scrub");
  scrub.oninput = () => {
    const k = Number(scrub.value) - 1;
    show(stage, stage.byStep ? stage.stops[k] : k, false);
  };
  const by = root.querySelector(".stage-by");
  by.value = stage.byStep ? "step" : "event";
  by.onchange = (event) => {
    stage.byStep = event.target.value === "step";
    try { sessionStorage.setItem("stage-by", event.target.value); } catch { /* storage off: this stage only */ }
    stage.stops = stopsOf(stage);
    show(stage, stage.index, false, 800, false);
  };
  root.querySelector(".stage-speed").onchange = () => { if (stage.playing) { pause(stage); play(stage); } };
  const follow = root.querySelector(".stage-follow");
  if (follow) {
    follow.onchange = () => {
      stage.follow = follow.checked;
      stage.stops = stopsOf(stage);
      if (!stage.follow && stage.svg) { stage.open = new Set(stage.chosenOpen); redraw(stage); return; }
      show(stage, stage.index, false, 800, false);
    };
  }
}

function readBy() {
  // a press per step or per event: the student's choice holds for every stage of this tab, across programs
  try { return sessionStorage.getItem("stage-by"); } catch { return null; }
}

function spread(touches) {
  return Math.hypot(touches[0].clientX - touches[1].clientX, touches[0].clientY - touches[1].clientY) || 1;
}

function nodesOnLine(data, line) {
  if (!data.program) return [];
  return Object.entries(data.program.spans).filter(([, span]) => span[0] <= line && line <= span[1])
    .map(([id]) => Number(id));
}

// -- steps: a press shows one step of the tape (or, as a detail, one event) -----------------------------------

function stopsOf(stage) {
  // where each press stops: the last event of each step (everything before the first step, each step, the cleanup
  // after the last); the steps a folded part runs one after another are one press. In an exercise, also each
  // step's start, where the question is asked before the step runs
  const { events } = stage.data;
  if (!stage.replay) return [0];
  if (!stage.byStep) return events.map((_, k) => k);
  const stops = [0];  // "step 0": the replay's first frame, before anything ran
  let part = null;  // the folded part the previous step ran in
  events.forEach((e, k) => {
    const starts = k > 0 && (e.kind === "StepStarted" || (FINISH.has(e.kind) && !FINISH.has(events[k - 1].kind)));
    if (!starts) return;
    const box = e.kind === "StepStarted" && !stage.follow ? stage.boxOf.get(e.node) : null;
    const folded = box && isGroup(box) ? box : null;
    if (!folded || folded !== part) stops.push(k - 1);
    part = folded;
    if (e.kind === "StepStarted" && !folded && question(stage, k)) stops.push(k);
  });
  stops.push(events.length - 1);
  return [...new Set(stops)];
}

function question(stage, k) {
  // a step is a question in an exercise when it sends something and every value it sends can be checked by hand
  const { data } = stage;
  const e = data.events[k];
  if (!data.exercise || !e || e.kind !== "StepStarted" || !e.parents.length) return null;
  const sent = [];
  for (let j = k + 1; j < data.events.length && data.events[j].kind !== "StepStarted"; j++) {
    const r = data.events[j];
    if (r.kind === "GradientRegistered" && r.source === e.node) sent.push(r);
  }
  if (!sent.length || sent.some((r) => !r.numbers)) return null;
  return { key: `${data.signature}_${k}`, start: k, step: e, sent };
}

function groupStart(events, index) {
  // the first event of the step (or of the part before the first step, or of the cleanup) that `index` is in
  let from = index;
  while (from > 0 && events[from].kind !== "StepStarted" && !(FINISH.has(events[from].kind) && !FINISH.has(events[from - 1].kind))) from--;
  return from;
}

function stopAt(stage, index) {
  // the position of `index` among the stops: the stop at it, or the last one before it (-1 before the first)
  let at = -1;
  stage.stops.forEach((stop, k) => { if (stop <= index) at = k; });
  return at;
}

// -- keys: the page's arrows and clickers drive the player, unless a person is typing ------------------------

function watchTyping(stage) {
  document.addEventListener("input", (event) => {
    const target = event.composedPath ? event.composedPath()[0] : event.target;
    if (target) stage.typed.add(target);
  }, { capture: true, signal: stage.listeners.signal });
}

function calmTyping(stage) {
  // the page reran (a widget's change was sent): what was typed is committed, so → and ← step again
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  if (active) stage.typed.delete(active);
}

function onKey(stage, event) {
  const zoom = ZOOM_KEYS[event.key];
  const action = KEYS[event.key] || zoom;
  if (!action || !stage.root.isConnected || event.altKey || event.ctrlKey || event.metaKey) return;
  if (!stage.replay && !zoom) return;
  const target = event.composedPath ? event.composedPath()[0] : event.target;
  const inStage = stage.root.contains(target);
  const tag = (target && target.tagName) || "";
  if (target && (target.isContentEditable || tag === "TEXTAREA")) return;
  if (inStage && target.closest && target.closest(".class-question")) return;  // a student's answer: its own keys
  if (zoom && ["INPUT", "SELECT"].includes(tag) && !(tag === "INPUT" && target.type === "range")) return;
  // an answer being typed: its keys are the caret's, but a presenter's clicker (Page Down / Up) still steps
  if (tag === "INPUT" && target.classList.contains("stage-answer") && !event.key.startsWith("Page")) return;
  if (tag === "SELECT" && !(inStage && event.key.startsWith("Page"))) return;
  if (tag === "BUTTON" && !inStage && (event.key === " " || event.key === "Enter")) return;
  if (tag === "INPUT" && !inStage) {
    const type = (target.type || "text").toLowerCase();
    const paging = event.key === "PageDown" || event.key === "PageUp";
    if (type === "checkbox" || type === "radio") {
      if (event.key === " ") return;  // Space toggles it
    } else if (target.getAttribute("role") === "combobox" && target.getAttribute("aria-expanded") === "true") {
      return;  // an open list: the keys choose in it
    } else if (!paging && (stage.typed.has(target) || event.key === " " || event.key === "Home" || event.key === "End")) {
      return;  // typing: arrows move the caret
    }
  }
  event.preventDefault();
  event.stopPropagation();
  act(stage, action);
}

function act(stage, action) {
  if (action === "zoomIn" || action === "zoomOut") return zoomStep(stage, action === "zoomIn" ? 1 : -1);
  if (action === "fit") return place(stage, null);
  if (action === "saveSvg") return saveSvg(stage);
  if (action === "savePng") return savePng(stage);
  if (stage.following) return;  // the teacher steps a class: a student's arrows would only fight the room
  if (action === "play") return stage.playing ? pause(stage) : play(stage);
  pause(stage);
  const at = stopAt(stage, stage.index), lastStop = stage.stops.length - 1;
  const onStop = stage.stops[at] === stage.index;
  const target = { first: 0, last: lastStop, next: at + 1, prev: onStop ? at - 1 : at }[action];
  show(stage, stage.stops[Math.max(0, Math.min(lastStop, target))], action === "next");
}

function play(stage) {
  const last = stage.data.events.length - 1;
  if (stage.index >= last) show(stage, 0, false);
  stage.playing = true;
  const b = stage.root.querySelector(".stage-play");
  b.textContent = "Pause";
  b.setAttribute("aria-pressed", "true");
  const period = Number(stage.root.querySelector(".stage-speed").value) * (stage.byStep ? 1.6 : 1);
  stage.timer = setInterval(() => {
    const at = stopAt(stage, stage.index);
    if (at >= stage.stops.length - 1) return pause(stage);
    show(stage, stage.stops[at + 1], true, period);
    const q = question(stage, stage.index);
    if (q && !stage.answers.has(q.key)) pause(stage);  // a question waits for its answer
  }, period);
}

function pause(stage) {
  stage.playing = false;
  clearInterval(stage.timer);
  const b = stage.root.querySelector(".stage-play");
  if (!b) return;
  b.textContent = "Play";
  b.setAttribute("aria-pressed", "false");
}

// -- the program's parts: each group folded into one box or drawn open in place ----------------------------------

const MAX_DRAWN = 48;
const WRAP = 48;  // a value or gradient longer than this goes on several lines: a wide box would shrink every box  // a view with more boxes than this cannot be read whole on a screen: it is not tried first
const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

function programTree(data) {
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

function wrap(text, width = WRAP) {
  // `text` in lines of about `width` characters, broken after spaces (a tensor's values after their commas), never
  // inside a number or a name
  if (text.length <= width) return [text];
  const lines = [];
  let line = "";
  for (const part of text.split(/(?<= )/)) {
    if (line && (line + part).length > width) { lines.push(line.trimEnd()); line = ""; }
    line += part;
  }
  if (line) lines.push(line);
  return lines;
}

function labelWidth(stage) {
  return Math.min(stage.wrapWidth, 24);  // an edge's label is narrower than a box: it sits between the ranks
}

function fillLines(texts, lines) {
  // `lines` into the text elements laid out for them (their number fixed by the widest): the rest left empty, a
  // longer text's last lines joined on the last
  const shown = [...lines.slice(0, texts.length - 1), lines.slice(texts.length - 1).join(" ")];
  texts.forEach((t, k) => { t.textContent = shown[k] || ""; });
}

function isGroup(element) {
  return /^g\d+$/.test(element);
}

function ancestorsOf(stage, node) {
  // the groups around a node, innermost first
  const out = [];
  for (let e = node ? node.group : ""; e; e = stage.tree.groups.get(e).parent) out.push(e);
  return out;
}

function placeBoxes(stage) {
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

function drawnCount(stage, open, container = "") {
  let count = 0;
  for (const kid of stage.tree.kids.get(container)) {
    count += kid.group && open.has(kid.group.element) ? drawnCount(stage, open, kid.group.element) : 1;
    if (count > MAX_DRAWN) return count;
  }
  return count;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"]/g, (c) => HTML_ESCAPES[c]);
}

function labelRows(stage, element) {
  // a box's lines, [point size, text, bold, what it is]: a node's title, value, gradient (as wide as the widest it
  // will say) and detail; a folded part's name, size, and its output's value and gradient. Each wrapped to the
  // stage's width of a line; no line is empty (Graphviz draws no text for one, and the gradient's lines are found
  // by their place)
  const [title, body, small] = stage.data.fonts;
  const lines = (size, text, bold, kind) => wrap(text, stage.wrapWidth).map((t) => [size, t, bold, kind]);
  const part = isGroup(element) ? stage.tree.groups.get(element) : null;
  const node = part ? stage.tree.byId.get(part.output) : stage.tree.byId.get(Number(element.slice(1)));
  const rows = part
    ? [...lines(title, part.name, true, "title"), ...lines(body, part.summary, false, "summary")]
    : lines(title, node.title, true, "title");
  const said = part ? summarised : (text) => text;
  const widest = part ? summarised(node.wide, true) : node.wide;  // room for any numbers the summary will say
  rows.push(...lines(body, said(node.value), false, "value"), ...lines(body, widest, false, "grad"));
  if (!part) rows.push(...lines(small, node.detail, false, "detail"));
  return rows.filter((r) => r[1].trim());
}

function summarised(text, room = false) {
  // a folded part says its output's value and gradient short, as the engine summarises a large tensor
  // (`value [4, 4] from -0.8 to 0.96`), and so does an edge the value it carries; open, a node says every number
  const match = text.match(/\[[-\d.e+\[\], ]*\]/);
  if (!match) return text;
  let values;
  try { values = JSON.parse(match[0]); } catch { return text; }
  const flat = [values].flat(Infinity);
  if (flat.length <= 4 || flat.some((v) => typeof v !== "number")) return text;
  const shape = [];
  for (let v = values; Array.isArray(v); v = v[0]) shape.push(v.length);
  const low = Math.min(...flat), high = Math.max(...flat);
  const widest = "-0.0001234";  // four significant digits, a sign and a small exponent's worth
  const range = room ? `from ${widest} to ${widest}` : low === high ? `all ${low}` : `from ${low} to ${high}`;
  return text.replace(match[0], `[${shape.join(", ")}] ${range}`);
}

function htmlLabel(rows) {
  const cells = rows.map(([size, text, bold]) => {
    const escaped = escapeHtml(text);
    return `<TR><TD><FONT POINT-SIZE="${size}">${bold ? `<B>${escaped}</B>` : escaped}</FONT></TD></TR>`;
  }).join("");
  return `<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">${cells}</TABLE>>`;
}

function dotOf(stage, edges, rankdir, detail) {
  // the DOT of what is drawn: a folded group is one box (its name, its size, its output's value and gradient), an
  // open one a frame around its parts. Each gradient line is laid out as wide as the widest it will say
  const { data, tree } = stage;
  const body = data.fonts[1];
  const lines = [
    "digraph G {",
    `  graph [rankdir=${rankdir}, bgcolor="transparent", nodesep=0.2, ranksep=0.22, fontname="Helvetica", fontsize=${body}];`,
    `  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=${body}, margin="0.08,0.03"];`,
    `  edge [fontname="Helvetica", fontsize=${body}, arrowsize=0.9];`,
  ];
  const emit = (container, indent) => {
    for (const kid of tree.kids.get(container)) {
      if (kid.node) {
        const n = kid.node;
        const rows = labelRows(stage, n.element).filter((r) => detail || r[3] !== "detail");
        lines.push(`${indent}${n.element} [id="${n.element}", label=${htmlLabel(rows)}];`);
      } else if (stage.open.has(kid.group.element)) {
        const g = kid.group;
        lines.push(`${indent}subgraph cluster_${g.element} {`,
          `${indent}  id="${g.element}"; label=${htmlLabel([[body, g.name, true]])}; style="rounded,dashed"; labeljust=l;`);
        emit(g.element, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        const g = kid.group;
        lines.push(`${indent}${g.element} [id="${g.element}", peripheries=2, style="filled", label=${htmlLabel(labelRows(stage, g.element))}];`);
      }
    }
  };
  emit("", "  ");
  for (const edge of edges) {
    const attrs = [`id="${edge.element}"`];
    if (!edge.tracked) attrs.push("style=dashed", "arrowhead=empty");
    if (edge.label) {  // a long value on several lines: a wide label would push the ranks apart
      const lines = wrap(summarised(edge.label), labelWidth(stage)).map((t) => `<B>${escapeHtml(t)}</B>`);
      attrs.push(`label=<${lines.join("<BR/>")}>`);
    }
    lines.push(`  ${edge.tail} -> ${edge.head} [${attrs.join(", ")}];`);
  }
  lines.push("}");
  return lines.join("\n");
}

function bestLayout(stage) {
  // this view laid out each way (bottom-up or left-right, with or without each node's `NodeId · op` line, its long
  // lines wrapped wider or narrower) once, keeping the one that reads largest: the detail line goes first when it
  // would make the text too small
  const edges = placeBoxes(stage);
  const key = [...stage.open].sort().join(",");
  if (stage.layouts.has(key)) return stage.layouts.get(key);
  const box = stage.root.querySelector(".stage-svg");
  const readable = stage.data.presenter ? 16 : 12;
  const lay = (rankdir, detail, wrapWidth) => {
    stage.wrapWidth = wrapWidth;
    const svgText = stage.graphviz.dot(dotOf(stage, edges, rankdir, detail));
    const svg = new DOMParser().parseFromString(svgText, "image/svg+xml").documentElement;
    const w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
    const sizes = [...svg.querySelectorAll("g.node text, g.cluster text")].map((t) => parseFloat(t.getAttribute("font-size")) || 14);
    const font = sizes.length ? Math.min(...sizes) : 14, scale = Math.min(fitScale(stage, box, w, h), MAX_SCALE);
    return { svg, w, h, font, scale, detail, wrapWidth, smallest: scale * font };
  };
  const widths = [...new Set([stage.wideWrap, Math.max(32, Math.round(stage.wideWrap * 0.65)), Math.min(stage.wideWrap, 32)])];
  const compact = stage.data.rankdirs.flatMap((r) => widths.map((w) => lay(r, false, w))).sort((a, b) => b.scale - a.scale)[0];
  compact.compact = compact;
  const detailFont = compact.font * 0.8;  // the detail line is the smallest text, about four fifths of the rest
  let best = compact;
  if (compact.scale * detailFont >= readable - 0.01 && stage.data.nodes.some((n) => stage.boxOf.get(n.id) === n.element)) {
    const withDetail = stage.data.rankdirs.map((r) => lay(r, true, compact.wrapWidth)).sort((a, b) => b.scale - a.scale)[0];
    withDetail.compact = compact;  // drawn instead when the zoom buttons' corner leaves the detail line too small
    if (withDetail.smallest >= readable - 0.01) best = withDetail;
  }
  stage.wrapWidth = best.wrapWidth;
  stage.layouts.set(key, best);
  return best;
}

function chooseView(stage) {
  // the picture opens whole and readable: the deepest level of parts opened whose layout still reads at 12 px
  // (16 on a projector), else the top level folded (zoom, or open a part, to see more)
  const { tree } = stage;
  const readable = stage.data.presenter ? 16 : 12;
  let fallback = null;
  for (let d = tree.maxDepth + 1; d >= 0; d--) {
    const open = new Set([...tree.groups.keys()].filter((e) => tree.depth.get(e) < d));
    if (d > 0 && drawnCount(stage, open) > MAX_DRAWN) continue;
    stage.open = open;
    const best = bestLayout(stage);
    if (best.smallest >= readable - 0.01) { stage.chosenOpen = new Set(open); return; }
    if (!fallback || best.smallest > fallback.best.smallest + 0.01) fallback = { open, best };
  }
  stage.open = fallback.open;
  stage.chosenOpen = new Set(fallback.open);
  placeBoxes(stage);
}

function toggleGroup(stage, element) {
  // a click, Enter or Space on a part opens it in place, or folds it (with the parts inside it) again
  if (stage.open.has(element)) {
    stage.open.delete(element);
    for (const e of [...stage.open]) if (ancestorsOf(stage, { group: e }).includes(element)) stage.open.delete(e);
  } else {
    stage.open.add(element);
  }
  stage.chosenOpen = new Set(stage.open);
  redraw(stage);
}

function redraw(stage) {
  // the view as the groups are open now: laid out once (kept), drawn at the current event
  installLayout(stage, bestLayout(stage));
  stage.stops = stopsOf(stage);
  placeReadable(stage);
  drawParts(stage);
  show(stage, stage.index, false, 800, false);
}

function drawParts(stage) {
  // the parts drawn now, as buttons: the keyboard's (and a screen reader's) way to open and fold them
  const list = stage.root.querySelector(".stage-parts");
  if (!list) return;
  const shown = new Set(stage.boxOf.values());
  const framed = (g) => stage.open.has(g.element) && ancestorsOf(stage, { group: g.parent }).every((e) => stage.open.has(e));
  const buttons = stage.data.groups.filter((g) => shown.has(g.element) || framed(g)).map((g) => {
      const opened = stage.open.has(g.element);
      const b = element("button", "stage-part", `${opened ? "▾" : "▸"} ${g.name}`);
      b.type = "button";
      b.setAttribute("aria-expanded", String(opened));
      b.setAttribute("aria-label", `${g.name}: ${g.summary}. ${opened ? "Fold it into one box" : "Open it in place"}`);
      b.onclick = () => toggleGroup(stage, g.element);
      return b;
    });
  list.hidden = !buttons.length;
  list.querySelector(".stage-parts-list").replaceChildren(...buttons);
}

function placeReadable(stage) {
  // fitted, with the zoom buttons' corner kept clear; if that left the detail line under readable size, the layout
  // without it is drawn instead
  place(stage, null);
  const readable = stage.data.presenter ? 16 : 12, drawn = stage.layout;
  if (drawn && drawn.detail && drawn.compact && stage.scale * drawn.font < readable - 0.01) {
    installLayout(stage, drawn.compact);
    place(stage, null);
  }
}

function installLayout(stage, best) {
  const box = stage.root.querySelector(".stage-svg");
  const readable = stage.data.presenter ? 16 : 12;
  const svg = document.importNode(best.svg, true);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("aria-hidden", "true");
  svg.querySelectorAll("title").forEach((t) => t.remove());  // Graphviz's ids, not words for a person
  box.replaceChildren(svg);
  stage.svg = svg;
  stage.layout = best;
  stage.wrapWidth = best.wrapWidth;  // the gradient lines are rewritten at the width they were laid out with
  stage.badgeView = null;
  stage.natural = { w: best.w, h: best.h };
  stage.readableScale = readable / best.font;  // the scale at which its smallest text is just readable
  stage.root.classList.toggle("no-detail", !best.detail);
  stage.nodes = new Map();
  stage.edges = new Map();
  stage.gradText = new Map();
  stage.labelText = new Map();
  svg.querySelectorAll("g.node").forEach((g) => stage.nodes.set(g.id, g));
  svg.querySelectorAll("g.edge").forEach((g) => stage.edges.set(g.id, g));
  stage.nodes.forEach((g, id) => {
    // a node's lines: its title, its value, its gradient, its detail; a group's: its name, its size, its output's
    // value and gradient. The gradient's lines are rewritten as the replay goes
    const rows = labelRows(stage, id);
    const texts = [...g.querySelectorAll("text")];
    const from = rows.findIndex((r) => r[3] === "grad"), count = rows.filter((r) => r[3] === "grad").length;
    if (from >= 0 && texts.length >= from + count) stage.gradText.set(id, texts.slice(from, from + count).map((t) => centred(g, t)));
    if (isGroup(id)) g.classList.add("group");
  });
  svg.querySelectorAll("g.cluster").forEach((g) => g.classList.add("part"));
  const tracked = new Map([...placeBoxesEdges(stage)]);
  stage.edges.forEach((g, id) => {
    const labels = [...g.querySelectorAll("text")];
    if (labels.length) stage.labelText.set(id, labels.map((t) => centred(g, t)));
    if (tracked.get(id) === false) g.classList.add("untracked");
  });
}

function placeBoxesEdges(stage) {
  // each drawn edge's element -> whether a gradient can flow along it
  const out = new Map();
  for (const edge of stage.data.edges) {
    const shown = stage.edgeShown.get(edge.element);
    if (shown) out.set(shown, (out.get(shown) || false) || edge.tracked);
  }
  return out;
}

// -- the picture ------------------------------------------------------------------------------------------------

async function layout(stage, loadGraphviz) {
  // Graphviz once; then the view that opens whole and readable (chooseView), laid out and drawn
  drawLegend(stage);  // first: the box's size is what the legend leaves
  const graphviz = await loadGraphviz();
  if (stage.disposed) return false;  // unmounted meanwhile: nothing to lay out
  stage.graphviz = graphviz;
  const start = performance.now();
  chooseView(stage);
  const readable = stage.data.presenter ? 16 : 12;
  if (bestLayout(stage).smallest < readable - 0.01 && !stage.root.classList.contains("stacked")
      && !stage.root.classList.contains("alone") && window.innerWidth >= NARROW) {
    // too small beside the panel: the panel goes below and the graph takes the width, if that reads larger
    const before = { open: stage.open, best: bestLayout(stage) };
    stage.stackForReading = true;
    fitHeight(stage);
    stage.layouts.clear();
    chooseView(stage);
    if (bestLayout(stage).smallest <= before.best.smallest + 0.01) {
      stage.stackForReading = false;
      fitHeight(stage);
      stage.layouts.clear();
      stage.open = before.open;
    }
  }
  installLayout(stage, bestLayout(stage));
  stage.root.dataset.layoutMs = (performance.now() - start).toFixed(1);  // what choosing and laying out the view took
  stage.stops = stopsOf(stage);
  drawParts(stage);
  watchTable(stage);
  return true;
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
  const narrow = window.innerWidth < NARROW;
  const height = narrow ? Infinity : stage.replay ? Math.max(box.clientHeight, 200) : stage.maxStatic;
  return Math.min(width / w, height / h);
}

function clearOfZoom(stage, box, fit) {
  // the zoom buttons sit in the box's top right corner, over the graph: no node may be under them. The graph is
  // centred, so a smaller scale moves every node of that corner away from it: the largest clear scale is found
  // by halving the interval
  const zoom = stage.root.querySelector(".stage-zoom");
  if (window.innerWidth < NARROW || getComputedStyle(zoom).position !== "absolute") return fit;
  const { w, h } = stage.natural;
  const width = Math.max(box.clientWidth, 200);
  const height = stage.replay ? Math.max(box.clientHeight, 200) : stage.maxStatic;
  const boxes = nodeBoxes(stage);
  const clear = (s) => {
    const left = (width - w * s) / 2, top = (height - h * s) / 2;
    return boxes.every((n) => left + n.right * s <= width - zoom.offsetWidth || top + n.top * s >= zoom.offsetHeight);
  };
  if (clear(fit)) return fit;
  let [low, high] = [0, fit];
  for (let k = 0; k < 16; k++) {
    const mid = (low + high) / 2;
    if (clear(mid)) low = mid; else high = mid;
  }
  return Math.max(low, fit / 4);
}

function nodeBoxes(stage) {
  // each node's right edge and top in the graph's own units, from its top left corner
  const svg = stage.svg.getBoundingClientRect();
  const unit = svg.width / stage.natural.w;
  if (!unit) return [];  // not laid out on the page yet: placed again once it is
  return [...stage.svg.querySelectorAll("g.node")].map((g) => {
    const r = g.getBoundingClientRect();
    return { right: (r.right - svg.left) / unit, top: (r.top - svg.top) / unit };
  });
}

function place(stage, scale) {
  // `scale` null: the whole graph fits its box (a small one drawn larger, up to MAX_SCALE); else that zoom, the
  // box scrolling to show the rest and keeping the running node in view
  if (!stage.svg) return;
  const box = stage.root.querySelector(".stage-svg");
  const { w, h } = stage.natural;
  const fit = clearOfZoom(stage, box, Math.min(fitScale(stage, box, w, h), MAX_SCALE));
  stage.fit = fit;
  stage.fitted = scale === null || scale <= fit + 1e-6;
  stage.scale = stage.fitted ? fit : Math.min(scale, Math.max(MAX_ZOOM, fit));
  stage.svg.style.width = `${w * stage.scale}px`;
  stage.svg.style.height = `${h * stage.scale}px`;
  if (!stage.replay || window.innerWidth < NARROW) {
    box.style.height = `${Math.min(h * stage.scale, window.innerWidth < NARROW && stage.fitted ? Infinity : Math.max(h * fit, stage.maxStatic))}px`;
  }
  box.classList.toggle("zoomed", !stage.fitted);
  stage.root.querySelector("[data-act='fit']").setAttribute("aria-pressed", String(stage.fitted));
  const percent = `${Math.round(stage.scale * 100)}%`;
  stage.root.querySelector(".stage-zoom").setAttribute("aria-label", `Zoom: ${stage.fitted ? "whole graph, " : ""}${percent}`);
  const focus = stage.current && stage.nodes.get(stage.boxOf.get(stage.current));
  if (focus) reveal(stage, focus, false);
}

function zoomLevels(stage) {
  // from the whole graph, one press reaches readable text; then larger by a quarter each time
  const levels = [stage.fit];
  let s = Math.max(stage.readableScale, stage.fit * 1.25);
  while (s <= MAX_ZOOM + 1e-6) { levels.push(s); s *= 1.25; }
  return levels;
}

function zoomStep(stage, direction) {
  if (!stage.svg) return;
  const levels = zoomLevels(stage);
  const target = direction > 0 ? levels.find((s) => s > stage.scale + 1e-3) : [...levels].reverse().find((s) => s < stage.scale - 1e-3);
  if (target !== undefined) zoomTo(stage, target);
}

function zoomTo(stage, scale, around) {
  const box = stage.root.querySelector(".stage-svg");
  const b = box.getBoundingClientRect();
  // keep the point under the pointer (or the box's centre) where it is
  const px = around ? around.clientX - b.left : b.width / 2, py = around ? around.clientY - b.top : b.height / 2;
  const fx = (box.scrollLeft + px) / Math.max(1, box.scrollWidth), fy = (box.scrollTop + py) / Math.max(1, box.scrollHeight);
  place(stage, Math.max(scale, 0));
  if (!stage.fitted && !around && stage.current) return;  // place() brought the running node into view
  box.scrollLeft = fx * box.scrollWidth - px;
  box.scrollTop = fy * box.scrollHeight - py;
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
  const top = !header || getComputedStyle(header).display === "none" ? 0 : Math.max(0, header.getBoundingClientRect().bottom);
  const bar = stickyBar();  // a bar the page keeps above the stage takes its room too
  return bar ? top + bar.offsetHeight : top;
}

function stickyBar() {
  // the page's bar that stays above the stage while it scrolls (a class's teacher controls on a projector)
  const bar = document.querySelector(".st-key-stage_bar");
  return bar && getComputedStyle(bar).position === "sticky" ? bar : null;
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
  const svgBox = root.querySelector(".stage-svg");
  const stacked = window.innerWidth >= NARROW && !root.classList.contains("alone")
    && (root.clientWidth < STACK || stage.stackForReading);
  root.classList.toggle("stacked", stacked);
  root.classList.toggle("slim", root.clientWidth < NARROW);  // a phone's width in a wider window: zoom goes under
  svgBox.style.height = "";
  if (stacked && stage.replay) {  // the graph and the player below it fill one screen (the rest of the first)
    root.style.height = "";
    const player = root.querySelector(".stage-player");
    const below = (player ? player.offsetHeight : 0) + 16;
    svgBox.style.height = `${Math.max(300, screenRoom(stage) - below)}px`;
    return;
  }
  if (!stage.replay || window.innerWidth < NARROW) { root.style.height = ""; return; }
  if (stage.data.embed) { root.style.height = `${Math.max(360, window.innerHeight - 16)}px`; return; }
  if (stage.data.presenter) {  // one screen: brought up under the toolbar when drawn (bringIntoView)
    // below the toolbar (brought up there when drawn); under a page's bar above the stage, from where the stage
    // starts when that is lower on screen (the bar's page is not scrolled: its stage fits the rest of the screen)
    const top = root.getBoundingClientRect().top, under = headerBottom();
    const from = stickyBar() && top > under && top < window.innerHeight / 2 ? top : under;
    root.style.height = `${Math.max(300, window.innerHeight - from - 16)}px`;
    return;
  }
  root.style.height = `${Math.max(420, screenRoom(stage))}px`;
}

function pageTop(root) {
  // where the stage starts on its page, wherever the page is scrolled to
  const scroller = scrollerOf(root.parentElement || root.getRootNode().host);
  return root.getBoundingClientRect().top + (scroller ? scroller.scrollTop : window.scrollY)
    - (scroller ? scroller.getBoundingClientRect().top : 0);
}

function screenRoom(stage) {
  // a stage that starts in the first screen fills the rest of it; one further down fills a screen of its own
  const top = pageTop(stage.root);
  return top < window.innerHeight / 2 ? window.innerHeight - Math.max(top, 0) - 16
    : window.innerHeight - headerBottom() - 24;
}

// -- what the recorded backward looks like after event i ---------------------------------------------------------

function emptyFrame() {
  return { started: new Set(), swept: new Set(), recomputed: new Set(), container: new Map(), received: new Map(),
    sent: new Map(), onTape: null, current: null, currentAt: -1, flows: [], upstream: null, finished: false };
}

function advance(f, e, k) {
  if (e.kind === "TapeBuilt") {
    f.onTape = new Set(e.nodes);
  } else if (e.kind === "StepStarted") {
    f.current = e; f.currentAt = k; f.flows = []; f.recomputed.clear();
    f.upstream = f.container.has(e.node) ? f.container.get(e.node).total : null;
    f.started.add(e.node);
  } else if (e.kind === "Recomputed") {
    f.recomputed.add(e.node);
  } else if (e.kind === "GradientRegistered") {
    f.container.set(e.node, e);
    f.received.set(e.node, e.total);
    if (f.current && e.source === f.current.node) f.flows.push(e);
    if (e.edge) f.sent.set(e.edge, e.value);
  } else if (e.kind === "GradientConsumed") {
    if (!e.kept) f.container.delete(e.node);
  } else if (FINISH.has(e.kind)) {
    if (e.kind === "BackwardFinished") f.finished = true;
    f.current = null; f.currentAt = -1; f.flows = []; f.recomputed.clear();
    if (e.kind === "SweepFreed") e.nodes.forEach((n) => f.swept.add(n));
  }
}

function frameOf(stage, index) {
  // the frame at `index`, moved on from the last one shown when stepping forward (a press is then a few events'
  // work, not the whole trace's), else replayed from the start
  const last = stage.lastFrame;
  if (!last || last.data !== stage.data || last.index > index) {
    stage.lastFrame = { data: stage.data, index, state: frame(stage.data, index) };
    return stage.lastFrame.state;
  }
  for (let k = last.index + 1; k <= index && k < stage.data.events.length; k++) advance(last.state, stage.data.events[k], k);
  last.index = index;
  return last.state;
}

function frame(data, index) {
  const f = emptyFrame();
  for (let k = 0; k <= index && k < data.events.length; k++) advance(f, data.events[k], k);
  return f;
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
  // a class's leaf question asks what a leaf gets from the whole backward: its stage says a leaf is not reached
  // once the backward has finished, not from the tape at step 0, where it would answer the question
  const told = !data.classroom || state.finished;
  if (told && state.onTape && !state.onTape.has(id) && !got) return { state: "unreached", grad: words.unreached };
  if (state.started.has(id)) {
    const leaf = node.grad_kind === "leaf";
    return { state: leaf ? "leaf" : "consumed", grad: got ? `grad ${got} · ${leaf ? "kept" : "consumed"}` : node.grad };
  }
  return { state: node.state, grad: got ? `grad ${got}` : words.none_yet };
}

function show(stage, index, animate, period = 800, report = true) {
  if (report && roomHolds(stage, index)) return;
  const { data, root } = stage;
  stage.index = index;
  const state = stage.replay ? frameOf(stage, index) : null;
  if (stage.follow && stage.svg && state) followStep(stage, state);
  stage.current = state && state.current ? state.current.node : null;
  stage.views = new Map(data.nodes.map((node) => [node.element, nodeView(data, node, state)]));
  if (stage.replay) {
    const at = stopAt(stage, index), onStop = stage.stops[at] === index;
    const scrub = root.querySelector(".stage-scrub");
    scrub.max = String(stage.stops.length);
    scrub.value = String(Math.max(1, at + 1));
    const run = runningPart(stage, state);
    const part = run ? ` (${run.group.name}: ${run.run.steps} step${run.run.steps === 1 ? "" : "s"} at once)` : "";
    const position = !stage.byStep || !onStop ? `event ${index + 1} of ${data.events.length}`
      : `step ${at} of ${stage.stops.length - 1}${part}`;
    scrub.setAttribute("aria-valuetext", position);
    scrub.setAttribute("aria-label", stage.byStep ? "Step" : "Event");
    root.querySelector(".stage-caption").textContent = `${position[0].toUpperCase()}${position.slice(1)}. ${narration(stage, index, state)}`;
    drawStep(stage, state);
    drawContainer(stage, state);
    lightLines(stage, state);
  }
  if (stage.svg) drawPicture(stage, state, animate, period);
  fillTable(stage);
  clearTimeout(stage.reportTimer);  // tell Python once stepping stops: links and exercises follow
  if (report && stage.replay) stage.reportTimer = setTimeout(() => stage.setStateValue("event", index), 700);
  if (report && stage.data.classroom && stage.data.classroom.role === "teacher") sendStep(stage, index);
  if (stage.room && stage.svg) drawTally(stage);
}

function runningPart(stage, state) {
  // the folded part whose steps this press runs, and that run of its steps (groups.py added them up), if any
  if (!state || !state.current) return null;
  const box = stage.boxOf.get(state.current.node);
  if (!box || !isGroup(box)) return null;
  const group = stage.tree.groups.get(box);
  const run = group.runs.find((r) => r.first <= state.currentAt && state.currentAt <= r.last);
  return run && run.steps > 1 ? { group, run } : null;  // one step alone is told as a step, with its chain rule
}

function followStep(stage, state) {
  // "follow the step": the parts around the running step are opened while it runs, and folded back after
  const want = new Set(stage.chosenOpen);
  if (state.current) ancestorsOf(stage, stage.tree.byId.get(state.current.node)).forEach((e) => want.add(e));
  if (want.size === stage.open.size && [...want].every((e) => stage.open.has(e))) return;
  stage.open = want;
  installLayout(stage, bestLayout(stage));
  place(stage, null);
  drawParts(stage);
}

function flowList(flows) {
  return flows.map((f) => `${f.value} to ${f.name}`).join(", ");
}

function narration(stage, index, state) {
  // a press on a step says the step in one sentence: what it sent where, and what became of its gradient (the
  // card beside it has the arithmetic); between steps, every event's own sentence
  const { data } = stage;
  const { events } = data;
  if (!stage.byStep) return events[index].text;
  const group = events.slice(groupStart(events, index), index + 1);
  const q = question(stage, index);
  if (q && !stage.answers.has(q.key)) return `${events[index].text} What will it send to each input? Predict it beside the graph.`;
  const step = group.find((e) => e.kind === "StepStarted");
  if (!step) return group.map((e) => e.text).join(" ");
  const running = runningPart(stage, state);
  if (running) {
    const { group: part, run } = running;
    const came = run.came_in.map((f) => `${f.value} at ${f.name}`).join(", ");
    return `${run.steps} step${run.steps === 1 ? "" : "s"} of ${part.name} run at once (it is folded: open it to see each).`
      + (came ? ` Into it came ${came}.` : "") + (run.sent.length ? ` It sends ${flowList(run.sent)}.` : " It sends nothing out of itself.");
  }
  const name = nameOf(data, step.node);
  const sends = group.filter((e) => e.kind === "GradientRegistered" && e.source === step.node)
    .map((e) => `${e.value} to ${nameOf(data, e.node)}${e.accumulated ? ` (added: now ${e.total})` : ""}`);
  const recomputed = group.filter((e) => e.kind === "Recomputed").length;
  const consumed = group.find((e) => e.kind === "GradientConsumed");
  const parts = [`The step of ${name} runs (${step.op}, order ${step.order}).`];
  if (recomputed) parts.push(`Checkpointing recomputes ${recomputed} value${recomputed > 1 ? "s" : ""} it needs first.`);
  if (sends.length) parts.push(`It sends ${sends.join(", ")}.`);
  if (consumed) parts.push(consumed.kept ? `${name} is a leaf that asked for its gradient: the container keeps it.`
    : "Its gradient is consumed: the entry leaves the container.");
  return parts.join(" ");
}

function drawPicture(stage, state, animate, period) {
  const { data, svg } = stage;
  const running = state && state.current ? stage.boxOf.get(state.current.node) : null;
  stage.nodes.forEach((g, id) => {
    const part = isGroup(id) ? stage.tree.groups.get(id) : null;
    // a folded part says its output's gradient; it is drawn as a part, or as running while its steps run
    const view = part ? stage.views.get(stage.tree.byId.get(part.output).element) : stage.views.get(id);
    const recomputed = part && state && [...state.recomputed].some((n) => stage.boxOf.get(n) === id);
    const look = part ? (recomputed ? "recomputed" : running === id ? "current" : "group") : view.state;
    const selected = stage.selected && stage.selected.includes(id);
    g.setAttribute("class", `node s-${look}${part ? " group" : ""}${selected ? " selected" : ""}`);
    const texts = stage.gradText.get(id);
    if (texts) fillLines(texts, wrap(part ? summarised(view.grad) : view.grad, stage.wrapWidth));
  });
  svg.querySelectorAll(".flow-dot").forEach((el) => el.remove());
  const sent = new Map();  // each drawn edge -> the last value sent along it (an edge into a folded part too)
  if (state) state.sent.forEach((value, edge) => { if (stage.edgeShown.has(edge)) sent.set(stage.edgeShown.get(edge), value); });
  stage.edges.forEach((g, id) => {
    g.classList.remove("flow", "sent");
    const labels = stage.labelText.get(id);
    const value = sent.get(id);
    if (labels) fillLines(labels, value ? wrap(summarised(value), labelWidth(stage)) : []);
    if (value) g.classList.add("sent");
  });
  if (!state) return;
  const focus = state.current ? stage.nodes.get(stage.boxOf.get(state.current.node)) : null;
  for (const flow of state.flows) {
    const edge = flow.edge && stage.edges.get(stage.edgeShown.get(flow.edge));
    if (!edge) continue;
    edge.classList.add("flow");
    const path = edge.querySelector("path");
    if (path && animate && !stage.reduceMotion) travel(stage, edge, path, flow.value, Math.min(period * 0.7, 900));
  }
  if (focus) reveal(stage, focus, true);
}

function reveal(stage, g, smooth) {
  // zoomed in, the box scrolls so that the running step is in view
  const box = stage.root.querySelector(".stage-svg");
  if (stage.fitted) return;
  const r = g.getBoundingClientRect(), b = box.getBoundingClientRect();
  if (r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom) return;
  box.scrollTo({
    left: box.scrollLeft + r.left - b.left - (b.width - r.width) / 2,
    top: box.scrollTop + r.top - b.top - (b.height - r.height) / 2,
    behavior: smooth && !stage.reduceMotion ? "smooth" : "auto",
  });
}

function travel(stage, edge, path, value, duration) {
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
  const next = () => {  // a frame the stage's cleanup cancels
    const id = requestAnimationFrame((now) => { stage.frames.delete(id); step(now); });
    stage.frames.add(id);
  };
  const step = (now) => {
    const t = Math.min(1, (now - start) / duration);
    const point = path.getPointAtLength(length * (1 - t));  // edges point input -> node: walk back
    dot.setAttribute("transform", `translate(${point.x} ${point.y})`);
    if (t < 1 && dot.isConnected) next();
    else dot.remove();
  };
  next();
}

function selectNodes(stage, elements, fromGraph, line) {
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

function lightLines(stage, state) {
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
    if (pre.scrollHeight > pre.clientHeight + 1) {
      const r = lit.getBoundingClientRect(), b = pre.getBoundingClientRect();
      if (r.top < b.top || r.bottom > b.bottom) pre.scrollTop += r.top - b.top - b.height / 3;
    }
  }
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

const nodeIndex = new WeakMap();  // each payload's nodes by NodeId, made once: a 5,000-node replay looks up often

function nodeById(data, id) {
  let index = nodeIndex.get(data.nodes);
  if (!index) nodeIndex.set(data.nodes, (index = new Map(data.nodes.map((n) => [n.id, n]))));
  return index.get(id);
}

function nameOf(data, id) {
  const node = nodeById(data, id);
  return node ? node.name : `NodeId(${id})`;
}

function drawStep(stage, state) {
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
      for (const n of leaves) parts.push(sumLine(data, data.sums[n.id]));
    }
    return box.replaceChildren(...parts);
  }
  const running = runningPart(stage, state);
  if (running) return box.replaceChildren(...partCard(stage, running));
  const card = data.cards[state.currentAt];
  const q = question(stage, state.currentAt);
  const upstream = card ? card.upstream : state.upstream ?? "—";
  const head = element("p", "stage-note");
  head.append(strong(card ? card.title : nameOf(data, step.node)), ` received the gradient ${upstream}.`);
  const parts = [head];
  const sum = data.sums[step.node];
  if (sum && sum.terms.length > 1) parts.push(element("p", "stage-note", "Its paths met: the gradients sent along them add up."), sumLine(data, sum));
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
    parts.push(cardInput(data, step, k, card, flow));
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
    run.came_in.forEach((f) => list.append(element("li", "", `${f.value} at ${f.name}`)));
    parts.push(list);
  }
  if (run.sent.length) {
    parts.push(element("p", "stage-note", "It sent out of itself, added up over these steps:"));
    for (const f of run.sent) {
      const row = element("div", "card-input");
      const to = element("p", "card-to");
      to.append("to ", strong(f.name), ": ");
      row.append(to, element("p", "card-math", f.value));
      parts.push(row);
    }
  } else {
    parts.push(element("p", "stage-note", "It sent nothing out of itself in these steps: its gradients stay inside it for now."));
  }
  parts.push(element("p", "stage-note", "Open it (click it, or its button under the graph) to see each step's chain rule."));
  return parts;
}

function strong(text) {
  return element("strong", "", text);
}

function cardInput(data, step, k, card, flow) {
  const input = card ? card.inputs[k] : null;
  const row = element("div", "card-input");
  const head = element("p", "card-to");
  head.append("to ", strong(input ? input.input : nameOf(data, step.parents[k])), ": ");
  if (input && input.derivative) {  // `∂(x·3)/∂x = 3`, not `= 3 = 3`
    const known = input.derivative.endsWith(` = ${input.derivative_value}`) || !input.derivative_value;
    head.append(known ? input.derivative : `${input.derivative} = ${input.derivative_value}`);
  }
  else head.append(`rule ${input ? input.rule : step.rules[k]}`);
  row.append(head);
  if (input) row.append(element("p", "card-math", input.product));
  const status = flow ? `sent ${flow.value}: ${flow.accumulated ? "added to its entry" : "a new entry in the container"}` : "not sent yet";
  row.append(element("p", `card-status${flow ? "" : " waiting"}`, status));
  return row;
}

function sumLine(data, sum) {
  const p = element("p", "card-sum");
  p.append(strong(`${nameOf(data, sum.node)}: `), element("span", "card-sum-text", sum.text));
  const list = element("ul", "card-paths");
  sum.terms.forEach((term) => list.append(element("li", "", `${term.value} ${term.path}`)));
  const wrap = element("div", "card-sum-box");
  wrap.append(p);
  if (sum.terms.length > 1) wrap.append(list);
  return wrap;
}

function verdictLine(answer) {
  if (!answer) return element("p", "stage-note", "");
  if (answer.right === null) return element("p", "card-verdict revealed", "Revealed without an answer (not scored).");
  return element("p", `card-verdict ${answer.right ? "right" : "wrong"}`,
    answer.right ? "Right: every value matches." : `Not quite: you entered ${answer.typed}. The chain rule, worked out:`);
}

function askForm(stage, q, card) {
  // the prediction, asked in the stage at the step: the local rule stays hidden until it is answered
  const form = element("form", "stage-ask");
  form.append(element("p", "stage-note", "Predict what this step sends to each input (numbers separated by commas), then check."));
  const inputs = q.step.parents.map((parent, k) => {
    const label = element("label", "stage-ask-row");
    const name = card ? card.inputs[k].input : nameOf(stage.data, parent);
    label.append(element("span", "", `To ${name}${q.step.parents.length > 1 ? ` (input ${k + 1})` : ""}`));
    const input = element("input", "stage-answer");
    input.type = "text";
    input.maxLength = 2000;
    input.placeholder = "e.g. 1.0, 2.0";
    input.autocomplete = "off";
    input.setAttribute("aria-label", `What this step sends to ${name}${q.step.parents.length > 1 ? `, input ${k + 1}` : ""}`);
    label.append(input);
    form.append(label);
    return input;
  });
  const row = element("div", "stage-ask-buttons");
  const check = element("button", "", "Check my prediction");
  check.type = "submit";
  const reveal = element("button", "", "Reveal without answering");
  reveal.type = "button";
  const note = element("p", "stage-note stage-ask-note");
  note.setAttribute("role", "status");
  row.append(check, reveal);
  form.append(row, note);
  form.onsubmit = (event) => {
    event.preventDefault();
    const answers = inputs.map((input) => parseNumbers(input.value));
    if (answers.some((a) => a === null)) {
      note.textContent = "Enter numbers separated by commas for every input, as many as it has values (e.g. 1.0, 2.0); or reveal the answer without scoring.";
      return;
    }
    const [rtol, atol] = stage.data.tolerance;
    const right = q.sent.every((sent, k) => close(sent.numbers, answers[k], rtol, atol));
    answer(stage, q, right, inputs.map((input) => input.value.trim().slice(0, 80)).join("; "));
  };
  reveal.onclick = () => answer(stage, q, null, "");
  later(stage, () => { if (inputs[0].isConnected) inputs[0].focus({ preventScroll: true }); }, 0);
  return form;
}

function parseNumbers(text) {
  if (text.length > 2000) return null;
  const parts = text.replace(/[[\],]/g, " ").split(/\s+/).filter(Boolean);
  if (!parts.length) return null;
  const values = parts.map(Number);
  return values.some((v) => Number.isNaN(v)) ? null : values;
}

function close(expected, given, rtol, atol) {
  return expected.length === given.length && expected.every((e, k) => Math.abs(given[k] - e) <= atol + rtol * Math.abs(e));
}

function answer(stage, q, right, typed) {
  // scored once per question in Python (the session's score); the step then runs: its sends are revealed. Every
  // verdict so far is reported, not the last one: a host may read only the newest value of quick reports
  stage.answers.set(q.key, { right, typed });
  stage.setStateValue("answers", Object.fromEntries([...stage.answers].map(([key, given]) => [key, given.right])));
  const at = stopAt(stage, q.start);
  const next = stage.byStep ? stage.stops[Math.min(at + 1, stage.stops.length - 1)] : q.start;
  show(stage, next, !stage.reduceMotion, 800, true);
  const focus = stage.root.querySelector(".card-verdict") || stage.root.querySelector(".stage-step");
  if (focus) { focus.tabIndex = -1; focus.focus({ preventScroll: true }); }
}

const CONTAINER_COLUMNS = ["Node", "Gradient", "Shape", "Entry"];

function drawContainer(stage, state) {
  // the container's entries as a table (rows of a grid, with the table's roles): a row off screen is not laid out
  // (`content-visibility`), and the rows are updated in place, so a long container steps as fast as a short one
  const { data, root } = stage;
  const box = root.querySelector(".stage-container");
  if (!state.container.size) return box.replaceChildren(element("p", "stage-note", "The container is empty."));
  const rows = [...state.container.entries()].sort((a, b) => a[0] - b[0]).map(([node, entry]) => {
    const kind = nodeById(data, node);
    const leaf = kind && kind.grad_kind === "leaf";
    const waiting = !state.started.has(node);
    return [nameOf(data, node), entry.total_full, entry.shape,
      leaf ? "kept: a leaf that asked for its gradient" : waiting ? "waiting for its step" : "its step is running"];
  });
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

function drawLegend(stage) {
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

// -- the picture as a file: SVG with its colours written in, or PNG at twice its size -------------------------

const PAINT = ["fill", "stroke", "stroke-width", "stroke-dasharray", "font-size", "font-family", "font-weight", "opacity"];

function standaloneSvg(stage) {
  const clone = stage.svg.cloneNode(true);
  const originals = [stage.svg, ...stage.svg.querySelectorAll("*")];
  [clone, ...clone.querySelectorAll("*")].forEach((el, k) => {
    const style = getComputedStyle(originals[k]);
    el.setAttribute("style", PAINT.map((p) => `${p}:${style.getPropertyValue(p)}`).join(";"));
  });
  clone.querySelectorAll(".flow-dot").forEach((el) => el.remove());
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
  return `graph${position}.${extension}`;
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

function saveSvg(stage) {
  if (stage.svg) download(fileName(stage, "svg"), new Blob([standaloneSvg(stage)], { type: "image/svg+xml" }));
}

function savePng(stage) {
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

// -- class mode: the room's step and answers, long-polled from the push route beside the app ---------------------

function classPanel(data) {
  const link = data.classroom;
  const panel = element("div", `stage-class ${link.role}`);
  if (link.join) panel.append(element("p", "class-join", link.join));  // in view whenever the stage is
  const status = element("p", "class-status", link.role === "teacher" ? "Connecting to your class…" : "Connecting to the class…");
  status.setAttribute("role", "status");
  panel.append(status);
  if (link.role === "teacher") {
    const tally = element("div", "class-tally");
    tally.setAttribute("aria-live", "polite");
    panel.append(tally);
    if (!data.presenter) {  // the teacher's own screen: who is right before the reveal, folded; a projector's has none
      const own = element("details", "class-own");
      own.append(element("summary", "", "Only on your screen: who is right"), element("div", "class-own-tally"));
      own.hidden = true;
      panel.append(own);
    }
    panel.append(element("p", "class-countdown"));
  } else {
    const question = element("section", "class-question");
    question.setAttribute("aria-label", "Your teacher's question");
    panel.append(question);
  }
  return panel;
}

function roomUrl(stage, route, since) {
  const link = stage.data.classroom;
  const url = new URL(`${link.api}${route}`, document.baseURI);
  url.searchParams.set("room", link.room);
  if (since) url.searchParams.set("since", since);
  if (link.role === "student" && route === "follow") url.searchParams.set("have", String(stage.whole));
  // who is right before the reveal is asked for by the teacher's own screen only: a projector's page never holds it
  if (route === "watch" && !stage.data.presenter) url.searchParams.set("graded", "1");
  return url.href;
}

function roomHeaders(link) {
  return { [link.role === "teacher" ? "X-Class-Teacher" : "X-Class-Seat"]: link.secret };
}

function pauseFor(stage, ms) {
  return new Promise((resolve) => later(stage, resolve, ms));
}

function classStatus(stage, text) {
  const status = stage.root.querySelector(".class-status");
  if (status && status.textContent !== text) status.textContent = text;
}

async function joinRoom(stage) {
  // one request at a time, each answered when the room changes (or after 20 s, empty); a failed request (a
  // replica that stopped) is tried again, less and less often, until the room answers or the stage leaves
  const link = stage.data.classroom;
  const route = link.role === "teacher" ? "watch" : "follow";
  let since = "", failures = 0;
  while (!stage.disposed) {
    try {
      const response = await fetch(roomUrl(stage, route, since), { headers: roomHeaders(link), cache: "no-store", signal: stage.listeners.signal });
      if (response.status === 204) continue;
      const body = await response.json();
      if (!response.ok) {
        classStatus(stage, body.error || "The class did not answer.");
        if (response.status === 403 || response.status === 404) return stage.setStateValue("room", "ended");
        await pauseFor(stage, 2000);
        continue;
      }
      failures = 0;
      since = body.since;
      stage.room = body;
      (link.role === "teacher" ? teacherSees : studentSees)(stage, body);
    } catch (error) {
      if (stage.disposed) return;
      failures += 1;
      classStatus(stage, "The connection to the class dropped; reconnecting…");
      await pauseFor(stage, Math.min(500 * 2 ** failures, 4000));
    }
  }
}

function roomHolds(stage, index) {
  // a teacher's press past the asked event while its question waits for the reveal would show every stage the
  // answer: refused here (and by the server), in a sentence
  const link = stage.data.classroom, q = stage.room && stage.room.question;
  if (!link || link.role !== "teacher" || !q || q.phase === "revealed" || index <= q.step) return false;
  pause(stage);
  const scrub = stage.root.querySelector(".stage-scrub");
  if (scrub) scrub.value = String(Math.max(1, stopAt(stage, stage.index) + 1));
  classStatus(stage, "A question is open on this step: running it would show the room the answer. Reveal the answer first, then step on.");
  return true;
}

const STUDENT_PHASE_WORDS = {  // said in the stage's status (a live region); the question's box says the rest
  vote1: "Your teacher asked a question: answer it in the question box. ",
  discuss: "Vote 1 is closed: discuss with your neighbours. ",
  vote2: "Vote 2 is open: answer again in the question box. ",
  revealed: "The answer is revealed in the question box. ",
};

/** @param {RevealedEvents|null} revealed */
function fillIn(stage, revealed) {
  // the events the room reached, whole: the stage held them without their words and numbers until now
  if (!revealed || revealed.start > stage.whole) return;
  const { data } = stage;
  revealed.events.forEach((e, k) => { data.events[revealed.start + k] = e; });
  Object.assign(data.cards, revealed.cards);
  Object.assign(data.sums, revealed.sums);
  revealed.runs.forEach((runs, g) => runs.forEach((run, r) => Object.assign(data.groups[g].runs[r], run)));
  stage.whole = Math.max(stage.whole, revealed.start + revealed.events.length);
  stage.lastFrame = null;  // frames are worked out again from the whole events
}

function studentSees(stage, body) {
  fillIn(stage, body.events);
  const last = stage.data.events.length - 1;
  const index = Math.max(0, Math.min(body.step, last));
  if (index !== stage.index) show(stage, index, index === stage.index + 1 || stage.stops.includes(index), 800, false);
  const q = body.question;
  const asked = q ? STUDENT_PHASE_WORDS[q.phase] : "";
  classStatus(stage, `${asked}Following the teacher: ${stage.root.querySelector(".stage-scrub").getAttribute("aria-valuetext")}.`);
  drawQuestion(stage, body);
}

function drawQuestion(stage, body) {
  // the question, its answer form, the receipt, the countdown and, once revealed, this student's result: drawn
  // here from the room's answer, so a class event reruns no page; the form is drawn anew only when the question
  // or its phase moves on (what a student typed stays)
  const box = stage.root.querySelector(".class-question");
  const q = body.question;
  const drawn = q ? `${q.id}:${q.phase}` : "none";
  if (box.dataset.drawn === drawn) return showReceipt(stage, body);
  box.dataset.drawn = drawn;
  stage.storedAnswer = null;  // a new question or phase: nothing stored for it yet
  countdown(stage, q && q.closes_in);
  if (!q) return box.replaceChildren(element("p", "class-none", "No question yet: your teacher's questions appear here."));
  const parts = [];
  if (q.transfer) parts.push(element("p", "class-kind", "Transfer question: a new one, like the last, about this program."));
  parts.push(element("p", "class-prompt", q.prompt));
  if (q.code) {
    const code = element("pre", "class-code");
    code.append(element("code", "", q.code));
    code.tabIndex = 0;
    code.setAttribute("aria-label", "The program the question is about");
    parts.push(code);
  }
  if (q.phase === "discuss") {
    parts.push(element("p", "", "Vote 1 is closed. Discuss with your neighbours: your teacher opens a second vote."));
  } else if (q.phase === "revealed") {
    parts.push(...resultParts(body.result));
  } else {
    parts.push(answerForm(stage, q));
  }
  const receipt = element("p", "class-receipt");
  receipt.setAttribute("role", "status");
  parts.push(receipt);
  box.replaceChildren(...parts);
  showReceipt(stage, body);
}

function resultParts(result) {
  if (!result) return [];
  const parts = [element("p", "class-answer-is", `The answer: ${result.answer}.`)];
  if (result.worked) parts.push(element("p", "class-worked", result.worked));
  const mine = result.yours === null ? "You did not answer this one."
    : result.right ? `✓ Your answer ${result.yours} was right.`
    : `✗ Your answer ${result.yours} was not right${result.why ? `: you ${result.why}` : ""}.`;
  parts.push(element("p", `class-mine ${result.yours === null ? "" : result.right ? "right" : "wrong"}`, mine));
  return parts;
}

function answerForm(stage, q) {
  const form = element("form", "class-form");
  const fields = element("fieldset", "class-fields");
  fields.append(element("legend", "", q.transfer ? "Your answer, on your own" : `Your answer, vote ${q.vote}`));
  const boxes = [], names = [];
  if (q.form === "names") {
    for (const name of q.choices) {
      const label = element("label", "class-choice");
      const tick = element("input");
      tick.type = "checkbox";
      tick.value = name;
      names.push(tick);
      label.append(tick, element("span", "", name));
      fields.append(label);
    }
    fields.append(element("p", "class-hint", "Tick each tensor that still holds a gradient; none ticked means none."));
  } else {
    const count = q.size || 1;
    for (let k = 0; k < count; k++) {
      const label = element("label", "class-number");
      const input = element("input", "stage-answer class-box");
      input.type = "text";
      input.inputMode = "decimal";
      input.autocomplete = "off";
      input.maxLength = q.size ? 24 : 200;
      boxes.push(input);
      label.append(element("span", "", q.size ? (count === 1 ? "Value" : `Entry ${k + 1}`) : "Numbers, commas between"), input);
      fields.append(label);
    }
    const none = element("label", "class-choice");
    const tick = element("input", "class-none-box");
    tick.type = "checkbox";
    none.append(tick, element("span", "", "None: no gradient arrives"));
    tick.onchange = () => boxes.forEach((b) => { b.disabled = tick.checked; });
    fields.append(none);
  }
  const send = element("button", "class-send", "Send my answer");
  send.type = "submit";
  form.append(fields, send, element("p", "class-countdown"));
  form.onsubmit = (event) => {
    event.preventDefault();
    const none = form.querySelector(".class-none-box");
    const text = q.form === "names" ? (names.filter((t) => t.checked).map((t) => t.value).join(", ") || "none")
      : none && none.checked ? "None" : boxes.map((b) => b.value.trim()).filter((v) => v).join(", ");
    const empty = q.form !== "names" && !(none && none.checked) && boxes.some((b) => !b.value.trim());
    if (!text || empty) return receiptSays(stage, "Fill in every box (or tick None) first: nothing was sent.");
    sendAnswer(stage, q, text);
  };
  return form;
}

function receiptSays(stage, text) {
  const receipt = stage.root.querySelector(".class-receipt");
  if (receipt && receipt.textContent !== text) receipt.textContent = text;
}

function showReceipt(stage, body) {
  // what the store has for the open vote, as the room last said (a reload, a second tab); a send's own answer
  // says it at once
  const q = body.question;
  if (!q || !q.vote) return;
  const mine = (body.mine || []).find((a) => a.vote === q.vote);
  if (mine) storedSays(stage, mine.answer);
}

function storedSays(stage, answer) {
  // once the countdown ran out the vote takes no more answers: the stored one is final, and the receipt says so
  stage.storedAnswer = answer;
  receiptSays(stage, stage.timeUp ? `Stored: ${answer}. Time is up: this answer is final.`
    : `Stored: ${answer} (you can change it until the vote closes).`);
}

async function sendAnswer(stage, q, text) {
  const link = stage.data.classroom;
  receiptSays(stage, "Sending…");
  try {
    const response = await fetch(roomUrl(stage, "answer", ""), {
      method: "POST", headers: { ...roomHeaders(link), "Content-Type": "application/json" },
      body: JSON.stringify({ question: q.id, answer: text }), cache: "no-store", signal: stage.listeners.signal,
    });
    const body = await response.json();
    if (response.ok) storedSays(stage, body.stored);
    else receiptSays(stage, body.error || "Not stored: the class did not answer.");
  } catch (error) {
    if (!stage.disposed) receiptSays(stage, "Not stored: the connection to the class dropped. Send it again in a moment.");
  }
}

function countdown(stage, seconds) {
  // the open vote's seconds left, counted here from the room's answer (the server refuses late answers itself)
  clearInterval(stage.countdownTimer);
  stage.timeUp = false;
  if (seconds === null || seconds === undefined) {
    stage.root.querySelectorAll(".class-countdown").forEach((el) => { el.textContent = ""; });
    return;
  }
  const ends = performance.now() + seconds * 1000;
  const tick = () => {
    const el = stage.root.querySelector(".class-countdown");
    const left = Math.max(0, Math.ceil((ends - performance.now()) / 1000));
    if (el) el.textContent = left ? `${left} s left in this vote.` : "Time is up: this vote takes no more answers.";
    const send = stage.root.querySelector(".class-send");
    if (send && !left) send.disabled = true;
    if (!left) {
      clearInterval(stage.countdownTimer);
      stage.timeUp = true;
      if (stage.storedAnswer !== null) storedSays(stage, stage.storedAnswer);
    }
  };
  tick();
  stage.countdownTimer = setInterval(tick, 1000);
}

function teacherSees(stage, body) {
  classStatus(stage, `${body.students} student${body.students === 1 ? "" : "s"} joined. The class follows your steps.`);
  const q = body.question, drawn = q ? `${q.id}:${q.phase}` : "none";
  if (stage.countdownFor !== drawn) {
    stage.countdownFor = drawn;
    countdown(stage, q && q.closes_in);
  }
  // the page drew its controls (Ask, Close, Vote again, Reveal) for the phase it knew; another teacher device moved
  // the room on: the page draws them again, once, for the room's phase, as a student's stage follows the room
  const link = stage.data.classroom;
  if (drawn !== link.phase && drawn !== stage.roomAsked) {
    stage.roomAsked = drawn;
    stage.setStateValue("room", drawn);
  }
  drawTally(stage);
}

function sendStep(stage, index) {
  // each press goes to the room at once; presses made while one is on its way are sent after it, the last only
  const link = stage.data.classroom;
  if (stage.posting) { stage.posting.next = index; return; }
  stage.posting = { next: index };
  (async () => {
    while (stage.posting && stage.posting.next !== null && !stage.disposed) {
      const step = stage.posting.next;
      stage.posting.next = null;
      try {
        const response = await fetch(roomUrl(stage, "step", ""), {
          method: "POST", headers: { ...roomHeaders(link), "Content-Type": "application/json" },
          body: JSON.stringify({ step }), cache: "no-store", signal: stage.listeners.signal,
        });
        if (!response.ok) classStatus(stage, (await response.json()).error || "The class did not take this step.");
      } catch (error) {
        if (stage.disposed) return;
        if (stage.posting.next === null) stage.posting.next = step;  // sent again once the room answers
        classStatus(stage, "The connection to the class dropped; reconnecting…");
        await pauseFor(stage, 1000);
      }
    }
    stage.posting = null;
  })();
}

const PHASE_WORDS = { vote1: "Vote 1", discuss: "Discussion after vote 1", vote2: "Vote 2", revealed: "Revealed" };

function roomTally(q, link, students) {
  // what the whole room may see (a projector): how many answered the newest vote; a closed vote 1's answers, without
  // a mark, if the teacher chose to show them; who is right (words, bars, mistakes) only once the answer is revealed
  const revealed = q.phase === "revealed";
  const which = q.phase === "vote2" || (revealed && q.votes["2"].answered) ? "2" : "1";
  const vote = q.votes[which];
  const right = revealed && vote.graded ? `, ${vote.graded.right} right` : "";
  const lines = [`${PHASE_WORDS[q.phase]}. In vote ${which}, ${vote.answered} of ${students} answered${right}.`];
  const shown = revealed ? which : link.histogram && (q.phase === "discuss" || q.phase === "vote2") ? "1" : null;
  const histogram = shown && q.votes[shown].answers ? q.votes[shown] : null;
  if (histogram && shown !== which) lines.push(`Vote 1's answers, most given first:`);
  const bars = histogram ? histogramBars(histogram, revealed) : [];
  const mistakes = revealed && vote.graded ? mistakeWords(vote.graded, link) : [];
  return { lines, bars, others: histogram ? histogram.others : 0, mistakes, vote };
}

function ownTally(q, link) {
  // the teacher's own screen before the reveal (folded): who is right in the newest vote, its answers marked
  const which = q.phase === "vote2" ? "2" : "1", vote = q.votes[which];
  if (q.phase === "revealed" || !vote.graded || !vote.answers) return null;
  const lines = [`In vote ${which}, ${vote.graded.right} of ${vote.answered} right.`];
  return { lines, bars: histogramBars(vote, true), others: vote.others, mistakes: mistakeWords(vote.graded, link) };
}

function histogramBars(vote, marked) {
  const right = new Set(marked && vote.graded ? vote.graded.right_answers : []);
  return vote.answers.map(([text, count]) => ({ text, count, right: right.has(text) }));
}

function mistakeWords(graded, link) {
  return graded.mistakes.map(([group, count]) => `${count} ${link.mistakes[group] || group}`);
}

function tallyParts(tally) {
  // the tally in sentences and bars, most given first
  const most = Math.max(1, ...tally.bars.map((b) => b.count));
  const list = element("ul", "class-bars");
  list.setAttribute("aria-label", "Answers, most given first");
  for (const bar of tally.bars) {
    const item = element("li", `class-bar${bar.right ? " right" : ""}`);
    const fill = element("span", "class-bar-fill");
    fill.style.width = `${Math.round((100 * bar.count) / most)}%`;
    item.append(fill, element("span", "class-bar-text", `${bar.text}: ${bar.count}${bar.right ? " (right)" : ""}`));
    list.append(item);
  }
  const parts = tally.lines.map((line) => element("p", "", line));
  if (tally.bars.length) parts.push(list);
  if (tally.others) parts.push(element("p", "", `${tally.others} other answer${tally.others === 1 ? "" : "s"}.`));
  if (tally.mistakes.length) parts.push(element("p", "", `Wrong answers show: ${tally.mistakes.join("; ")}.`));
  return parts;
}

function drawTally(stage) {
  const link = stage.data.classroom, body = stage.room;
  if (!link || link.role !== "teacher" || !body) return;
  const panel = stage.root.querySelector(".class-tally");
  const own = stage.root.querySelector(".class-own");
  const q = body.question;
  stage.svg && stage.svg.querySelectorAll(".class-badge").forEach((el) => el.remove());
  if (!q) {
    panel.replaceChildren(element("p", "", "No question yet: choose one above the stage and ask the room."));
    if (own) own.hidden = true;
    if (stage.badgeView) roomForBadge(stage, null);
    return;
  }
  const tally = roomTally(q, link, body.students);
  panel.replaceChildren(...tallyParts(tally));
  const mine = ownTally(q, link);
  if (own) {  // kept open or folded as the teacher left it, while its words follow the answers
    own.hidden = !mine;
    own.querySelector(".class-own-tally").replaceChildren(...(mine ? tallyParts(mine) : []));
  }
  const node = link.asked[q.key];
  const g = node === undefined ? null : stage.nodes.get(stage.boxOf.get(node));
  if (g && stage.svg) drawBadge(stage, g, tally, q.phase === "revealed");
  else if (stage.badgeView) roomForBadge(stage, null);
}

function drawBadge(stage, g, tally, revealed) {
  // on the asked node: how many answered (and once revealed, how many are right) and the room's bars (right ones
  // green once revealed); placed beside it where it covers no other node (left, right, below, above), inside the
  // graph when it can be
  const { vote, bars } = tally;
  const most = Math.max(1, ...bars.map((b) => b.count));
  const box = g.getBBox(), whole = g.parentNode.getBBox();
  const large = stage.data.presenter;  // a projector: the badge's words as large as the nodes' detail line
  const width = large ? 200 : 160, barHeight = large ? 9 : 7, line = large ? 26 : 22, gap = 6;
  const height = line + bars.length * (barHeight + 3);
  const others = [...stage.nodes.values()].filter((n) => n !== g).map((n) => n.getBBox());
  const overlap = (a, b) => Math.max(0, Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x))
    * Math.max(0, Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y));
  const middle = box.y + box.height / 2 - height / 2, centre = box.x + box.width / 2 - width / 2;
  const candidates = [
    { x: box.x - width - gap, y: middle }, { x: box.x + box.width + gap, y: middle },
    { x: centre, y: box.y + box.height + gap }, { x: centre, y: box.y - height - gap },
  ].map((c) => ({ ...c, width, height }));
  const cost = (c) => others.reduce((sum, o) => sum + overlap(c, o), 0) * 10 + overlap(c, box) * 10
    + (c.width * c.height - overlap(c, whole));  // outside the graph: it may be cut off at the edge
  const { x, y } = candidates.reduce((best, c) => (cost(c) < cost(best) ? c : best));
  const badge = document.createElementNS(SVG_NS, "g");
  badge.setAttribute("class", "class-badge");
  badge.setAttribute("aria-hidden", "true");  // the same in words beside the graph
  const frame = document.createElementNS(SVG_NS, "rect");
  Object.entries({ x, y, width, height, rx: 4 }).forEach(([k, v]) => frame.setAttribute(k, String(v)));
  frame.setAttribute("class", "class-badge-frame");
  const text = document.createElementNS(SVG_NS, "text");
  text.setAttribute("x", String(x + 6));
  text.setAttribute("y", String(y + line - 7));
  text.textContent = `${vote.answered} answered${revealed && vote.graded ? ` · ${vote.graded.right} right` : ""}`;
  badge.append(frame, text);
  bars.forEach((bar, k) => {
    const rect = document.createElementNS(SVG_NS, "rect");
    const w = Math.max(2, Math.round(((width - 12) * bar.count) / most));
    Object.entries({ x: x + 6, y: y + line + k * (barHeight + 3), width: w, height: barHeight })
      .forEach(([key, v]) => rect.setAttribute(key, String(v)));
    rect.setAttribute("class", `class-badge-bar${bar.right ? " right" : ""}`);
    badge.append(rect);
  });
  g.parentNode.append(badge);
  roomForBadge(stage, badge);
}

function roomForBadge(stage, badge) {
  // a badge beside a node at the graph's edge would be cut off: the picture grows to hold it, and fits again
  const view = stage.svg.viewBox.baseVal, first = stage.badgeView || { x: view.x, y: view.y, w: view.width, h: view.height };
  stage.badgeView = first;
  let [x0, y0, x1, y1] = [first.x, first.y, first.x + first.w, first.y + first.h];
  if (badge) {
    const m = badge.parentNode.transform.baseVal.consolidate();
    const { a, d, e, f } = m ? m.matrix : { a: 1, d: 1, e: 0, f: 0 };
    const b = badge.getBBox(), margin = 4;
    x0 = Math.min(x0, a * b.x + e - margin); x1 = Math.max(x1, a * (b.x + b.width) + e + margin);
    y0 = Math.min(y0, d * b.y + f - margin); y1 = Math.max(y1, d * (b.y + b.height) + f + margin);
  }
  const w = x1 - x0, h = y1 - y0;
  if (view.x === x0 && view.y === y0 && view.width === w && view.height === h) return;
  stage.svg.setAttribute("viewBox", `${x0} ${y0} ${w} ${h}`);
  const unit = stage.natural.w / view.width;  // the layout's points per viewBox unit (1 for Graphviz's output)
  stage.natural = { w: w * unit, h: h * unit };
  place(stage, stage.fitted ? null : stage.scale);
}

// -- loading Graphviz: the app's own pinned copy (the saved replay carries it inline instead) ---------------------

let graphvizPromise = null;

function loadGraphvizFrom(url) {
  if (!graphvizPromise) {
    graphvizPromise = import(url).then((module) => module.Graphviz.load());
  }
  return graphvizPromise;
}

// -- the graph's font: the app's pinned copy, with the widths Graphviz lays labels out with (Helvetica's) ----------

const GRAPH_FONT = "Autodiff Graph Sans";  // stage.css names it first for the graph's text
let graphFontPromise = null;

function loadGraphFont(urls) {
  // added to the document (a shadow root's @font-face is ignored) and loaded before the first drawing, so a label
  // is never drawn wider than its box; a face that cannot load leaves the next family of stage.css's list
  if (!graphFontPromise) {
    const faces = Object.entries(urls).map(([weight, url]) =>
      new FontFace(GRAPH_FONT, `url(${JSON.stringify(new URL(url, document.baseURI).href)})`, { weight }));
    faces.forEach((face) => document.fonts.add(face));
    graphFontPromise = Promise.all(faces.map((face) => face.load())).catch(() => null);
  }
  return graphFontPromise;
}

export default function (component) {
  // Streamlit's components v2 mount: returns the stage's cleanup, run when the component leaves the page
  const url = new URL(component.data.graphviz_url, document.baseURI).href;
  const font = loadGraphFont(component.data.graph_fonts);
  return mountStage(component, () => Promise.all([loadGraphvizFrom(url), font]).then(([graphviz]) => graphviz));
}
