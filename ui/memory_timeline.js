// The memory timeline's component (ui/memory_timeline.py draws its markup, an SVG, in Python).
// The markup changes only when the run does: replaced then, so a focused band keeps its focus across reruns. A band
// focused or clicked selects its node on the page's graph (a click on the stage's node, as a student's would: the
// stage lights the node and its program line); a node clicked on the graph marks its bands. Both components render
// in open shadow roots of one document, so a click's composed path reaches the node.

const HOSTS = "[data-testid=stBidiComponentIsolated]";
const inside = (selector) => [...document.querySelectorAll(HOSTS)]
  .flatMap((host) => (host.shadowRoot ? [...host.shadowRoot.querySelectorAll(selector)] : []));
function markBands(node) {
  inside(".memtl .band").forEach((band) => band.classList.toggle("linked", band.dataset.node === node));
}
function selectNode(node) {
  // `node` is its box's element id, as Python wrote it on the band (graph_dot.py makes it): never spelled here
  const box = inside(`.stage g.node#${CSS.escape(node)}`)[0];
  if (box) box.dispatchEvent(new MouseEvent("click", { bubbles: true, composed: true }));
  else markBands(node);
}
if (!window.__memoryTimelineLinked) {
  window.__memoryTimelineLinked = true;
  document.addEventListener("click", (event) => {
    const box = event.composedPath().find((el) => el.matches && el.matches(".stage g.node"));
    if (box) markBands(box.id);  // a part's box has no band: none is marked
  });
}
export default function ({ data, parentElement }) {
  let root = parentElement.querySelector(".memtl-root");
  if (!root) {
    root = document.createElement("div");
    root.className = "memtl-root";
    parentElement.append(root);
    const chosen = (event) => {
      const band = event.target.closest && event.target.closest(".band[data-node]");
      if (band) selectNode(band.dataset.node);
    };
    root.addEventListener("focusin", chosen);
    root.addEventListener("click", chosen);
  }
  const markup = new TextDecoder().decode(data);
  if (root.markup !== markup) {
    root.innerHTML = markup;
    root.markup = markup;
  }
}
