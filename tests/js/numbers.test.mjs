// Numbers on the picture without a browser: the stage's fourDigits (and float32Text) writes every case of
// tests/fixtures/four_digits.json as Python's four_digits (and format_float) does (tests/app/test_four_digits.py), and a folded part's summary says its least and
// greatest values with four significant digits, never `all 11` for 10.996227.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { summarised } from "../../autodiff/stage/js/model/dot.mjs";
import { float32Text, fourDigits } from "../../autodiff/stage/js/model/numbers.mjs";

const FIXTURE = JSON.parse(readFileSync(new URL("../fixtures/four_digits.json", import.meta.url), "utf8"));
const CASES = FIXTURE.cases;

for (const { value, text } of CASES) {
  test(`${Object.is(value, -0) ? "-0" : value} is written ${text}`, () => {
    assert.equal(fourDigits(value), text);
  });
}

for (const { value, text } of FIXTURE.float32) {
  test(`the float32 ${Object.is(value, -0) ? "-0" : value} is written ${text}, as the engine prints it`, () => {
    assert.equal(float32Text(value), text);
  });
}

test("a summary says its range with four significant digits, as Python wrote them or rounded here", () => {
  const five = (v) => `[${Array(5).fill(v).join(", ")}]`;
  assert.equal(summarised(`grad ${five("10.996227")}`), "grad [5] all 11.00");
  assert.equal(summarised(`grad ${five("11.00")}`), "grad [5] all 11.00");  // four_digits wrote it: kept, not `11`
  assert.equal(summarised(five("0.5")), "[5] all 0.5");
  assert.equal(summarised("[[5.7510843, 3.5971968, 10.31901], [-10.567323, -7.689759, -88.13186]]"),
    "[2, 3] from -88.13 to 10.32");
  assert.equal(summarised("[1.0, 2.0, 3.0]"), "[1.0, 2.0, 3.0]");  // four numbers or fewer are said whole
});
