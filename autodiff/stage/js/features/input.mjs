// Input: the player's buttons, the page's keys, the graph's pointer and touch gestures. It steps through
// `stage.show`, the controller's callback.

import { isGroup } from "../model/parts.mjs";
import { stopsOf, question, stopAt } from "../model/steps.mjs";
import { later } from "../view/dom.mjs";
import { place, zoomStep, zoomTo } from "../view/viewport.mjs";
import { selectNodes, saveSvg, savePng, saveDot } from "../view/picture.mjs";
import { toggleGroup, redraw } from "./parts.mjs";

const KEYS = {
  ArrowRight: "next", PageDown: "next", ArrowLeft: "prev", PageUp: "prev",
  Home: "first", End: "last", " ": "play",
};

const ZOOM_KEYS = { "+": "zoomIn", "=": "zoomIn", "-": "zoomOut", "_": "zoomOut", "0": "fit" };

export function wireControls(stage) {
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
    if (isGroup(stage, g.id)) toggleGroup(stage, g.id);
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
    stage.show(stage.byStep ? stage.stops[k] : k, false);
  };
  const by = root.querySelector(".stage-by");
  by.value = stage.byStep ? "step" : "event";
  by.onchange = (event) => {
    stage.byStep = event.target.value === "step";
    try { sessionStorage.setItem("stage-by", event.target.value); } catch { /* storage off: this stage only */ }
    stage.stops = stopsOf(stage);
    stage.show(stage.index, false, 800, false);
  };
  root.querySelector(".stage-speed").onchange = () => { if (stage.playing) { pause(stage); play(stage); } };
  const follow = root.querySelector(".stage-follow");
  if (follow) {
    follow.onchange = () => {
      stage.follow = follow.checked;
      stage.stops = stopsOf(stage);
      if (!stage.follow && stage.svg) { stage.open = new Set(stage.chosenOpen); redraw(stage); return; }
      stage.show(stage.index, false, 800, false);
    };
  }
}

function spread(touches) {
  return Math.hypot(touches[0].clientX - touches[1].clientX, touches[0].clientY - touches[1].clientY) || 1;
}

function nodesOnLine(data, line) {
  if (!data.program) return [];
  return Object.entries(data.program.spans).filter(([, span]) => span[0] <= line && line <= span[1])
    .map(([id]) => Number(id));
}

export function watchTyping(stage) {
  document.addEventListener("input", (event) => {
    const target = event.composedPath ? event.composedPath()[0] : event.target;
    if (target) stage.typed.add(target);
  }, { capture: true, signal: stage.listeners.signal });
}

export function calmTyping(stage) {
  // the page reran (a widget's change was sent): what was typed is committed, so → and ← step again
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  if (active) stage.typed.delete(active);
}

export function onKey(stage, event) {
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
  if (action === "saveDot") return saveDot(stage);
  if (stage.following) return;  // the teacher steps a class: a student's arrows would only fight the room
  if (action === "play") return stage.playing ? pause(stage) : play(stage);
  pause(stage);
  const at = stopAt(stage, stage.index), lastStop = stage.stops.length - 1;
  const onStop = stage.stops[at] === stage.index;
  const target = { first: 0, last: lastStop, next: at + 1, prev: onStop ? at - 1 : at }[action];
  stage.show(stage.stops[Math.max(0, Math.min(lastStop, target))], action === "next");
}

function play(stage) {
  const last = stage.data.events.length - 1;
  if (stage.index >= last) stage.show(0, false);
  stage.playing = true;
  const b = stage.root.querySelector(".stage-play");
  b.textContent = "Pause";
  b.setAttribute("aria-pressed", "true");
  const period = Number(stage.root.querySelector(".stage-speed").value) * (stage.byStep ? 1.6 : 1);
  stage.timer = setInterval(() => {
    const at = stopAt(stage, stage.index);
    if (at >= stage.stops.length - 1) return pause(stage);
    stage.show(stage.stops[at + 1], true, period);
    const q = question(stage, stage.index);
    if (q && !stage.answers.has(q.key)) pause(stage);  // a question waits for its answer
  }, period);
}

export function pause(stage) {
  stage.playing = false;
  clearInterval(stage.timer);
  const b = stage.root.querySelector(".stage-play");
  if (!b) return;
  b.textContent = "Play";
  b.setAttribute("aria-pressed", "false");
}
