// The stage follows its host's theme (light or dark), as the host or the viewer's system switches it.

import { stickyBar } from "./viewport.mjs";

export function followTheme(stage, switched) {
  // the viewer may switch the theme at any time (the host's menu, or the system's): the host's colours live on an
  // ancestor (its class or style), so watch those attributes up the tree, through shadow roots, and the system's.
  // `switched`, if given, runs at each switch after this (the Training stage paints its canvases again)
  const { root } = stage;
  const apply = () => {
    const dark = isDark(root);
    const changed = dark !== root.classList.contains("dark");
    if (changed) root.classList.toggle("dark", dark);
    const bar = stickyBar();  // the stage scrolls under it: it wears the page's own background, opaque
    if (bar) bar.style.backgroundColor = getComputedStyle(document.body).backgroundColor;
    return changed;
  };
  const update = () => { if (apply() && switched) switched(); };
  apply();
  stage.theme = new MutationObserver(update);
  for (let node = stage.parent; node; node = node.parentElement || (node.getRootNode && node.getRootNode().host)) {
    stage.theme.observe(node, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  }
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", update, { signal: stage.listeners.signal });
}

// where each host says its theme: the attributes it switches, and its background colour's variable (Streamlit,
// JupyterLab, VS Code); any other host (marimo, Colab, a saved replay) by the first opaque background behind the stage
const THEME_ATTRIBUTES = ["class", "style", "data-theme", "data-jp-theme-light", "data-jp-theme-name"];

const HOST_BACKGROUNDS = ["--st-background-color", "--jp-layout-color0", "--vscode-editor-background"];

export function isDark(root) {
  const style = getComputedStyle(root);
  for (const name of HOST_BACKGROUNDS) {
    const light = lightness(style.getPropertyValue(name).trim());
    if (light !== null) return light < 128;
  }
  // up through the page, and out of a shadow root through its host (marimo draws a widget inside one)
  for (let node = root.parentElement; node; node = node.parentElement || (node.getRootNode && node.getRootNode().host)) {
    const light = lightness(getComputedStyle(node).backgroundColor);
    if (light !== null) return light < 128;
  }
  return window.matchMedia("(prefers-color-scheme: dark)").matches;  // nothing behind it says: the viewer's system
}

function lightness(colour) {
  // a colour's luma (0-255) from `#rrggbb`, `rgb(a)(…)` or `color(srgb r g b / a)` (0-1 each: how Chromium
  // computes a colour a page wrote in oklch, as marimo's themes are); null when it is transparent or not a colour
  let channels = null;
  if (/^#[0-9a-f]{6}/i.test(colour)) {
    channels = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16)).concat(1);
  } else if (colour.startsWith("rgb")) {
    const parts = (colour.match(/[\d.]+/g) || []).map(Number);
    if (parts.length >= 3) channels = parts.length > 3 ? parts.slice(0, 4) : parts.concat(1);
  } else if (colour.startsWith("color(srgb ")) {
    const parts = (colour.slice("color(srgb ".length).match(/[\d.]+/g) || []).map(Number);
    if (parts.length >= 3) channels = parts.slice(0, 3).map((c) => c * 255).concat(parts.length > 3 ? parts[3] : 1);
  }
  if (!channels || channels[3] === 0) return null;
  return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2];
}
