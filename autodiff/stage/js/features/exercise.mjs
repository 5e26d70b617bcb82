// The exercise: a prediction asked in the stage at a step, checked with the answer grammar, then the step runs
// (through `stage.show`, the controller's callback).

import { nameOf } from "../model/contract.mjs";
import { stopAt } from "../model/steps.mjs";
import { parseNumbers, close } from "../model/answers.mjs";
import { later, element } from "../view/dom.mjs";

export function verdictLine(answer) {
  if (!answer) return element("p", "stage-note", "");
  if (answer.right === null) return element("p", "card-verdict revealed", "Revealed without an answer (not scored).");
  return element("p", `card-verdict ${answer.right ? "right" : "wrong"}`,
    answer.right ? "Right: every value matches." : `Not quite: you entered ${answer.typed}. The chain rule, worked out:`);
}

export function askForm(stage, q, card) {
  // the prediction, asked in the stage at the step: the local rule stays hidden until it is answered
  const form = element("form", "stage-ask");
  form.append(element("p", "stage-note", "Predict what this step sends to each input (numbers separated by commas), then check."));
  const inputs = q.step.parents.map((parent, k) => {
    const label = element("label", "stage-ask-row");
    const name = card ? card.inputs[k].input : nameOf(stage.data, parent);
    label.append(element("span", "", `To ${name}${q.step.parents.length > 1 ? ` (input ${k + 1})` : ""}`));
    const input = element("input", "stage-answer");
    input.type = "text";
    input.maxLength = 2000;
    input.placeholder = "e.g. 1.0, 2.0";
    input.autocomplete = "off";
    input.setAttribute("aria-label", `What this step sends to ${name}${q.step.parents.length > 1 ? `, input ${k + 1}` : ""}`);
    label.append(input);
    form.append(label);
    return input;
  });
  const row = element("div", "stage-ask-buttons");
  const check = element("button", "", "Check my prediction");
  check.type = "submit";
  const reveal = element("button", "", "Reveal without answering");
  reveal.type = "button";
  const note = element("p", "stage-note stage-ask-note");
  note.setAttribute("role", "status");
  row.append(check, reveal);
  form.append(row, note);
  form.onsubmit = (event) => {
    event.preventDefault();
    const answers = inputs.map((input) => parseNumbers(input.value));
    if (answers.some((a) => a === null)) {
      note.textContent = "Enter numbers separated by commas for every input, as many as it has values (e.g. 1.0, 2.0); or reveal the answer without scoring.";
      return;
    }
    const [rtol, atol] = stage.data.tolerance;
    const right = q.sent.every((sent, k) => close(sent.numbers, answers[k], rtol, atol));
    answer(stage, q, right, inputs.map((input) => input.value.trim().slice(0, 80)).join("; "));
  };
  reveal.onclick = () => answer(stage, q, null, "");
  later(stage, () => { if (inputs[0].isConnected) inputs[0].focus({ preventScroll: true }); }, 0);
  return form;
}

export function answer(stage, q, right, typed) {
  // scored once per question in Python (the session's score); the step then runs: its sends are revealed. Every
  // verdict so far is reported, not the last one: a host may read only the newest value of quick reports
  stage.answers.set(q.key, { right, typed });
  stage.setStateValue("answers", Object.fromEntries([...stage.answers].map(([key, given]) => [key, given.right])));
  const at = stopAt(stage, q.start);
  const next = stage.byStep ? stage.stops[Math.min(at + 1, stage.stops.length - 1)] : q.start;
  stage.show(next, !stage.reduceMotion, 800, true);
  const focus = stage.root.querySelector(".card-verdict") || stage.root.querySelector(".stage-step");
  if (focus) { focus.tabIndex = -1; focus.focus({ preventScroll: true }); }
}
