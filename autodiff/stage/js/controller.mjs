// The stage: every graph of the app, laid out once by Graphviz (WebAssembly), and for a recorded backward a player
// stepped in the browser. Every step only changes classes and text on the laid-out picture: nothing moves, nothing
// waits on the server, and nothing is sent to it: the stage keeps its position, and a moment after stepping stops it
// hands it to its host (`stopped`: the page's address, a notebook's `event`), which never reruns a page for it.
// All text comes in as data and is set with textContent: nothing here is parsed as HTML.
// The controller: mounts a stage, keeps it across a host's reruns, shows an event, and disposes of it. Features get
// `stage.show` as their callback to step.

import { checkPayload, unpack } from "./model/contract.mjs";
import { programTree } from "./model/parts.mjs";
import { stopsOf, stopAt, frameOf, nodeView, runningPart, narration } from "./model/steps.mjs";
import { WRAP } from "./model/dot.mjs";
import { element } from "./view/dom.mjs";
import { followTheme, isDark } from "./view/theme.mjs";
import { NARROW, place, stickyBar, bringIntoView, fitHeight, pageTop } from "./view/viewport.mjs";
import { bestLayout, chooseView, placeReadable, installLayout } from "./view/layout.mjs";
import { drawPicture, lightLines } from "./view/picture.mjs";
import { watchTable, drawStep, drawContainer, drawLegend, fillTable } from "./view/panels.mjs";
import { buildSkeleton } from "./view/skeleton.mjs";
import { drawParts, followStep } from "./features/parts.mjs";
import { wireControls, watchTyping, calmTyping, onKey } from "./features/input.mjs";
import { joinRoom, roomHolds, sendStep } from "./features/class.mjs";
import { drawTally } from "./features/tally.mjs";

// The module's own state (never the window's): the stage mounted in each parent, kept across a host's reruns,
// and the one replay whose player the page's keys drive.
const mounted = new WeakMap();
let keysOwner = null;

function newStage(data, parent, root, setStateValue, stopped) {
  // every field a stage has, in one place; sealed, so a field added anywhere else is an error
  const stage = Object.seal({
    signature: data.signature, data, parent, root, replay: data.mode === "replay", setStateValue,
    stopped: stopped || null,  // the host's: where the replay stopped (a moment after its last press), or null
    index: Math.max(0, Math.min(data.index || 0, data.events.length - 1)),
    byStep: readBy() !== "event", stops: [], answers: new Map(), selected: null,
    recount: "",  // a part just opened or folded changed the count of steps: the next caption says so, once
    partShown: false,  // a part just opened was brought into view: the frame drawn with it keeps it there (once)
    playing: false, timer: null, stoppedTimer: null,
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
    controlsStep: data.index,  // the step a teacher's page drew its controls for (it reran with this stage's index)
    badgeView: null,  // the graph's own viewBox, before a badge beside a node made room for itself
    litLine: 0,  // the tallest line of the program lit so far, in px: the code's box holds it whole
    tree: programTree(data),  // the program's parts: each group's children, depth and nodes (groups.py made them)
    open: new Set(),  // the groups drawn unfolded, in place; the others are one box each
    boxOf: new Map(),  // NodeId -> the element that shows it now: its own box, or its folded group's
    folded: false,  // a part is folded in this view: every box speaks short (dot.mjs speaksShort)
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
    show: null,  // `show` for this stage: the features step through it, so none imports the controller
  });
  stage.show = (index, animate, period = 800, report = true) =>
    guarded(stage, () => show(stage, index, animate, period, report));
  return stage;
}

