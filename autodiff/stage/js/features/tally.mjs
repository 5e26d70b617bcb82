// Class mode's tally: the room's answers in words and bars beside the graph, and a badge on the asked node.

import { SVG_NS, element } from "../view/dom.mjs";
import { place } from "../view/viewport.mjs";

function roomTally(q, link, students) {
  // what the whole room may see (a projector): how many answered the newest vote; a closed vote 1's answers, without
  // a mark, if the teacher chose to show them; who is right (words, bars, mistakes) only once the answer is revealed
  const revealed = q.phase === "revealed";
  const which = q.phase === "vote2" || (revealed && q.votes["2"].answered) ? "2" : "1";
  const vote = q.votes[which];
  const right = revealed && vote.graded ? `, ${vote.graded.right} right` : "";
  const lines = [`${link.said.room_phases[q.phase]}. In vote ${which}, ${vote.answered} of ${students} answered${right}.`];
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

export function drawTally(stage) {
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
