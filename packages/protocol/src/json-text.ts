import { scanJsonText } from './json-text-scan.ts';

export type JsonTextProblemCode = 'TG_MALFORMED_JSON' | 'TG_JSON_DUPLICATE_KEY' | 'TG_JSON_NUMBER_INVALID';

export interface JsonTextProblem {
  readonly code: JsonTextProblemCode;
  /** JSON Pointer (RFC 6901) of the offending member or number; '' when the text is not JSON. */
  readonly path: string;
  /** What is wrong, as the end of a sentence: "the request body <message>". */
  readonly message: string;
}

export type JsonTextResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: JsonTextProblem };

/**
 * The one reading of JSON text every front door uses (REST and /mcp bodies, stdio lines): JSON.parse,
 * then what it accepts but must not be taken in —
 *
 * - a `__proto__` key, or a `constructor` object with a `prototype` key (what secure-json-parse,
 *   Fastify's parser, refuses: a later merge would rewrite an object's prototype);
 * - a key written twice in one object, at any depth (TG_JSON_DUPLICATE_KEY; JSON.parse keeps the
 *   last, so `{"cents":true,"cents":5}` passed a schema the first member would fail);
 * - a number literal whose double is not the number written, where that makes a whole number
 *   (TG_JSON_NUMBER_INVALID; json-number.ts).
 *
 * The value is then checked by checkJsonValue like any other (depth, NUL, surrogates, 1e400).
 */
export function parseJsonText(text: string): JsonTextResult {
  if (text.length === 0) return refused('TG_MALFORMED_JSON', '', 'is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return refused('TG_MALFORMED_JSON', '', `is not valid JSON: ${(error as Error).message}`);
  }
  // Only a text that spells the key (escapes included, as secure-json-parse matches them) is
  // walked, and without recursion: a document 100,000 deep parses, and must not overflow here.
  if (PROTO_KEY.test(text) || CONSTRUCTOR_KEY.test(text)) {
    const why = prototypeKeyProblem(value);
    if (why) return refused('TG_MALFORMED_JSON', '', why);
  }
  const found = mayHideAProblem(text, value) ? scanJsonText(text) : null;
  if (found) return refused(found.code, found.path, found.message);
  return { ok: true, value };
}

/**
 * Whether the full scan (json-text-scan.ts) must run: a typical tools/call body has neither a long
 * number nor a repeated key, and telling so costs two native passes and a walk of its few
 * objects, where the scan costs about as much as JSON.parse itself. A key written twice leaves
 * the value one key short of the text: every key of the text is a `"` followed by a `:`, so when
 * the value has as many keys as the text has such colons (those inside strings counted too, which
 * only ever make the scan run), no key was written twice.
 */
function mayHideAProblem(text: string, value: unknown): boolean {
  return mayHoldLongNumber(text) || colonsAfterQuotes(text) !== keysOf(value);
}

/**
 * A number that may lose precision (json-number.ts) has 16 digits and points in a row, or an `e`
 * after a digit run that follows a separator (`:`, `,`, `[`, whitespace, or `-` after one):
 * `"2a9e-3"` in a UUID is not one. Strings that look alike only cost a scan that finds nothing. A
 * loop, not a regular expression: `/[\d.]{16}/` alone costs more than the scan it would spare.
 */
function mayHoldLongNumber(text: string): boolean {
  let run = 0;
  let numberLike = false;
  let before = 0x20;
  let beforeThat = 0x20;
  for (let at = 0; at < text.length; at++) {
    const char = text.charCodeAt(at);
    if ((char >= 0x30 && char <= 0x39) || char === 0x2e) {
      if (run === 0) numberLike = isSeparator(before) || (before === 0x2d && isSeparator(beforeThat));
      if (++run === 16) return true;
    } else {
      if (run > 0 && numberLike && (char === 0x65 || char === 0x45)) return true;
      run = 0;
    }
    beforeThat = before;
    before = char;
  }
  return false;
}

function isSeparator(char: number): boolean {
  return (
    char === 0x3a || char === 0x2c || char === 0x5b || char === 0x20 || char === 0x0a || char === 0x0d || char === 0x09
  );
}

function colonsAfterQuotes(text: string): number {
  let count = 0;
  for (let at = text.indexOf(':'); at !== -1; at = text.indexOf(':', at + 1)) {
    let before = at - 1;
    // JSON's whitespace: space, tab, line feed, carriage return.
    for (let char = text.charCodeAt(before); char === 0x20 || char === 0x09 || char === 0x0a || char === 0x0d; ) {
      char = text.charCodeAt(--before);
    }
    if (text.charCodeAt(before) === 0x22) count++;
  }
  return count;
}

function keysOf(root: unknown): number {
  let count = 0;
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') pending.push(item);
      continue;
    }
    for (const key in node) {
      count++;
      const item = (node as Record<string, unknown>)[key];
      if (item !== null && typeof item === 'object') pending.push(item);
    }
  }
  return count;
}

function refused(code: JsonTextProblemCode, path: string, message: string): JsonTextResult {
  return { ok: false, problem: { code, path, message } };
}

const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR_KEY =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

function prototypeKeyProblem(root: unknown): string | null {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    // A loop, not push(...): a 1 MiB body can hold an array of 500,000 items, past the
    // arguments a call can take.
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    if (Object.hasOwn(node, '__proto__')) {
      return 'has a "__proto__" key, which is refused (it would rewrite an object\'s prototype)';
    }
    const made = (node as { constructor?: unknown }).constructor;
    if (Object.hasOwn(node, 'constructor') && made !== null && typeof made === 'object') {
      if (Object.hasOwn(made, 'prototype'))
        return 'has a "constructor" object with a "prototype" key, which is refused';
    }
    for (const key in node) pending.push((node as Record<string, unknown>)[key]);
  }
  return null;
}
