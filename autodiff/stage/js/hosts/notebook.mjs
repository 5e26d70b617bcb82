// The notebook's host (autodiff.notebook, an anywidget): AFM's `render` mounts the stage in the cell's element and
// returns its cleanup; a new payload (`change:payload`) mounts a new one. Graphviz is the kernel's one
// `GraphvizSource` model, which the stage's `graphviz` trait names: the page imports it once from a Blob URL, kept by
// its checksum for every stage of the page, and revoked when the last one leaves. The still picture shown before the
// widget (where no kernel runs) is hidden.

import { mountStage } from "../controller.mjs";

const PAGE = Symbol.for("autodiff.graphviz");  // checksum -> {url, users, graphviz}: one per page, not per module
const GRAPHVIZ_WAIT_MS = 60_000;  // for the kernel's answer, when the page lacks the shared model (a busy kernel)

async function graphvizSource(model) {
  // the kernel's one Graphviz model; where this page's widget manager lacks it (seen once on a busy machine, for a
  // cell run as JupyterLab opened the notebook), the kernel sends the same module to this stage alone
  try {
    const shared = await model.widget_manager.get_model(String(model.get("graphviz")).replace(/^IPY_MODEL_/, ""));
    return { checksum: shared.get("sha256"), source: shared.get("source") };
  } catch {
    return new Promise((resolve, reject) => {
      const answer = (message, buffers) => {
        if (!message || typeof message.graphviz !== "string" || !buffers || !buffers.length) return;
        clearTimeout(late);
        model.off("msg:custom", answer);
        resolve({ checksum: message.graphviz, source: buffers[0] });
      };
      const late = setTimeout(() => {
        model.off("msg:custom", answer);
        reject(new Error("Graphviz did not arrive from the kernel. Run the cell again once the kernel is ready."));
      }, GRAPHVIZ_WAIT_MS);
      model.on("msg:custom", answer);
      model.send({ want: "graphviz" });
    });
  }
}

function claimGraphviz(model) {
  const claimed = (async () => {
    const { checksum, source } = await graphvizSource(model);
    const cache = (globalThis[PAGE] ??= new Map());
    let entry = cache.get(checksum);
    if (!entry) {
      const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
      entry = { url, users: 0, graphviz: import(url).then((module) => module.Graphviz.load()) };
      cache.set(checksum, entry);
    }
    entry.users += 1;
    return { checksum, entry };
  })();
  return {
    graphviz: () => claimed.then(({ entry }) => entry.graphviz),
    release: () => claimed.then(({ checksum, entry }) => {
      entry.users -= 1;
      if (entry.users > 0) return;
      URL.revokeObjectURL(entry.url);
      globalThis[PAGE].delete(checksum);
    }, () => {}),
  };
}

function hideStill(model) {
  // the still is its own output just before the widget's (JupyterLab draws each in an output row of its own)
  for (const still of document.querySelectorAll(`[data-autodiff-still="${CSS.escape(model.get("still"))}"]`)) {
    (still.closest(".jp-OutputArea-child") || still).style.display = "none";
  }
}

export default {
  render({ model, el }) {
    const report = (name, value) => { model.set(name, value); model.save_changes(); };
    const graphviz = claimGraphviz(model);
    let cleanup = null;
    const mount = () => {
      if (cleanup) cleanup();
      const stopped = (index) => { if (model.get("event") !== index) report("event", index); };  // the widget's `event`
      cleanup = mountStage({ data: model.get("payload"), parentElement: el, setStateValue: report, stopped },
                           graphviz.graphviz, false);
    };
    mount();
    hideStill(model);
    requestAnimationFrame(() => hideStill(model));  // drawn after the widget's row, in a host that does that
    model.on("change:payload", mount);
    return () => {
      model.off("change:payload", mount);
      if (cleanup) cleanup();
      graphviz.release();
    };
  },
};
