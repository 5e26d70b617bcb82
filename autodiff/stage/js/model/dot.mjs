// The DOT of a view, DOM-free: each box's lines, wrapped and summarised, as the Graphviz input of what is drawn.

import { float32Text, fourDigits, significant } from "./numbers.mjs";
import { isGroup } from "./parts.mjs";

export const WRAP = 48;  // a value or gradient longer than this goes on several lines: a wide box would shrink every box
const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

export function wrap(text, width = WRAP) {
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

export function labelWidth(stage) {
  return Math.min(stage.wrapWidth, 24);  // an edge's label is narrower than a box: it sits between the ranks
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"]/g, (c) => HTML_ESCAPES[c]);
}

export function labelRows(stage, element) {
  // a box's lines, [point size, text, bold, what it is]: a node's title, value, gradient (as wide as the widest it
  // will say) and detail; a folded part's name, size, and its output's value and gradient. Each wrapped to the
  // stage's width of a line; no line is empty (Graphviz draws no text for one, and the gradient's lines are found
  // by their place)
  const [title, body, small] = stage.data.fonts;
  const lines = (size, text, bold, kind) => wrap(text, stage.wrapWidth).map((t) => [size, t, bold, kind]);
  const part = isGroup(stage, element) ? stage.tree.groups.get(element) : null;
  const node = part ? stage.tree.byId.get(part.output) : stage.tree.byElement.get(element);
  const rows = part
    ? [...lines(title, part.name, true, "title"), ...lines(body, part.summary, false, "summary")]
    : lines(title, node.title, true, "title");
  const short = speaksShort(stage, element);
  const value = short ? spokenShort(node.value, node.value_range) : node.value;
  // the gradient laid out as wide as the widest it will say (Python wrote it, in the words the stage will say it;
  // a box that speaks short, each of its texts said short)
  const grad = short ? widestLines(gradTexts(stage.data, node), stage.wrapWidth) : wrap(node.wide, stage.wrapWidth);
  rows.push(...lines(body, value, false, "value"), ...grad.map((t) => [body, t, false, "grad"]));
  if (!part) rows.push(...lines(small, node.detail, false, "detail"));
  return rows.filter((r) => r[1].trim());
}

function widestLines(texts, width) {
  // room for any of `texts` ({text, range}: payload.py's Said) said short and wrapped to `width`: as many lines as the
  // most of them, each as long as the longest at its place (a box is as wide as its widest line). Numbers a class's
  // student is not told yet (payload.py's MASKED_NUMBER) get the widest summary any numbers make, and break their
  // lines elsewhere than the numbers will: a line of a text that wraps may then be as long as `width`
  const masked = texts.some((t) => t.text.includes(MASKED));
  const wrapped = texts.map(({ text, range }) => wrap(spokenShort(text, range, text.includes(MASKED)), width));
  const count = Math.max(...wrapped.map((w) => w.length));
  const rows = Array.from({ length: count }, (_, k) => wrapped.map((w) => w[k] || "").reduce((a, b) => (b.length > a.length ? b : a)));
  if (masked && count > 1) rows[0] = rows[0].padEnd(width, "0");  // drawn over with the words of the moment
  return rows;
}

const MASKED = "0.0000000000";
const GRADIENTS = new WeakMap();  // a payload -> each node's gradients, as its events leave them: read once

function gradTexts(data, node) {
  // every gradient line `node` says in the replay (steps.mjs's nodeView): its own, the words of its states and its
  // gradient as each event leaves it, and the widest Python measured (a class's student holds it masked)
  let byNode = GRADIENTS.get(data);
  if (!byNode) {
    byNode = new Map();
    for (const e of data.events) {
      if (e.kind !== "GradientRegistered") continue;
      if (!byNode.has(e.node)) byNode.set(e.node, []);
      byNode.get(e.node).push(e);
    }
    GRADIENTS.set(data, byNode);
  }
  const w = data.words, got = (byNode.get(node.id) || []).filter((e) => e.total);
  const after = node.grad_kind === "leaf" ? "grad_kept" : "grad_consumed";  // the line once its step has run
  // as steps.mjs's gradLine writes it
  const said = (key, e) => ({ text: w[key].replace("{}", () => e.total), range: e.total_range });
  const lines = got.flatMap((e) => [said("grad_held", e), said(after, e)]);
  const words = [w.swept, w.current, w.recomputed, w.unreached, w.none_yet].map((text) => ({ text, range: null }));
  // the widest line Python measured: a class's student holds it masked, the only line it has of numbers to come
  const wide = { text: node.wide, range: node.wide_range };
  return [wide, { text: node.grad, range: node.grad_range }, ...words, ...lines];
}

export function spokenShort(text, range = null, room = false) {
  // what a box or an edge of a folded view says: a tensor of more than four numbers as its shape and range
  // (`summarised`, or Python's own summary of more than 16 with each number said short), one of four or fewer number
  // by number, each the engine prints with more than four significant digits to four (`grad [[0.03280, -0.2953]]`).
  // All are written from `range`, the numbers Python sent beside the text as the engine prints them (format.py's
  // tensor_range: four or fewer nested as the tensor, a scalar bare), never read out of the text; numbers a class's
  // student is not told yet (`room`) are said as masked, as wide as any. A text that came without numbers (numbers
  // short already, a value with a number not finite, a preview's) is said as it is
  if (range === null || range === undefined) return text;
  if (!isRange(range)) return room ? text : inPlace(text, !Array.isArray(range), writtenShort(range));
  if (sizeOf(range.shape) > WHOLE) return room ? text : inPlace(text, false, engineSummary(range), SUMMARY_WORDS);
  return summarised(text, range, room);
}

const WHOLE = 16;  // a tensor with more numbers Python writes as its shape and range (format.py's WHOLE)
// the words after a large tensor's shape in Python's summary of it (format.py's `compact`: `[64, 4] from -0.81234567
// to 0.96`, `[64, 4], all 0.0`), found by where they stand, not by what they write
const SUMMARY_WORDS = /^(?: from \S+ to \S+|, all \S+)/;

function isRange(range) {
  // a TensorRange (more than four numbers), not the numbers themselves (four or fewer: a nested array, or a number)
  return typeof range === "object" && !Array.isArray(range);
}

function sizeOf(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function writtenShort(numbers) {
  // numbers nested as their tensor, written as Python writes one (`[[1.0, 0.03280]]`, a scalar bare), each said short
  return Array.isArray(numbers) ? `[${numbers.map(writtenShort).join(", ")}]` : shortNumber(numbers);
}

function engineSummary(range) {
  // a large tensor as Python's `compact` writes it, each number said short (`[64, 4] from -0.8123 to 0.96`)
  const said = range.low === range.high ? `, all ${shortNumber(range.low)}` : ` from ${shortNumber(range.low)} to ${shortNumber(range.high)}`;
  return `[${range.shape.join(", ")}]${said}`;
}

function shortNumber(value) {
  // a number as the engine prints it, to four significant digits if it prints more (`0.5` stays, 10.996227 is `11.00`)
  const printed = float32Text(value);
  return significant(printed) > 4 ? fourDigits(value) : printed;
}

// a scalar as a text writes it: the one word of no letter but an exponent's (`grad 10.996227 · consumed`)
const SCALAR = /(?<=^|\s)[^\s·a-df-zA-Z]+(?=\s|$)/;

function inPlace(text, scalar, said, after = null) {
  // `said` in the place of the tensor `text` writes: from its first `[` to its last `]`, or a scalar's one word; or,
  // with `after` (a large tensor, which Python summarises), its shape's brackets and the words `after` finds behind them
  let start = text.indexOf("["), end = text.lastIndexOf("]") + 1;
  if (after) {
    const close = text.indexOf("]", start) + 1;
    const words = start < 0 ? null : after.exec(text.slice(close));
    end = words ? close + words[0].length : 0;
    if (!words) start = -1;
  } else if (scalar) {
    const word = SCALAR.exec(text);
    [start, end] = word ? [word.index, word.index + word[0].length] : [-1, 0];
  }
  return start < 0 ? text : `${text.slice(0, start)}${said}${text.slice(end)}`;
}

export function speaksShort(stage, element) {
  // a folded part says a tensor of more than four numbers as its shape and range, and so does every box beside one
  // (the weights a folded layer uses: written whole, they drew mlp3 at 6 px); with every part open, every number
  return isGroup(stage, element) || stage.folded;
}

export function summarised(text, range, room = false) {
  // a folded part says its output's value and gradient short, as the engine summarises a large tensor
  // (`value [4, 4] from -0.8 to 0.96`), and so does an edge the value it carries; open, a node says every number.
  // The summary is written from `range`, the numbers Python sent beside the text (format.py's tensor_range: the
  // numbers themselves, and nothing is summarised, when the text says four numbers or fewer); it takes the place of
  // the text's one tensor, its outer brackets and all
  if (!range || !isRange(range) || sizeOf(range.shape) > WHOLE) return text;  // a large one Python summarised already
  const widest = "-0.0001234";  // four significant digits, a sign and a small exponent's worth
  const [low, high] = [fourDigits(range.low), fourDigits(range.high)];
  const said = room ? `from ${widest} to ${widest}` : low === high ? `all ${low}` : `from ${low} to ${high}`;
  return inPlace(text, false, `[${range.shape.join(", ")}] ${said}`);
}

function htmlLabel(rows) {
  const cells = rows.map(([size, text, bold, kind]) => {
    const escaped = escapeHtml(text);
    // a value's long numbers (eight digits and more: float32 written whole) draw a little wider than Graphviz
    // measures them in the served font: their cell keeps a point more around them (test_labels_fit)
    const cell = kind === "value" && /\d{8}/.test(text) ? `<TD CELLPADDING="2">` : "<TD>";
    return `<TR>${cell}<FONT POINT-SIZE="${size}">${bold ? `<B>${escaped}</B>` : escaped}</FONT></TD></TR>`;
  }).join("");
  return `<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">${cells}</TABLE>>`;
}

export function besideParts(stage, edges) {
  // the edges from each box that only feeds one folded part in the same frame (a layer's weights) to that part: in
  // a folded view it may be drawn on its part's rank, right of it, rather than a rank below (bestLayout tries both).
  // Graphviz draws an edge within a rank left to right: its edge is written part -> weight with the arrowhead at the
  // part (dir=back), so the parts make the left column and the zoom buttons' corner (top right) stays clear
  const sends = new Map(), fed = new Set(edges.map((e) => e.head));
  for (const e of edges) sends.set(e.tail, [...(sends.get(e.tail) || []), e]);
  const frame = new Map(stage.data.nodes.map((n) => [n.element, n.group]));
  return [...sends].filter(([tail, out]) => !fed.has(tail) && frame.has(tail) && out.length === 1
    && isGroup(stage, out[0].head) && stage.tree.groups.get(out[0].head).parent === frame.get(tail)).map(([, out]) => out[0]);
}

export function dotOf(stage, edges, rankdir, detail, beside = []) {
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
      // an edge into or out of a folded part says other values press by press (`says`): room for the widest
      const rows = stage.folded ? widestLines(edge.says, labelWidth(stage)) : wrap(summarised(edge.label, edge.label_range), labelWidth(stage));
      const lines = rows.map((t) => `<B>${escapeHtml(t)}</B>`);
      // a blank cell either side, about a space wide: Graphviz draws a label against its own edge and the next edge
      // with no gap (`0.8703 to[[1.120]` read as one text)
      const side = `<TD WIDTH="${Math.ceil(body / 4)}"></TD>`;
      attrs.push(`label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0"><TR>${side}<TD>${lines.join("<BR/>")}</TD>${side}</TR></TABLE>>`);
    }
    if (beside.includes(edge)) {
      lines.push(`  ${edge.head} -> ${edge.tail} [${[...attrs, "dir=back"].join(", ")}];`);
    } else lines.push(`  ${edge.tail} -> ${edge.head} [${attrs.join(", ")}];`);
  }
  for (const edge of beside) lines.push(`  {rank=same; ${edge.tail}; ${edge.head}}`);
  lines.push("}");
  return lines.join("\n");
}
