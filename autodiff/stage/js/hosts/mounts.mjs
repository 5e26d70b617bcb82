// Streamlit's components v2 can run a mount's cleanup after a newer mount on the same element has begun: a rerun
// whose data changed while the module was still loading is overtaken, and its cleanup runs when it resolves. That
// cleanup must not take away the stage the newer mount kept; only the newest mount's cleanup may.

const newest = new WeakMap();

export function newestOnly(parentElement) {
  // call at each mount; wrap the cleanup the mount returns
  const generation = (newest.get(parentElement) || 0) + 1;
  newest.set(parentElement, generation);
  return (cleanup) => () => { if (newest.get(parentElement) === generation) cleanup(); };
}
