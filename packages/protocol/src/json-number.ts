/**
 * Whether a JSON number literal means what the double JSON.parse makes of it, where that matters.
 *
 * A double holds about 15.9 significant decimal digits, so JSON.parse rounds: `0.9999999999999999999`
 * and `1.0000000000000001` both become 1, `9007199254740993` becomes 9007199254740992, and
 * `1e-400` becomes 0. A schema's `integer` then accepts a value the client never wrote: 1 for
 * `0.9999999999999999999`. So a literal is refused when its double is 0 or a whole
 * number, and that double, as JSON.stringify writes it back (and as it is stored), is another
 * number than the literal:
 *
 * - underflow: `1e-400` and `2e-324` are read as 0;
 * - a fraction rounded to a whole number (`0.9999999999999999999`);
 * - a whole number past ±2^53 rounded to another (`9007199254740993`,
 *   `123456789012345678901234567890`). One the double writes back as itself passes: `1e23` is
 *   written back `1e+23`, and `9007199254740992` is held exactly.
 *
 * A fraction whose double is a fraction (`0.1`, `3.14159265358979323846`) passes: every reader of
 * the JSON means that double. `1.0` and `1e2` pass as the whole numbers 1 and 100, as JSON Schema
 * counts them (an integer is a number whose fractional part is zero). A literal past a double's
 * range (`1e400`) is left to checkJsonValue, which refuses it wherever a value comes from.
 *
 * A literal of at most 15 significant digits without an exponent rounds to a double that prints
 * back as itself (DBL_DIG is 15), so it cannot be mistaken for another number, and cannot
 * underflow: only longer literals, or literals with an exponent, need this check.
 */
export function numberLiteralProblem(literal: string): string | null {
  const value = Number(literal);
  if (!Number.isFinite(value)) return null;
  if (value !== 0 && !Number.isInteger(value)) return null;
  const written = decimalOf(literal);
  if (value === 0) {
    return written.digits === ''
      ? null
      : `the number ${clip(literal)} is too small for a double and would be read as 0`;
  }
  // String(value) is the shortest decimal that reads back as the same double (what JSON.stringify writes).
  const read = decimalOf(String(value));
  if (read.digits !== written.digits || read.exponent !== written.exponent) {
    return `the number ${clip(literal)} would be read as ${value}, which is not the number written`;
  }
  return null;
}

/** Whether a literal may round to another number (see numberLiteralProblem): long or exponent. */
export function mayLosePrecision(literal: string): boolean {
  if (literal.length < 16) return literal.includes('e') || literal.includes('E');
  return true;
}

/**
 * The literal as significant digits × 10^exponent, without the sign: no leading or trailing zeros
 * in `digits` (empty for zero), so two literals are the same number when both parts are equal.
 */
function decimalOf(literal: string): { digits: string; exponent: number } {
  const e = literal.search(/[eE]/);
  const mantissa = e === -1 ? literal : literal.slice(0, e);
  let exponent = e === -1 ? 0 : Number(literal.slice(e + 1));
  const point = mantissa.indexOf('.');
  const unsigned = mantissa.startsWith('-') ? mantissa.slice(1) : mantissa;
  let digits = unsigned.replace('.', '');
  if (point !== -1) exponent -= mantissa.length - point - 1;
  const leading = digits.search(/[1-9]/);
  if (leading === -1) return { digits: '', exponent: 0 };
  digits = digits.slice(leading);
  const trailing = digits.length - digits.search(/0*$/);
  digits = digits.slice(0, digits.length - trailing);
  // An exponent past 2^53 (`1e-99999999999999999999`) is rounded here, but such a literal is
  // either 0 or past a double's range, and then not compared.
  return { digits, exponent: exponent + trailing };
}

function clip(literal: string): string {
  return literal.length > 40 ? `${literal.slice(0, 37)}...` : literal;
}
