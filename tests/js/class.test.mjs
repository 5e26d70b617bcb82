// A class's student's stage fills in what the room reveals without writing to the payload it was given (issue 53:
// "the payload is never written to after it is built"): the payload arrives deep-frozen, and after the room's
// reveals the stage's data holds every event, card, sum and part's runs of the whole payload, as does its tree; what
// was worked out of the redacted data (a folded part's inflows, kept per data) is worked out anew from the whole.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { fillIn } from "../../autodiff/stage/js/features/class.mjs";
import { checkPayload, unpack } from "../../autodiff/stage/js/model/contract.mjs";
import { placeBoxes, programTree, sentIntoParts } from "../../autodiff/stage/js/model/parts.mjs";

const FOLDER = process.env.STAGE_FIXTURES;
const FILLED = ["events", "cards", "sums", "groups"];  // what a reveal brings; nodes and edges stay masked

function deepFrozen(value) {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    Object.values(value).forEach(deepFrozen);
  }
  return value;
}

for (const name of ["seed", "loop", "mlp3"]) {
  test(`${name}: the room's reveals fill a new data, the payload received untouched`, async () => {
    assert.ok(FOLDER, "STAGE_FIXTURES names no folder: run tests/js/stage_fixtures.py FOLDER first");
    const fixture = JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8"));
    const whole = await unpack(fixture.payload);
    const { upto, redacted, revealed } = fixture.reveals;
    const received = deepFrozen(await unpack(redacted));
    const sent = JSON.stringify(received);
    assert.notDeepEqual(received.events, whole.events);  // what the room had not reached was not there
    const stage = { data: received, whole: upto + 1, lastFrame: {}, tree: programTree(received) };

    fillIn(stage, deepFrozen(revealed[0]));
    const reached = revealed[0].start + revealed[0].events.length;
    assert.deepEqual(stage.data.events.slice(0, reached), whole.events.slice(0, reached));
    assert.deepEqual(stage.data.events.slice(reached), received.events.slice(reached));  // still to come: blank
    fillIn(stage, deepFrozen(revealed[1]));

    assert.equal(JSON.stringify(received), sent);
    assert.notEqual(stage.data, received);
    for (const key of FILLED) assert.deepEqual(stage.data[key], whole[key], key);
    assert.equal(stage.whole, whole.events.length);
    assert.equal(stage.lastFrame, null);  // frames are worked out again, from the whole events
    for (const group of whole.groups) assert.deepEqual(stage.tree.groups.get(group.element).runs, group.runs);
  });
}

async function foldedStage(packed) {
  // a stage with its top level folded, as a student's stage follows a folded program (parts.test.mjs draws them so)
  const data = await unpack(packed);
  const stage = { data, tree: programTree(data), open: new Set(), whole: 0, lastFrame: null };
  placeBoxes(stage);
  return stage;
}

for (const name of ["loop", "mlp3"]) {
  test(`${name}, folded: once revealed, an edge into a part says what the whole payload's says`, async () => {
    const fixture = JSON.parse(readFileSync(join(FOLDER, `${name}.json`), "utf8"));
    const { upto, redacted, revealed } = fixture.reveals;
    const whole = await foldedStage(fixture.payload), student = await foldedStage(redacted);
    student.whole = upto + 1;
    const last = whole.data.events.length - 1, said = (stage) => [...sentIntoParts(stage, last)];
    assert.ok(said(whole).length >= 1, "the folded program has an edge into a part");
    assert.notDeepEqual(said(student), said(whole));  // followed so far: the sums to come are not there
    revealed.forEach((r) => fillIn(student, r));
    assert.deepEqual(said(student), said(whole));
  });
}

test("a class link without the words its stage says (another version's, or forged) is refused in words", async () => {
  const fixture = JSON.parse(readFileSync(join(FOLDER, "loop.json"), "utf8"));
  const data = await unpack(fixture.reveals.redacted);
  const said = { holds: "Reveal the answer first.", room_phases: { vote1: "Vote 1" }, student_phases: { vote1: "Answer it." } };
  const link = { role: "student", room: "ABCDEF", secret: "", api: "class/api/", join: "", asked: {}, mistakes: {},
    phase: "", histogram: false, said };
  checkPayload({ ...data, classroom: link });  // a whole link mounts
  const { said: _, ...older } = link;
  assert.throws(() => checkPayload({ ...data, classroom: older }), /class link lacks said: reload the page/);
  const { student_phases: __, ...fewer } = said;
  assert.throws(() => checkPayload({ ...data, classroom: { ...link, said: fewer } }), /lacks said\.student_phases:/);
});
