// The Streamlit host: components v2 mounts the stage through this module's default export.

import { mountStage } from "../controller.mjs";
import { loadGraphvizFrom, loadGraphFont } from "./assets.mjs";
import { newestOnly } from "./mounts.mjs";

export default function (component) {
  // Streamlit's components v2 mount: returns the stage's cleanup, run when the component leaves the page
  const cleanupOfNewest = newestOnly(component.parentElement);
  const url = new URL(component.data.graphviz_url, document.baseURI).href;
  const font = loadGraphFont(component.data.graph_fonts);
  const stopped = component.data.link ? linkTo(component.data.link) : null;
  return cleanupOfNewest(mountStage({ ...component, stopped },
                                    () => Promise.all([loadGraphvizFrom(url), font]).then(([graphviz]) => graphviz)));
}

function linkTo(parameter) {
  // the page's address carries the event the replay stopped at (counted from 1, as the stage shows it): a link and a
  // reload open there. Written here, in the page's own history (a v2 component lives in the app's document, no
  // iframe): a Streamlit rerun per press cost the server a whole page run each
  return (index) => {
    const address = new URL(window.location.href);
    if (address.searchParams.get(parameter) === String(index + 1)) return;
    address.searchParams.set(parameter, String(index + 1));
    window.history.replaceState(window.history.state, "", address);
  };
}
