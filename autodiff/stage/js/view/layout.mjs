// The layout search: each view laid out by Graphviz the ways it can be, keeping the one that reads largest,
// and installed as the picture.

import { MAX_DRAWN, isGroup, placeBoxes, drawnCount, placeBoxesEdges } from "../model/parts.mjs";
import { labelRows, dotOf, besideParts } from "../model/dot.mjs";
import { MAX_SCALE, fitScale, place, windowRoom, scrollPage } from "./viewport.mjs";

export function bestLayout(stage, thorough = true) {
  // this view laid out each way (bottom-up or left-right, with or without each node's `NodeId · op` line, its long
  // lines wrapped wider or narrower) once, keeping the one that reads largest: the detail line goes first when it
  // would make the text too small. A folded view that reads below readable size is tried more ways too (narrower
  // lines, its weights beside their parts), unless `thorough` is false: choosing the view to open with asks each
  // level whether it reads, and only the one it settles on is worth the longer search (each way is a Graphviz
  // layout: searching every level every way, 5,000 nodes' first frame took 1.2 s instead of 0.5 s)
  const edges = placeBoxes(stage);
  const key = [...stage.open].sort().join(",");
  const known = stage.layouts.get(key);
  if (known && (known.thorough || !thorough)) return known;
  const tried = known ? known.tried : new Map();  // the ways a quick search laid out: not laid out again
  const box = stage.root.querySelector(".stage-svg");
  const readable = stage.data.presenter ? 16 : 12;
  const lay = (rankdir, detail, wrapWidth, beside) => {
    const way = `${rankdir} ${detail} ${wrapWidth} ${beside.length}`;
    if (tried.has(way)) return tried.get(way);
    stage.wrapWidth = wrapWidth;
    const dot = dotOf(stage, edges, rankdir, detail, beside);  // kept: the download is this text (picture.mjs saveDot)
    const svgText = stage.graphviz.dot(dot);
    const svg = new DOMParser().parseFromString(svgText, "image/svg+xml").documentElement;
    const w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
    const sizes = [...svg.querySelectorAll("g.node text, g.cluster text")].map((t) => parseFloat(t.getAttribute("font-size")) || 14);
    const font = sizes.length ? Math.min(...sizes) : 14, scale = Math.min(fitScale(stage, box, w, h), MAX_SCALE);
    const laid = { svg, dot, w, h, font, scale, detail, wrapWidth, beside, smallest: scale * font, open: new Set(stage.open) };
    tried.set(way, laid);
    return laid;
  };
  const widest = (candidates) => candidates.sort((a, b) => b.scale - a.scale)[0];
  const widths = [...new Set([stage.wideWrap, Math.max(32, Math.round(stage.wideWrap * 0.65)), Math.min(stage.wideWrap, 32)])];
  let compact = widest(stage.data.rankdirs.flatMap((r) => widths.map((w) => lay(r, false, w, []))));
  if (thorough && stage.folded && compact.smallest < readable - 0.01) {
    // a folded view's boxes say little (a tensor as its shape and range): narrower lines are tried too, and its
    // weights beside their parts (wide and short) as well as a rank below them (narrow and tall)
    const narrower = [...new Set([Math.min(stage.wideWrap, 38), Math.min(stage.wideWrap, 26)])];
    const beside = besideParts(stage, edges);
    const more = stage.data.rankdirs.flatMap((r) => [
      ...narrower.filter((w) => !widths.includes(w)).map((w) => lay(r, false, w, [])),
      ...(beside.length ? [...widths, ...narrower].map((w) => lay(r, false, w, beside)) : []),
    ]);
    compact = widest([compact, ...more]);
  }
  compact.compact = compact;
  const detailFont = compact.font * 0.8;  // the detail line is the smallest text, about four fifths of the rest
  let best = compact;
  if (compact.scale * detailFont >= readable - 0.01 && stage.data.nodes.some((n) => stage.boxOf.get(n.id) === n.element)) {
    const withDetail = stage.data.rankdirs.map((r) => lay(r, true, compact.wrapWidth, compact.beside)).sort((a, b) => b.scale - a.scale)[0];
    withDetail.compact = compact;  // drawn instead when the zoom buttons' corner leaves the detail line too small
    if (withDetail.smallest >= readable - 0.01) best = withDetail;
  }
  stage.wrapWidth = best.wrapWidth;
  best.thorough = thorough || !stage.folded || compact.smallest >= readable - 0.01;  // no other way would be tried
  best.tried = best.thorough ? null : tried;  // kept only until the longer search, which reuses them
  stage.layouts.set(key, best);
  return best;
}

