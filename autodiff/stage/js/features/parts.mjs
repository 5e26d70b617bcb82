// Opening and folding the program's parts: a click or a key opens one in place, or folds it again. It steps
// through `stage.show`, the controller's callback: no import of the controller.

import { ancestorsOf } from "../model/parts.mjs";
import { stopsOf, recount } from "../model/steps.mjs";
import { element } from "../view/dom.mjs";
import { place } from "../view/viewport.mjs";
import { bestLayout, placeReadable, installLayout } from "../view/layout.mjs";

export function toggleGroup(stage, element) {
  // a click, Enter or Space on a part opens it in place, or folds it (with the parts inside it) again
  if (stage.open.has(element)) {
    stage.open.delete(element);
    for (const e of [...stage.open]) if (ancestorsOf(stage, { group: e }).includes(element)) stage.open.delete(e);
  } else {
    stage.open.add(element);
  }
  stage.chosenOpen = new Set(stage.open);
  redraw(stage, { group: stage.tree.groups.get(element), opened: stage.open.has(element) });
}

export function redraw(stage, toggled = null) {
  // the view as the groups are open now: laid out once (kept), drawn at the current event. A part opened or folded
  // (`toggled`) that changed the count of steps says so in the next caption
  const before = stage.stops;
  installLayout(stage, bestLayout(stage));
  stage.stops = stopsOf(stage);
  if (toggled) stage.recount = recount(stage, before, toggled.group, toggled.opened);
  placeReadable(stage);
  drawParts(stage);
  stage.show(stage.index, false, 800, false);
}

export function drawParts(stage) {
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

export function followStep(stage, state) {
  // "follow the step": the parts around the running step are opened while it runs, and folded back after
  const want = new Set(stage.chosenOpen);
  if (state.current) ancestorsOf(stage, stage.tree.byId.get(state.current.node)).forEach((e) => want.add(e));
  if (want.size === stage.open.size && [...want].every((e) => stage.open.has(e))) return;
  stage.open = want;
  installLayout(stage, bestLayout(stage));
  place(stage, null);
  drawParts(stage);
}
