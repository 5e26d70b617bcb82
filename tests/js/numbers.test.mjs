// Numbers on the picture without a browser: the stage's fourDigits (and float32Text) writes every case of
// tests/fixtures/four_digits.json as Python's four_digits (and format_float) does (tests/app/test_four_digits.py), and a folded part's summary says its least and
// greatest values, from the numbers Python sent beside the text, with four significant digits, never `all 11` for 10.996227.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { summarised } from "../../autodiff/stage/js/model/dot.mjs";
import { float32Number, float32Text, fourDigits } from "../../autodiff/stage/js/model/numbers.mjs";

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

test("a float32 travels as the number the engine prints, a tie between two shortest forms taken to the even one", () => {
  // numpy prints 498200.125 as 498200.12 and 498203.375 as 498203.38; toPrecision takes the larger of a tie
  for (const { value, text } of FIXTURE.float32) assert.equal(float32Number(value), Number(text), `${value}`);
});

test("a number written again, after every other, reads as it did the first time (each is written once, 0 and -0 apart)", () => {
  // the stage remembers each number's words: a replay says the same values again and again
  for (const [write, cases] of [[fourDigits, CASES], [float32Text, FIXTURE.float32]]) {
    const first = cases.map(({ value }) => write(value));
    assert.deepEqual([...cases].reverse().map(({ value }) => write(value)), first.reverse());
  }
});

test("a number four digits cannot tell from a tie at seventeen is rounded from its exact value, as Python rounds", () => {
  // 123.45 is 123.4500000000000028… (17 digits: 1.2345000000000000e+2, a tie to look at): up; 10.125 is a tie: even
  assert.equal(fourDigits(123.45), "123.5");
  assert.equal(fourDigits(10.125), "10.12");
  assert.equal(fourDigits(1.2345), "1.234");  // 1.2344999999999999…: down, without the exact digits
});

test("a summary says its range with four significant digits, from the numbers sent beside the text", () => {
  const five = (v) => `[${Array(5).fill(v).join(", ")}]`;
  const all = (v) => ({ shape: [5], low: v, high: v });
  assert.equal(summarised(`grad ${five("10.996227")}`, all(10.996227)), "grad [5] all 11.00");
  assert.equal(summarised(`grad ${five("11.00")}`, all(10.996227)), "grad [5] all 11.00");  // never `11`
  assert.equal(summarised(five("0.5"), all(0.5)), "[5] all 0.5");
  assert.equal(summarised("[[5.7510843, 3.5971968, 10.31901], [-10.567323, -7.689759, -88.13186]] · kept",
    { shape: [2, 3], low: -88.13186, high: 10.31901 }), "[2, 3] from -88.13 to 10.32 · kept");
  assert.equal(summarised("[1.0, 2.0, 3.0]", null), "[1.0, 2.0, 3.0]");  // four numbers or fewer are said whole
});

test("a summary reads no number of its text: the numbers beside it say the range, and without them nothing is summarised", () => {
  // digits that say otherwise than the numbers, and no digits at all: the numbers are what is said
  const written = "grad [0.5000, 0.5000, 0.5000, 0.5000, 0.5000]";
  assert.equal(summarised(written, { shape: [5], low: 0.25, high: 0.75 }), "grad [5] from 0.25 to 0.75");
  assert.equal(summarised("value [[?, ?, ?], [?, ?, ?]]", { shape: [2, 3], low: -1.5, high: 2 }), "value [2, 3] from -1.5 to 2");
  // a large tensor Python already said as its shape and range (a shape of five numbers is not a tensor of five)
  assert.equal(summarised("value [2, 3, 4, 5, 6] from -1.0 to 1.0", null), "value [2, 3, 4, 5, 6] from -1.0 to 1.0");
});
