/**
 * A class's secrets where only this browser keeps them (issue 41). The private teacher link carries its key in the
 * address's fragment (`?room=…#teacher=…`): a browser sends no fragment in a request or a Referer, so no proxy or
 * log ever holds it. A student's seat is kept in this browser's storage, so a reload finds it again; the address
 * says the room only. While the page's session has no secret, it reports one it finds (finding none, it says
 * nothing: no run); the page says which seat to keep or to forget.
 * The contract (ui/class_secret.py's TypedDicts):
 *
 * @typedef {{room: string, seat: string}} KeptSeat
 * @typedef {{keep: (KeptSeat|null), forget: boolean, ask: boolean}} SecretOrders
 * @typedef {{role: ("teacher"|"student"), room: string, secret: string}} FoundSecret
 */
const STORE = "autodiff-class-seat";
const MAX_CHARS = 200; // a room code and a secret fit in far less: anything longer is not ours

function stored() {
  try {
    const kept = JSON.parse(localStorage.getItem(STORE) || "null");
    return kept && typeof kept.room === "string" && typeof kept.seat === "string" ? kept : null;
  } catch {
    return null; // storage refused (a private window) or not ours: no seat
  }
}

/** What this browser holds, reported: a teacher link's key (taken out of the address bar) whenever the fragment
 * carries one; the seat it keeps, when the page asks. */
function report(setStateValue, ask) {
  const teacher = new URLSearchParams(location.hash.slice(1)).get("teacher");
  const room = (new URLSearchParams(location.search).get("room") || "").slice(0, MAX_CHARS);
  if (teacher !== null) {
    history.replaceState(history.state, "", location.pathname + location.search);
    setStateValue("found", { role: "teacher", room, secret: teacher.slice(0, MAX_CHARS) });
    return;
  }
  const kept = ask ? stored() : null;
  if (kept) {
    setStateValue("found", { role: "student", room: kept.room.slice(0, MAX_CHARS), secret: kept.seat.slice(0, MAX_CHARS) });
  }
}

const listening = new WeakMap(); // parent element -> its hashchange listener: one per mounted reader

/** @param {{data: SecretOrders, parentElement: Element, setStateValue: (name: string, value: FoundSecret) => void}} component */
export default function ({ data, parentElement, setStateValue }) {
  try {
    if (data.keep) localStorage.setItem(STORE, JSON.stringify(data.keep));
    else if (data.forget) localStorage.removeItem(STORE);
  } catch {
    // storage refused: the seat lasts this page's session only (a reload asks to join again)
  }
  report(setStateValue, data.ask);
  // the teacher link pasted into this tab's address bar changes the fragment only: no page load, no run
  window.removeEventListener("hashchange", listening.get(parentElement));
  const onHash = () => report(setStateValue, false);
  listening.set(parentElement, onHash);
  window.addEventListener("hashchange", onHash);
  return () => {
    window.removeEventListener("hashchange", onHash);
    listening.delete(parentElement);
  };
}
