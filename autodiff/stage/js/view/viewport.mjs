// The viewport: the graph's scale and zoom in its box, and the player's height on the page.

export const MAX_SCALE = 1.6;  // a small graph is drawn larger, up to this
const MAX_ZOOM = 3;  // zoomed in, at most this many times the graph's own size
export const NARROW = 700;  // below this width the stage stacks and the graph fits the width
const STACK = 880;  // a stage narrower than this puts its panel below the graph, which then takes the width
const CARD_ROOM = 260;  // stacked, the panel under the graph is at least this tall: the caption, the card's first lines, the program's

export function fitScale(stage, box, w, h) {
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

export function place(stage, scale) {
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

export function zoomStep(stage, direction) {
  if (!stage.svg) return;
  const levels = zoomLevels(stage);
  const target = direction > 0 ? levels.find((s) => s > stage.scale + 1e-3) : [...levels].reverse().find((s) => s < stage.scale - 1e-3);
  if (target !== undefined) zoomTo(stage, target);
}

export function zoomTo(stage, scale, around) {
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

export function stickyBar() {
  // the page's bar that stays above the stage while it scrolls (a class's teacher controls on a projector)
  const bar = document.querySelector(".st-key-stage_bar");
  return bar && getComputedStyle(bar).position === "sticky" ? bar : null;
}

export function windowRoom(stage) {
  // the window's rows a person sees the stage in: under Streamlit's toolbar (and a page's bar above the stage), over
  // the player where it sticks to the foot of a phone's screen
  const sticky = [...stage.root.querySelectorAll(".stage-player, .stage-controls")]
    .find((e) => getComputedStyle(e).position === "sticky");
  return { top: headerBottom(), bottom: window.innerHeight - (sticky ? sticky.offsetHeight : 0) };
}

export function scrollPage(stage, by) {
  // the page the stage is on scrolls `by` pixels down (Streamlit's main block, a notebook's panel, or the window)
  const scroller = scrollerOf(stage.root.parentElement || stage.root.getRootNode().host);
  if (scroller) scroller.scrollTop += by;
  else window.scrollBy(0, by);
}

export function bringIntoView(stage) {
  // on a projector the player is the lesson: scroll it up to just under Streamlit's toolbar, once
  stage.root.style.scrollMarginTop = `${headerBottom() + 8}px`;
  stage.root.scrollIntoView({ block: "start" });
}

export function fitHeight(stage) {
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
  const side = root.querySelector(".stage-side");
  if (side) side.style.height = "";
  if (stacked && stage.replay && stackedFits(stage, svgBox, side)) return;
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

function stackedFits(stage, svgBox, side) {
  // stacked, the graph, the player and the card below them fill one screen (the rest of the first; the legend
  // follows): the card gets its share of it and scrolls itself, so it is on screen with the graph, never a page's
  // scroll away. The graph keeps almost half the window however tall the player is. A stage stacked only to draw
  // the graph larger (wide enough for the panel beside it) stays beside it when the rest of the screen cannot hold
  // both
  const { root } = stage;
  root.style.height = "";
  const room = screenRoom(stage);
  const player = root.querySelector(".stage-player");
  const forReading = root.clientWidth >= STACK;  // it could stay beside: the card takes no more than its least
  const card = forReading ? CARD_ROOM : Math.max(CARD_ROOM, Math.round(room * 0.36));
  const graph = room - (player ? player.offsetHeight : 0) - 24 - card, least = Math.max(300, Math.round(window.innerHeight * 0.45));
  if (graph < least && forReading) {
    root.classList.remove("stacked");
    return false;
  }
  if (side) side.style.height = `${card}px`;
  svgBox.style.height = `${Math.max(least, graph)}px`;
  return true;
}

export function pageTop(root) {
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

export function reveal(stage, g, smooth) {
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
