// The exported page's host (payload.py's `export_html`): one HTML file that plays offline. Its data and the pinned
// Graphviz come inline, in the page's own script elements; Graphviz is imported from a Blob URL.

import { mountStage } from "../controller.mjs";
import { loadGraphvizFrom } from "./assets.mjs";

const data = JSON.parse(document.getElementById("replay-data").textContent);
const source = document.getElementById("graphviz-module").textContent;
const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
const component = { data, parentElement: document.querySelector("main"), setStateValue() {} };
mountStage(component, () => loadGraphvizFrom(url));
