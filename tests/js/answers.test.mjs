// The answer grammar without a browser: the stage's parseNumbers reads every case of
// tests/fixtures/answer_grammar.json as course/grading.py's parse_numbers does (tests/course/test_answer_grammar.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { close, parseNumbers } from "../../autodiff/stage/js/model/answers.mjs";

const GRAMMAR = JSON.parse(readFileSync(new URL("../fixtures/answer_grammar.json", import.meta.url), "utf8"));

test("the grammar has the issue's cases", () => {
  const typed = GRAMMAR.cases.map((c) => c.typed);
  for (const must of ["−1", "-1", "1e-3", "[5, 7]", "5;7", "5, 7", "inf", "-inf", "nan", "", "abc", "1,,2"]) {
    assert.ok(typed.includes(must), `no case for ${JSON.stringify(must)}`);
  }
});

for (const { typed, numbers } of GRAMMAR.cases) {
  test(`${JSON.stringify(typed)} reads as ${JSON.stringify(numbers)}`, () => {
    assert.deepEqual(parseNumbers(typed), numbers);
  });
}

test("an answer longer than the box takes is refused, as the server refuses it", () => {
  assert.equal(parseNumbers("1 ".repeat(1001)), null);  // 2,002 characters: over 2,000
  assert.deepEqual(parseNumbers("1 ".repeat(1000)), Array(1000).fill(1));
});

test("a typed −1 is close to −1, within the stage's tolerance", () => {
  assert.ok(close([-1], parseNumbers("−1"), 1e-3, 1e-4));
  assert.ok(!close([1], parseNumbers("−1"), 1e-3, 1e-4));
});
