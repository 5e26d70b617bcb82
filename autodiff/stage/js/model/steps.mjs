// The replay's steps, DOM-free: where each press stops, the frame (node states, container, flows) after an event,
// and the sentence a press says.

import { nameOf, nodeById } from "./contract.mjs";
import { spokenShort } from "./dot.mjs";
import { isGroup, ancestorsOf } from "./parts.mjs";

const FINISH = new Set(["SweepFreed", "BackwardFinished"]);

export function stopsOf(stage) {
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
    const folded = box && isGroup(stage, box) ? box : null;
    if (!folded || folded !== part) stops.push(k - 1);
    part = folded;
    if (e.kind === "StepStarted" && !folded && question(stage, k)) stops.push(k);
  });
  stops.push(events.length - 1);
  return [...new Set(stops)];
}

export function recount(stage, before, group, opened) {
  // a part opened or folded changes how many presses the replay takes ("step 5 of 12" becomes "7 of 14"): said once,
  // with why, where the count is read. `before` is the stops with the part as it was; "" when the count is the same
  const after = stage.stops;
  if (after.length === before.length) return "";
  const inside = (stops) => stops.filter((stop) => stepInside(stage, stop, group.element)).length;
  const now = inside(after), was = inside(before);
  const foldedInside = stage.data.groups.some((g) => !stage.open.has(g.element)
    && ancestorsOf(stage, { group: g.parent }).includes(group.element));
  const why = !opened ? "folded, a part runs its steps one after another in one press"
    : `open, a part's steps are stops of their own${foldedInside ? ", but for the parts still folded inside it" : ""}`;
  return `${opened ? "Opened" : "Folded"} ${group.name}. Its steps take ${now} press${now === 1 ? "" : "es"} now, not ${was} `
    + `(${why}): ${after.length - 1} in all.`;
}

function stepInside(stage, stop, element) {
  // whether the stop at event `stop` is in a step of a node inside the part `element`
  const { events } = stage.data;
  const start = events[groupStart(events, stop)];
  return start.kind === "StepStarted" && ancestorsOf(stage, stage.tree.byId.get(start.node)).includes(element);
}

export function question(stage, k) {
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

export function stopAt(stage, index) {
  // the position of `index` among the stops: the stop at it, or the last one before it (-1 before the first)
  let at = -1;
  stage.stops.forEach((stop, k) => { if (stop <= index) at = k; });
  return at;
}

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
    // the event itself: its total (or value) and that tensor's range (each event read, never written)
    f.received.set(e.node, e);
    if (f.current && e.source === f.current.node) f.flows.push(e);
    if (e.edge) f.sent.set(e.edge, e);
  } else if (e.kind === "GradientConsumed") {
    if (!e.kept) f.container.delete(e.node);
  } else if (FINISH.has(e.kind)) {
    if (e.kind === "BackwardFinished") f.finished = true;
    f.current = null; f.currentAt = -1; f.flows = []; f.recomputed.clear();
    if (e.kind === "SweepFreed") e.nodes.forEach((n) => f.swept.add(n));
  }
}

export function frameOf(stage, index) {
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

export function frame(data, index) {
  const f = emptyFrame();
  for (let k = 0; k <= index && k < data.events.length; k++) advance(f, data.events[k], k);
  return f;
}

function gradLine(words, key, got) {
  // a gradient line in the payload's words (`grad_held`, `grad_kept`, `grad_consumed`): `{}` is the gradient the
  // GradientRegistered event `got` left, and the line's range is its range
  return { grad: words[key].replace("{}", () => got.total), grad_range: got.total_range };
}

export function nodeView(data, node, state) {
  // the state a node is drawn in at this event, the words on its gradient line (all the payload's) and the range of
  // the gradient they say (format.py's tensor_range: a folded view says it short)
  const id = node.id, words = data.words;
  const own = { grad: node.grad, grad_range: node.grad_range }, said = (grad) => ({ grad, grad_range: null });
  if (!state) return { state: node.state, ...own };
  const got = state.received.get(id);
  if (state.swept.has(id)) return { state: "swept", ...said(words.swept) };
  if (state.current && state.current.node === id) return { state: "current", ...(got ? gradLine(words, "grad_held", got) : said(words.current)) };
  if (state.recomputed.has(id)) return { state: "recomputed", ...said(words.recomputed) };
  if (node.grad_kind === "none") return { state: node.state, ...own };
  // a class's leaf question asks what a leaf gets from the whole backward: its stage says a leaf is not reached
  // once the backward has finished, not from the tape at step 0, where it would answer the question
  const told = !data.classroom || state.finished;
  if (told && state.onTape && !state.onTape.has(id) && !got) return { state: "unreached", ...said(words.unreached) };
  if (state.started.has(id)) {
    const leaf = node.grad_kind === "leaf";
    return { state: leaf ? "leaf" : "consumed", ...(got ? gradLine(words, leaf ? "grad_kept" : "grad_consumed", got) : own) };
  }
  return { state: node.state, ...(got ? gradLine(words, "grad_held", got) : said(words.none_yet)) };
}

export function entryWords(data, state, id) {
  // what the container says of a node's entry, in the payload's words: kept (a leaf), waiting for its step, or its
  // step running
  const node = nodeById(data, id);
  const key = node && node.grad_kind === "leaf" ? "entry_kept" : state.started.has(id) ? "entry_running" : "entry_waiting";
  return data.words[key];
}

export function runningPart(stage, state) {
  // the folded part whose steps this press runs, and that run of its steps (groups.py added them up), if any
  if (!state || !state.current) return null;
  const box = stage.boxOf.get(state.current.node);
  if (!box || !isGroup(stage, box)) return null;
  const group = stage.tree.groups.get(box);
  const run = group.runs.find((r) => r.first <= state.currentAt && state.currentAt <= r.last);
  return run && run.steps > 1 ? { group, run } : null;  // one step alone is told as a step, with its chain rule
}

function flowList(flows) {
  return flows.map((f) => `${spokenShort(f.value, f.value_range)} to ${f.name}`).join(", ");
}

export function narration(stage, index, state) {
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
    // said short, as the folded part's box says them: the card beside it lists every number
    const came = run.came_in.map((f) => `${spokenShort(f.value, f.value_range)} at ${f.name}`).join(", ");
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
  if (consumed) parts.push(consumed.text);  // Python's sentence: kept (a leaf) or consumed
  return parts.join(" ");
}
