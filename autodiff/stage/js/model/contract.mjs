// The contract with Python, DOM-free: the payload's keys and event kinds, checked on arrival, its packed part
// unpacked, and its nodes looked up by NodeId.

/**
 * The contract with Python (`StagePayload` in payload.py, each event kind in events.py): a test checks that
 * both sides name the same kinds and keys, at every level.
 * @typedef {{shape: number[], low: number, high: number}} TensorRange
 * @typedef {(TensorRange|number|Array<*>)} TensorNumbers
 * @typedef {{element: string, id: number, name: string, title: string, value: string,
 *   value_range: (TensorNumbers|null), detail: string, state: string, grad: string, grad_range: (TensorNumbers|null),
 *   grad_kind: ("leaf"|"op"|"none"), wide: string, wide_range: (TensorNumbers|null), group: string}} StageNode
 * @typedef {{element: string, source: number, target: number, tracked: boolean, label: string,
 *   label_range: (TensorNumbers|null)}} StageEdge
 * @typedef {{node: number, name: string, value: string, value_range: (TensorNumbers|null)}} GroupFlow
 * @typedef {{first: number, last: number, steps: number, came_in: GroupFlow[], sent: GroupFlow[]}} GroupRun
 * @typedef {{element: string, name: string, kind: ("function"|"loop"|"iteration"|"scope"|"line"|"repeat"|"range"),
 *   parent: string, summary: string, output: number, nodes: number, steps: number, lines: (number[]|null),
 *   runs: GroupRun[]}} StageGroup
 * @typedef {{kind: "TapeBuilt", text: string, nodes: number[]}} TapeBuiltEvent
 * @typedef {{kind: "StepStarted", text: string, node: number, op: string, order: number, parents: number[],
 *   rules: string[]}} StepStartedEvent
 * @typedef {{kind: "Recomputed", text: string, node: number}} RecomputedEvent
 * @typedef {{kind: "GradientRegistered", text: string, node: number, source: (number|null), edge: (string|null),
 *   value: string, value_range: (TensorNumbers|null), total: string, total_range: (TensorNumbers|null),
 *   total_full: string, shape: string, accumulated: boolean,
 *   numbers: (number[]|null)}} GradientRegisteredEvent
 * @typedef {{kind: "GradientConsumed", text: string, node: number, kept: boolean}} GradientConsumedEvent
 * @typedef {{kind: "SavedStateFreed", text: string, node: number}} SavedStateFreedEvent
 * @typedef {{kind: "SweepFreed", text: string, nodes: number[]}} SweepFreedEvent
 * @typedef {{kind: "BackwardFinished", text: string}} BackwardFinishedEvent
 * @typedef {(TapeBuiltEvent|StepStartedEvent|RecomputedEvent|GradientRegisteredEvent|GradientConsumedEvent|
 *   SavedStateFreedEvent|SweepFreedEvent|BackwardFinishedEvent)} StageEvent
 * @typedef {{node: number, input: string, rule: string, derivative: string, derivative_value: string,
 *   product: string, sends: string}} CardInput
 * @typedef {{node: number, title: string, upstream: string, inputs: CardInput[]}} StepCard
 * @typedef {{value: string, path: string}} SumTerm
 * @typedef {{node: number, terms: SumTerm[], total: string, text: string}} GradientSum
 * @typedef {{lines: Array<Array<Array<(string|null)>>>, spans: Object<string, number[]>}} StageProgram
 * @typedef {{holds: string, room_phases: Object<string, string>, student_phases: Object<string, string>}} ClassWords
 * @typedef {{role: ("teacher"|"student"), room: string, secret: string, api: string, join: string,
 *   asked: Object<string, number>, mistakes: Object<string, string>, phase: string, histogram: boolean,
 *   said: ClassWords}} ClassroomLink
 * @typedef {{start: number, events: StageEvent[], cards: Object<string, StepCard>,
 *   sums: Object<string, GradientSum>, runs: GroupRun[][]}} RevealedEvents
 * @typedef {{mode: ("static"|"replay"), rankdirs: string[], fonts: number[],
 *   nodes: StageNode[], edges: StageEdge[], groups: StageGroup[], events: StageEvent[], index: number,
 *   presenter: boolean, embed: boolean, legend: Object<string, string>, words: Object<string, string>,
 *   graphviz_url: string, graph_fonts: Object<string, string>, signature: string, program: (StageProgram|null), cards: Object<string, StepCard>,
 *   sums: Object<string, GradientSum>, exercise: boolean, tolerance: number[],
 *   classroom: (ClassroomLink|null), file_stem: string}} StagePayload
 */
const PAYLOAD_KEYS = ["mode", "rankdirs", "fonts", "nodes", "edges", "groups", "events", "index",
  "presenter", "embed", "legend", "words", "graphviz_url", "graph_fonts", "signature", "program", "cards", "sums", "exercise",
  "tolerance", "classroom", "file_stem"];

const EVENT_KINDS = new Set(["TapeBuilt", "StepStarted", "Recomputed", "GradientRegistered", "GradientConsumed",
  "SavedStateFreed", "SweepFreed", "BackwardFinished"]);

export function checkPayload(data) {
  const missing = PAYLOAD_KEYS.filter((key) => !(key in data));
  if (missing.length) throw new Error(`This stage's data lacks ${missing.join(", ")}.`);
  if (data.classroom) checkLink(data.classroom);
  const unknown = data.events.find((e) => !EVENT_KINDS.has(e.kind));
  if (unknown) {
    throw new Error(`This stage cannot replay an event of kind "${unknown.kind}": it knows ${[...EVENT_KINDS].join(", ")}.`);
  }
}

const LINK_KEYS = ["role", "room", "secret", "api", "join", "asked", "mistakes", "phase", "histogram", "said"];
const CLASS_WORDS = ["holds", "room_phases", "student_phases"];

function checkLink(link) {
  // a class link from another version of the app (or forged) is refused in words here, not by a status line that
  // throws in the middle of a lesson: its words (classroom/words.py) are read at a refusal, a vote, a reveal
  const missing = LINK_KEYS.filter((key) => !(key in link));
  const { said } = link;
  if (said && typeof said === "object") missing.push(...CLASS_WORDS.filter((key) => !(key in said)).map((key) => `said.${key}`));
  else if (!missing.includes("said")) missing.push("said");
  if (missing.length) throw new Error(`This stage's class link lacks ${missing.join(", ")}: reload the page to join the class again.`);
}

export async function unpack(data) {
  // the heavy part travels gzip-compressed in one base64 text (payload.py's `wire`): a 5,000-node replay is 7 MB of
  // JSON, mostly the same words again
  if (!("packed" in data)) return data;
  const { packed, ...rest } = data;
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return { ...JSON.parse(await new Response(stream).text()), ...rest };
}

const nodeIndex = new WeakMap();  // each payload's nodes by NodeId, made once: a 5,000-node replay looks up often

export function nodeById(data, id) {
  let index = nodeIndex.get(data.nodes);
  if (!index) nodeIndex.set(data.nodes, (index = new Map(data.nodes.map((n) => [n.id, n]))));
  return index.get(id);
}

export function nameOf(data, id) {
  const node = nodeById(data, id);
  return node ? node.name : `NodeId(${id})`;
}
