// The stage's elements, built once: the graph's box, the player, the panels, the program.

import { element, button, select } from "./dom.mjs";
import { classPanel } from "../features/class.mjs";

export function buildSkeleton(parent, data, replay) {
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
    save.append(button("SVG", "saveSvg", "Save this picture as SVG"), button("PNG", "savePng", "Save this picture as PNG"),
      button("DOT", "saveDot", "Save this picture's Graphviz source (DOT)"));
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
    caption.tabIndex = 0;  // a long caption scrolls in its share of the panel: the keyboard can scroll it too
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