export function mountStage(component, loadGraphviz, pageKeys = true) {
  // mounts the stage in `component.parentElement` and returns its cleanup; mounted again with the same data (a
  // host's rerun), it keeps the picture, position and height and returns the same cleanup. A replay takes the
  // page's keys (`pageKeys`: a lesson page, a slide) or only its own while focus is in it (a notebook, where the
  // page's keys are the notebook's). The data's heavy part arrives packed: it is unpacked first (`unpack`). The
  // host's `component.stopped(index)`, if any, gets the event the replay opened at and each it stopped at
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

function refuse(parentElement, message) {
  // a payload the stage cannot show is refused in words on the page, not a blank space
  const refusal = element("p", "stage-refused", message);
  refusal.setAttribute("role", "alert");
  parentElement.appendChild(refusal);
  refusal.classList.toggle("dark", isDark(refusal));  // the palette's refused colour, as the host's theme wants it
  return () => refusal.remove();
}

function remount(kept, component) {
  // the host reran with the same stage: keep everything, take the room and the exercise as it drew them
  const { data, setStateValue, stopped } = component;
  kept.setStateValue = setStateValue;
  kept.stopped = stopped || null;
  calmTyping(kept);
  if (data.classroom) {  // the room as this rerun drew it (its controls' phase, the histogram shown or not)
    kept.data = { ...kept.data, classroom: data.classroom };
    kept.controlsStep = data.index;
    if (kept.room) drawTally(kept);
  }
  if (kept.data.exercise !== data.exercise) {  // the exercise turned on or off: ask (or not) from here on
    kept.data = { ...kept.data, exercise: data.exercise };
    kept.stops = stopsOf(kept);
    guarded(kept, () => show(kept, kept.index, false, 800, false));
  }
  return () => dispose(kept);
}

function mountUnpacked(component, loadGraphviz, pageKeys) {
  const { data, parentElement, setStateValue, stopped } = component;
  try {
    checkPayload(data);
  } catch (error) {
    return { disposed: false, unmount: refuse(parentElement, error.message) };
  }
  const root = buildSkeleton(parentElement, data, data.mode === "replay");
  const stage = newStage(data, parentElement, root, setStateValue, stopped);
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
    const keys = (event) => guarded(stage, () => onKey(stage, event));
    document.addEventListener("keydown", keys, { capture: true, signal: stage.keys.signal });  // before the page scrolls on End or Space
    watchTyping(stage);
  } else {
    root.addEventListener("keydown", (event) => guarded(stage, () => onKey(stage, event)));  // keys while focus is in the stage
  }
  fitHeight(stage);
  layout(stage, loadGraphviz).then((done) => guarded(stage, () => {
    if (!done) return;  // unmounted while Graphviz loaded
    fitHeight(stage);
    placeReadable(stage);
    show(stage, stage.index, false, 800, false);
    if (stage.replay && stage.stopped) stage.stopped(stage.index);  // where it opened (a new program opens at its start)
    // a class's teacher on a projector starts on the room code and QR code above the stage, for the room to join
    const joining = data.classroom && data.classroom.role === "teacher";
    if ((data.presenter || data.embed) && stage.replay && window.innerWidth >= NARROW && !joining) bringIntoView(stage);
    if (data.classroom) joinRoom(stage);
  }), (failed) => {  // Graphviz could not be loaded, or no layout made: said in words, not a blank box
    if (!stage.disposed) stopWith(stage, `The graph cannot be drawn: ${failed.message || failed}`);
  });
  return stage;
}

function guarded(stage, act) {
  // every way into drawing passes here (the first drawing; keys, buttons, the scrubber and class mode's callbacks,
  // through `stage.show`): an error stops the stage and is said in words where it was, never an empty box and never
  // an unhandled rejection that leaves it half drawn
  try {
    return act();
  } catch (error) {
    console.error(error);  // the whole error for whoever debugs it; the page says it in one sentence
    if (stage.disposed) return undefined;  // said already (an inner guard), or the host took the stage away
    const what = String((error && error.message) || error).replace(/\.$/, "");
    stopWith(stage, `This stage stopped drawing: ${what}. Reload the page to start it again.`);
    return undefined;
  }
}

function stopWith(stage, sentence) {
  // the stage stops (no timer, listener or request left) and the sentence takes its place
  const { parent } = stage;
  dispose(stage);
  refuse(parent, sentence);
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
  clearTimeout(stage.stoppedTimer);
  stage.timeouts.forEach(clearTimeout);
  stage.frames.forEach(cancelAnimationFrame);
  stage.listeners.abort();
  stage.keys.abort();
  if (stage.theme) stage.theme.disconnect();
  if (keysOwner === stage) keysOwner = null;
  if (mounted.get(stage.parent) === stage) mounted.delete(stage.parent);
  stage.root.remove();
}

function readBy() {
  // a press per step or per event: the student's choice holds for every stage of this tab, across programs
  try { return sessionStorage.getItem("stage-by"); } catch { return null; }
}

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
    const recounted = stage.recount ? `${stage.recount} ` : "";  // said once
    stage.recount = "";
    root.querySelector(".stage-caption").textContent = `${position[0].toUpperCase()}${position.slice(1)}. ${recounted}${narration(stage, index, state)}`;
    drawStep(stage, state);
    drawContainer(stage, state);
    lightLines(stage, state);
  }
  if (stage.svg) drawPicture(stage, state, animate, period);
  fillTable(stage);
  clearTimeout(stage.stoppedTimer);  // the host keeps the position once stepping stops, not at every press
  if (report && stage.replay && stage.stopped) stage.stoppedTimer = setTimeout(() => stage.stopped(index), 700);
  if (report && stage.data.classroom && stage.data.classroom.role === "teacher") sendStep(stage, index);
  if (stage.room && stage.svg) drawTally(stage);
}
