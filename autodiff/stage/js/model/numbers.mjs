// Numbers as the picture writes them, DOM-free: four significant digits, as autodiff/stage/format.py's four_digits
// writes them in Python (both read tests/fixtures/four_digits.json).

const SIGNIFICANT = 4;
export const BRIEF_ABOVE = 4;  // a value with more numbers is said to four significant digits each (format.py's BRIEF_ABOVE)

function remembered(write) {
  // `write`, each different number written once: a replay says its values again and again (a 5,000-node one has
  // some 11,000 gradients of about 1,000 different values), and a number's words cost microseconds. Zero is written
  // each time: a Map takes -0 for 0, which are written apart
  const said = new Map();
  return (value) => {
    if (value === 0) return write(value);
    let text = said.get(value);
    if (text === undefined) {
      if (said.size >= 65_536) said.clear();  // a bound: a long session's numbers do not pile up
      text = write(value);
      said.set(value, text);
    }
    return text;
  };
}

export const fourDigits = remembered((value) => {
  // `value` as Python's `format(value, ".4g")`, but `11.00` for 10.996227, never `11`, which reads as a whole number
  // print would not show: trailing zeros go only where the value is that number (in float32)
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  const text = pythonGeneral(value, false);
  return Math.fround(Number(text)) === Math.fround(value) ? text : pythonGeneral(value, true);
});

function pythonGeneral(value, keepZeros) {
  // Python's "g" format to four digits ("#" when `keepZeros`): fixed from 1e-4 up to 1e4, else an exponent of at
  // least two digits
  const sign = value < 0 || Object.is(value, -0) ? "-" : "";
  const [digits, exponent] = roundedDigits(Math.abs(value));
  const trim = (fraction) => (keepZeros ? fraction : fraction.replace(/0+$/, ""));
  const joined = (whole, fraction) => (fraction || keepZeros ? `${whole}.${fraction}` : whole);
  if (-4 <= exponent && exponent < SIGNIFICANT) {
    const padded = exponent < 0 ? "0".repeat(-exponent) + digits : digits;
    const point = Math.max(exponent, 0) + 1;
    return sign + joined(padded.slice(0, point), trim(padded.slice(point)));
  }
  const power = `${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  return `${sign}${joined(digits[0], trim(digits.slice(1)))}e${power}`;
}

function roundedDigits(magnitude) {
  // the first four significant digits of `magnitude` and its exponent, rounded half to even on its exact decimal
  // value as Python rounds (`toPrecision` rounds a tie up: 10.125 would read 10.13, Python says 10.12). A double's
  // exact value is long, but one that is not a tie is told from it well within 100 digits
  if (magnitude === 0) return ["0".repeat(SIGNIFICANT), 0];
  // seventeen digits, correctly rounded, tell every number but a near tie (`5` then zeros past the fourth digit)
  // from its rounding; only those need the exact value's digits, which cost a long conversion
  let [mantissa, power] = magnitude.toExponential(16).split("e");
  if (/^\d\.\d{3}50*$/.test(mantissa)) [mantissa, power] = magnitude.toExponential(99).split("e");
  const all = mantissa.replace(".", "");
  let digits = all.slice(0, SIGNIFICANT), exponent = Number(power);
  const rest = all.slice(SIGNIFICANT);
  const tie = /^50*$/.test(rest);
  if (rest[0] > "5" || (rest[0] === "5" && !tie) || (tie && Number(digits.at(-1)) % 2 === 1)) {
    digits = String(Number(digits) + 1);
    if (digits.length > SIGNIFICANT) { digits = digits.slice(0, SIGNIFICANT); exponent += 1; }
  }
  return [digits, exponent];
}

export const float32Text = remembered((value) => {
  // a float32 as the engine prints it (numpy's shortest round-trip digits, autodiff/printing.py's format_float):
  // positional from 1e-4 up to 1e6 with a decimal always (`5.0`, `166.60059`), else with an exponent (`1.306e-05`)
  const f = Math.fround(value);
  if (Number.isNaN(f)) return "nan";
  if (!Number.isFinite(f)) return f > 0 ? "inf" : "-inf";
  if (f === 0) return Object.is(f, -0) ? "-0.0" : "0.0";
  const [shortest, exponent] = shortestForm(f);
  const digits = shortest.replace(/0+$/, "") || "0";
  const sign = f < 0 ? "-" : "";
  if (1e-4 <= Math.abs(f) && Math.abs(f) < 1e6) {
    if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
    return `${sign}${digits.slice(0, exponent + 1).padEnd(exponent + 1, "0")}.${digits.slice(exponent + 1) || "0"}`;
  }
  const power10 = `${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${power10}`;
});

export function float32Number(value) {
  // a float32 as the number the engine prints (`0.18561745`, not its double's 0.18561745196580887), as Python sends
  // numbers beside a text (format.py's tensor_range): what its text reads back as
  const f = Math.fround(value);
  if (!Number.isFinite(f) || f === 0) return f;
  const [digits, exponent] = shortestForm(f);
  return Math.sign(f) * Number(`${digits}e${exponent - digits.length + 1}`);
}

function shortestForm(f) {
  // the float32 `f` (finite, not zero) in the fewest significant digits that read back as it, and the exponent of
  // the first, as numpy prints it: where two such are as near, the even one (498200.125 prints 498200.12), where
  // `toExponential` takes the larger. A float32's exact value differs from a tie within its first ten digits or so,
  // so twenty-five correctly rounded digits tell one
  const magnitude = Math.abs(f), precision = shortestDigits(f);
  const [mantissa, power] = magnitude.toExponential(precision - 1).split("e");
  const [longer, longerPower] = magnitude.toExponential(precision + 16).split("e");
  const exact = longer.replace(".", "");
  const even = exact.slice(0, precision);
  if (/^50*$/.test(exact.slice(precision)) && Number(even.at(-1)) % 2 === 0 &&
      Math.fround(Number(`${even}e${Number(longerPower) - precision + 1}`)) === magnitude) {
    return [even, Number(longerPower)];
  }
  return [mantissa.replace(".", ""), Number(power)];
}

function shortestDigits(f) {
  // the fewest significant digits that read back as the float32 `f` (finite, not zero)
  let precision = 1;
  while (precision < 9 && Math.fround(Number(f.toPrecision(precision))) !== f) precision++;
  return precision;
}

export function significant(written) {
  // how many significant digits a number's text writes (`0.03280` 4, `1.3061234e-05` 8)
  return written.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").length;
}

export function shaped(flat, shape) {
  // a flat row of numbers nested as the tensor of `shape` is (a scalar, shape [], bare), as Python sends four numbers
  // or fewer (format.py's tensor_range)
  if (!shape.length) return flat[0];
  const size = flat.length / shape[0];
  return Array.from({ length: shape[0] }, (_, k) => shaped(flat.slice(k * size, (k + 1) * size), shape.slice(1)));
}

export function nested(flat, shape, write) {
  // a flat row of numbers in the tensor's shape, each written by `write`, as Python writes a tensor (`[[1.0, 2.0]]`;
  // a scalar, shape [], bare)
  if (!shape.length) return write(flat[0]);
  const size = flat.length / shape[0];
  const rows = Array.from({ length: shape[0] }, (_, k) => nested(flat.slice(k * size, (k + 1) * size), shape.slice(1), write));
  return `[${rows.join(", ")}]`;
}
