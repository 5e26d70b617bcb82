// What a host loads before the first drawing: the pinned Graphviz (WebAssembly) and the graph's font.

let graphvizPromise = null;

export function loadGraphvizFrom(url) {
  if (!graphvizPromise) {
    graphvizPromise = import(url).then((module) => module.Graphviz.load());
  }
  return graphvizPromise;
}

const GRAPH_FONT = "Autodiff Graph Sans";  // stage.css names it first for the graph's text
let graphFontPromise = null;

export function loadGraphFont(urls) {
  // added to the document (a shadow root's @font-face is ignored) and loaded before the first drawing, so a label
  // is never drawn wider than its box; a face that cannot load leaves the next family of stage.css's list
  if (!graphFontPromise) {
    const faces = Object.entries(urls).map(([weight, url]) =>
      new FontFace(GRAPH_FONT, `url(${JSON.stringify(new URL(url, document.baseURI).href)})`, { weight }));
    faces.forEach((face) => document.fonts.add(face));
    graphFontPromise = Promise.all(faces.map((face) => face.load())).catch(() => null);
  }
  return graphFontPromise;
}