export function chooseView(stage) {
  // the picture opens whole and readable: the deepest level of parts opened whose layout still reads at 12 px
  // (16 on a projector), else the top level folded (zoom, or open a part, to see more)
  const { tree } = stage;
  const readable = stage.data.presenter ? 16 : 12;
  const levels = [];  // the top level folded first, then each level of parts opened, while it draws few enough
  for (let d = 0; d <= tree.maxDepth + 1; d++) {
    const open = new Set([...tree.groups.keys()].filter((e) => tree.depth.get(e) < d));
    if (d > 0 && drawnCount(stage, open) > MAX_DRAWN) break;
    levels.push(open);
  }
  // tried from the top: a deeper level draws more in the same room, so the first that does not read ends the search,
  // and the deepest levels, the costliest to lay out, are laid out only when every level above them reads (the
  // 30-sample loop's every part open took four layouts of 180 ms each, only to be refused)
  const laid = levels.map(() => null);
  let chosen = -1;
  for (const [d, open] of levels.entries()) {
    stage.open = open;
    laid[d] = bestLayout(stage, false);
    if (laid[d].smallest < readable - 0.01) break;
    chosen = d;
  }
  if (chosen >= 0) {
    stage.open = levels[chosen];
    stage.chosenOpen = new Set(levels[chosen]);
    return;
  }
  let fallback = null;  // nothing reads: the level that reads largest, each laid out
  for (let d = levels.length - 1; d >= 0; d--) {
    stage.open = levels[d];
    const best = laid[d] || bestLayout(stage, false);
    if (!fallback || best.smallest > fallback.best.smallest + 0.01) fallback = { open: levels[d], best };
  }
  stage.open = fallback.open;
  stage.chosenOpen = new Set(fallback.open);
  bestLayout(stage);  // nothing reads at readable size: the view it opens with is searched every way
}

export function placeReadable(stage) {
  // fitted, with the zoom buttons' corner kept clear; if that left the detail line under readable size, the layout
  // without it is drawn instead. The view the stage opens with is drawn whole; a view the student opened (a part)
  // that fits only below readable size is zoomed to it instead: Fit (or −) still shows the whole picture. A part just
  // opened is brought where a person sees it, zoomed or not
  place(stage, null);
  const readable = stage.data.presenter ? 16 : 12, drawn = stage.layout, opened = stage.svg && stage.svg.dataset.opened;
  if (drawn && drawn.detail && drawn.compact && stage.scale * drawn.font < readable - 0.01) {
    installLayout(stage, drawn.compact);
    place(stage, null);
  }
  if (stage.layout && !stage.layout.opening && stage.scale * stage.layout.font < readable - 0.01) {
    place(stage, stage.readableScale * 1.005);  // just over: rounding never leaves a label a hair under
  }
  const part = opened && stage.svg.querySelector(`g.cluster#${CSS.escape(opened)}`);
  if (part) revealPart(stage, part);
  stage.partShown = Boolean(part);
}

function revealPart(stage, part) {
  // the opened part's frame centred in what the window shows of the graph's box, or from the corner its name is in
  // when larger (the top left, or the bottom left when the graph is drawn bottom-up); where the box cannot scroll that
  // far (a phone's box is taller than the screen, and its step buttons stick over the screen's foot), the page
  // scrolls the rest
  const box = stage.root.querySelector(".stage-svg");
  const room = windowRoom(stage), b = box.getBoundingClientRect();
  const left = Math.max(b.left, 0), right = Math.min(b.right, window.innerWidth);
  let top = Math.max(b.top, room.top), bottom = Math.min(b.bottom, room.bottom);
  if (bottom <= top) [top, bottom] = [b.top, b.bottom];  // the box is off screen: the page brings it below
  const r = part.getBoundingClientRect(), name = part.querySelector(":scope > text");
  const nameBelow = name && name.getBoundingClientRect().top > r.top + r.height / 2;
  const at = (size, from, to, end) => (size <= to - from ? from + (to - from - size) / 2 : end ? to - 8 - size : from + 8);
  box.scrollLeft += r.left - at(r.width, left, right, false);
  box.scrollTop += r.top - at(r.height, top, bottom, nameBelow);
  const moved = part.getBoundingClientRect();
  if (moved.top >= room.top && moved.bottom <= room.bottom) return;
  scrollPage(stage, moved.top - at(moved.height, room.top, room.bottom, nameBelow));
}

export function installLayout(stage, best) {
  const box = stage.root.querySelector(".stage-svg");
  const readable = stage.data.presenter ? 16 : 12;
  const svg = document.importNode(best.svg, true);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("aria-hidden", "true");
  const opened = stage.layout && [...best.open].find((e) => !stage.layout.open.has(e));  // the part just opened
  if (opened) svg.dataset.opened = opened;
  if (!stage.layout) {  // the view the stage opens with (kept: folded back to it, it is drawn whole again)
    best.opening = true;
    if (best.compact) best.compact.opening = true;
  }
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
    if (isGroup(stage, id)) g.classList.add("group");
  });
  svg.querySelectorAll("g.cluster").forEach((g) => g.classList.add("part"));
  const tracked = new Map([...placeBoxesEdges(stage)]);
  stage.edges.forEach((g, id) => {
    const labels = [...g.querySelectorAll("text")];
    if (labels.length) stage.labelText.set(id, labels.map((t) => centred(g, t)));
    if (tracked.get(id) === false) g.classList.add("untracked");
  });
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
