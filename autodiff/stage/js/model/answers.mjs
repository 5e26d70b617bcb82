// The answer grammar, DOM-free: the numbers a typed prediction says, and whether they are close enough. It is the
// grammar of course/grading.py's parse_numbers, which grades the same boxes on the server: both read every case of
// tests/fixtures/answer_grammar.json alike (tests/js/answers.test.mjs, tests/course/test_answer_grammar.py).

const ANSWER_CHARS = 2000;  // an answer box takes this much (grading.py's ANSWER_CHARS)
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;  // what Python's float() reads, less inf, nan and `_`

export function parseNumbers(text) {
  // `1, 2.5`, `[1, 2.5]` or `1 2.5` as numbers; a minus sign (U+2212, as the cards print it) is a minus. null when
  // it is not a list of finite numbers, or longer than a box takes
  if (text.length > ANSWER_CHARS) return null;
  const parts = text.replace(/\u2212/g, "-").replace(/[[\],]/g, " ").split(/\s+/).filter(Boolean);
  if (!parts.length || !parts.every((part) => DECIMAL.test(part))) return null;
  const values = parts.map(Number);
  return values.every(Number.isFinite) ? values : null;  // 1e400 is Infinity: not an answer
}

export function close(expected, given, rtol, atol) {
  return expected.length === given.length && expected.every((e, k) => Math.abs(given[k] - e) <= atol + rtol * Math.abs(e));
}
