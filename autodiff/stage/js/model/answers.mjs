// The answer grammar, DOM-free: the numbers a typed prediction says, and whether they are close enough.

export function parseNumbers(text) {
  if (text.length > 2000) return null;
  const parts = text.replace(/[[\],]/g, " ").split(/\s+/).filter(Boolean);
  if (!parts.length) return null;
  const values = parts.map(Number);
  return values.some((v) => Number.isNaN(v)) ? null : values;
}

export function close(expected, given, rtol, atol) {
  return expected.length === given.length && expected.every((e, k) => Math.abs(given[k] - e) <= atol + rtol * Math.abs(e));
}
