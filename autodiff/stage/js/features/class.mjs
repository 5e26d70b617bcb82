// Class mode: the room's step and answers, long-polled from the push route beside the app; a student's stage
// follows the room (through `stage.show`, the controller's callback), a teacher's sends each step.

import { programTree } from "../model/parts.mjs";
import { stopAt } from "../model/steps.mjs";
import { later, element } from "../view/dom.mjs";
import { pause } from "./input.mjs";
import { drawTally } from "./tally.mjs";

export function classPanel(data) {
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

export async function joinRoom(stage) {
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

export function roomHolds(stage, index) {
  // a teacher's press past the asked event while its question waits for the reveal would show every stage the
  // answer: refused here (and by the server), in a sentence
  const link = stage.data.classroom, q = stage.room && stage.room.question;
  if (!link || link.role !== "teacher" || !q || q.phase === "revealed" || index <= q.step) return false;
  pause(stage);
  const scrub = stage.root.querySelector(".stage-scrub");
  if (scrub) scrub.value = String(Math.max(1, stopAt(stage, stage.index) + 1));
  classStatus(stage, link.said.holds);  // the server's own refusal (classroom/words.py)
  return true;
}

/** @param {RevealedEvents|null} revealed */
export function fillIn(stage, revealed) {
  // the events the room reached, whole: the stage held them without their words and numbers until now. The payload
  // it was given is never written to: the stage's data becomes a new object, its tree and frames worked out anew
  if (!revealed || revealed.start > stage.whole) return;
  const { data } = stage, { start, events } = revealed;
  stage.data = {
    ...data,
    events: [...data.events.slice(0, start), ...events, ...data.events.slice(start + events.length)],
    cards: { ...data.cards, ...revealed.cards },
    sums: { ...data.sums, ...revealed.sums },
    groups: data.groups.map((group, g) => ({ ...group, runs: group.runs.map((run, r) => ({ ...run, ...revealed.runs[g][r] })) })),
  };
  stage.tree = programTree(stage.data);  // its groups are the new data's: a folded part's runs say what they sent
  stage.whole = Math.max(stage.whole, start + events.length);
  stage.lastFrame = null;  // frames are worked out again from the whole events
}

function studentSees(stage, body) {
  fillIn(stage, body.events);
  const last = stage.data.events.length - 1;
  const index = Math.max(0, Math.min(body.step, last));
  if (index !== stage.index) stage.show(index, index === stage.index + 1 || stage.stops.includes(index), 800, false);
  const q = body.question;
  const asked = q ? `${stage.data.classroom.said.student_phases[q.phase]} ` : "";  // the question's box says the rest
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

function controlsAt(stage, step) {
  // the teacher's page drew its controls (what it can ask the room) for the step it last ran at; the room is stored at
  // another now: the page draws them again, once (the teacher's page reruns, never a student's)
  if (step === stage.controlsStep) return;
  stage.controlsStep = step;
  stage.setStateValue("room", `${stage.data.classroom.phase}@${step}`);
}

export function sendStep(stage, index) {
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
        else if (stage.posting.next === null) controlsAt(stage, step);
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
