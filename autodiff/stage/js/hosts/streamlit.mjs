// The Streamlit host: components v2 mounts the stage through this module's default export.

import { mountStage } from "../controller.mjs";
import { loadGraphvizFrom, loadGraphFont } from "./assets.mjs";

export default function (component) {
  // Streamlit's components v2 mount: returns the stage's cleanup, run when the component leaves the page
  const url = new URL(component.data.graphviz_url, document.baseURI).href;
  const font = loadGraphFont(component.data.graph_fonts);
  return mountStage(component, () => Promise.all([loadGraphvizFrom(url), font]).then(([graphviz]) => graphviz));
}
