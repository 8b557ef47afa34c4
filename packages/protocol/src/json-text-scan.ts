import { mayLosePrecision, numberLiteralProblem } from './json-number.ts';

export interface JsonTextScanProblem {
  readonly code: 'TG_JSON_DUPLICATE_KEY' | 'TG_JSON_NUMBER_INVALID';
  /** JSON Pointer (RFC 6901) of the offending member or number. */
  readonly path: string;
  readonly message: string;
}

interface Frame {
  readonly object: boolean;
  /** The member being read (objects). */
  key: string;
  /** The element being read (arrays). */
  index: number;
  /** The keys seen so far, decoded; past LINEAR_KEYS, `seen` holds them. */
  readonly keys: string[];
  seen: Set<string> | null;
}

/** Past this many members an object's keys go into a Set (a linear search is quadratic). */
const LINEAR_KEYS = 16;
const NO_KEYS: string[] = [];

/**
 * What JSON.parse accepts in silence and the text still shows: a key written twice in one object
 * (JSON.parse keeps the last; I-JSON, RFC 7493 section 2.3, says names MUST be unique) and a
 * number literal its double does not mean (json-number.ts). Runs over text JSON.parse accepted, so
 * it can skip rather than validate: strings by indexOf, and only long numbers or numbers with an
 * exponent are looked at twice. One pass, no recursion (a document 100,000 deep must not
 * overflow), and it stops at the first problem.
 */
export function scanJsonText(text: string): JsonTextScanProblem | null {
  const stack: Frame[] = [];
  let top: Frame | undefined;
  let expectKey = false;
  const length = text.length;
  for (let at = 0; at < length; at++) {
    const char = text.charCodeAt(at);
    switch (char) {
      case 0x22: {
        // '"': the string ends at the next quote not escaped by an odd run of backslashes.
        let end = text.indexOf('"', at + 1);
        while (escaped(text, end)) end = text.indexOf('"', end + 1);
        if (expectKey && top !== undefined) {
          const found = addKey(top, text, at, end);
          if (found) return found(stack);
          expectKey = false;
        }
        at = end;
        break;
      }
      case 0x7b: // '{'
        top = { object: true, key: '', index: 0, keys: [], seen: null };
        stack.push(top);
        expectKey = true;
        break;
      case 0x5b: // '['
        top = { object: false, key: '', index: 0, keys: NO_KEYS, seen: null };
        stack.push(top);
        break;
      case 0x7d: // '}'
      case 0x5d: // ']'
        stack.pop();
        top = stack[stack.length - 1];
        expectKey = false;
        break;
      case 0x2c: // ','
        if (top?.object) expectKey = true;
        else if (top) top.index++;
        break;
      default:
        if (char === 0x2d || (char >= 0x30 && char <= 0x39)) {
          let end = at + 1;
          while (end < length && isNumberChar(text.charCodeAt(end))) end++;
          const literal = text.slice(at, end);
          if (mayLosePrecision(literal)) {
            const why = numberLiteralProblem(literal);
            if (why) return { code: 'TG_JSON_NUMBER_INVALID', ...located(stack, why) };
          }
          at = end - 1;
        }
    }
  }
  return null;
}

/** Whether the quote at `quote` is escaped (an odd run of backslashes before it). */
export function escaped(text: string, quote: number): boolean {
  let backslashes = 0;
  for (let at = quote - 1; text.charCodeAt(at) === 0x5c; at--) backslashes++;
  return backslashes % 2 === 1;
}

export function isNumberChar(char: number): boolean {
  // Digits, '.', 'e', 'E', '+', '-': what may follow a number's first character.
  return (
    (char >= 0x30 && char <= 0x39) || char === 0x2e || char === 0x65 || char === 0x45 || char === 0x2b || char === 0x2d
  );
}

/** Records a key of `frame`; a function building the problem when it was there already. */
function addKey(
  frame: Frame,
  text: string,
  start: number,
  end: number,
): ((stack: Frame[]) => JsonTextScanProblem) | null {
  const raw = text.slice(start + 1, end);
  // `"a"` and `"\u0061"` are one key: keys are compared decoded.
  const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
  frame.key = key;
  if (frame.seen === null) {
    if (frame.keys.includes(key)) return duplicate(key);
    frame.keys.push(key);
    if (frame.keys.length > LINEAR_KEYS) frame.seen = new Set(frame.keys);
    return null;
  }
  if (frame.seen.has(key)) return duplicate(key);
  frame.seen.add(key);
  return null;
}

function duplicate(key: string): (stack: Frame[]) => JsonTextScanProblem {
  const shown = JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key);
  return (stack) => ({
    code: 'TG_JSON_DUPLICATE_KEY',
    ...located(stack, `the key ${shown} appears more than once in one object (RFC 7493: names must be unique)`),
  });
}

function located(stack: Frame[], why: string): { path: string; message: string } {
  const path = stack
    .map((frame) => `/${frame.object ? frame.key.replaceAll('~', '~0').replaceAll('/', '~1') : frame.index}`)
    .join('');
  return { path, message: `${why}${path === '' ? '' : ` (at ${path})`}` };
}
