// The stage's DOM helpers, the Training stage's too (ui/training_stage.js): elements made with their text set as
// text (nothing here is parsed as HTML).

export const SVG_NS = "http://www.w3.org/2000/svg";

export function later(stage, act, ms) {
  // a timeout the stage's cleanup cancels
  const id = setTimeout(() => { stage.timeouts.delete(id); act(); }, ms);
  stage.timeouts.add(id);
}

export function element(tag, className, text, attributes) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return attributes ? withAttributes(el, attributes) : el;
}

export function svgElement(tag, attributes, text) {
  // an SVG element: its class is one of its attributes
  const el = document.createElementNS(SVG_NS, tag);
  if (text !== undefined) el.textContent = text;
  return attributes ? withAttributes(el, attributes) : el;
}

function withAttributes(el, attributes) {
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  return el;
}

export function button(text, act, label, keys) {
  const b = element("button", "", text);
  b.type = "button";
  b.dataset.act = act;
  b.setAttribute("aria-label", label);
  if (keys) {
    b.setAttribute("aria-keyshortcuts", keys);
    b.title = `${label} (${keys.replace(/Arrow/g, "").replace(/ /g, " or ")})`;
  } else {
    b.title = label;
  }
  return b;
}

export function select(className, label, options, chosen) {
  // a choice with its words beside it, visible (the select inside its label)
  const s = element("select", className);
  for (const [value, text] of options) {
    const option = element("option", "", text);
    option.value = value;
    option.selected = value === chosen;
    s.append(option);
  }
  const field = element("label", "stage-field");
  field.append(element("span", "", label), s);
  return field;
}

export function table(columns, rows, caption) {
  const t = element("table");
  if (caption) t.createCaption().textContent = caption;
  const head = t.createTHead().insertRow();
  columns.forEach((c) => { const th = element("th", "", c); th.scope = "col"; head.appendChild(th); });
  const body = t.createTBody();
  rows.forEach((row) => {
    const tr = body.insertRow();
    row.forEach((cell) => { tr.insertCell().textContent = cell; });
  });
  return t;
}

export function strong(text) {
  return element("strong", "", text);
}
