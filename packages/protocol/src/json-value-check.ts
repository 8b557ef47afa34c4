import { ErrorCode, type JsonRpcError } from './json-rpc.ts';

/** Containers (objects and arrays) nested deeper than this are refused; the outermost is level 1. */
export const MAX_JSON_DEPTH = 64;

export type JsonValueProblemCode = 'TG_JSON_TOO_DEEP' | 'TG_JSON_STRING_INVALID' | 'TG_JSON_NUMBER_INVALID';

export interface JsonValueProblem {
  readonly code: JsonValueProblemCode;
  /** JSON Pointer (RFC 6901) of the offending value, '' for the value itself. */
  readonly path: string;
  readonly message: string;
}

export interface JsonValueCheckOptions {
  readonly maxDepth?: number;
}

interface Frame {
  readonly value: unknown;
  readonly depth: number;
  readonly key: string | null;
  readonly parent: Frame | null;
}

/**
 * The one check of decoded JSON that every front door (REST bodies and parameters, MCP over HTTP,
 * MCP over stdio) runs before a value goes further. It refuses what JSON can carry but the rest of
 * the system cannot hold:
 *
 * - nesting deeper than MAX_JSON_DEPTH: JSON.stringify (node-pg's jsonb encoding, fingerprints) and
 *   Postgres's jsonb parser both recurse, and fail with a stack overflow far below what JSON.parse
 *   accepts;
 * - a string or object key with U+0000 or an unpaired surrogate: Postgres text cannot store NUL,
 *   jsonb refuses both `\u0000` and a lone `\ud800`, and UTF-8 cannot encode a lone surrogate at all
 *   (node-pg would silently send U+FFFD in its place);
 * - a number that is not finite: JSON.parse reads `1e400` as Infinity, which JSON.stringify writes
 *   back as null — a silent change of the value.
 *
 * Pure and iterative (a hostile value cannot overflow this check's own stack); it stops at the
 * first problem and names where it is as a JSON Pointer.
 */

export function checkJsonValue(value: unknown, options: JsonValueCheckOptions = {}): JsonValueProblem | null {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  const root: Frame = { value, depth: 0, key: null, parent: null };
  const leaf = leafProblem(value);
  if (leaf) return problem(leaf[0], root, leaf[1]);
  if (value === null || typeof value !== 'object') return null;
  if (maxDepth < 1) return problem('TG_JSON_TOO_DEEP', root, tooDeep(maxDepth));
  // Only containers get a frame (a 1 MiB body has ~100,000 values); leaves are checked in place.
  const stack: Frame[] = [{ value, depth: 1, key: null, parent: null }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const container = frame.value as Record<string, unknown> | unknown[];
    const keys = Array.isArray(container) ? null : Object.keys(container);
    const length = keys === null ? (container as unknown[]).length : keys.length;
    for (let index = length - 1; index >= 0; index--) {
      const key = keys === null ? null : (keys[index] as string);
      if (key !== null) {
        const why = stringProblem(key);
        if (why) return problem('TG_JSON_STRING_INVALID', child(frame, key), `an object key ${why}`);
      }
      const item = key === null ? (container as unknown[])[index] : (container as Record<string, unknown>)[key];
      const found = leafProblem(item);
      if (found) return problem(found[0], child(frame, key ?? String(index)), found[1]);
      if (item === null || typeof item !== 'object') continue;
      const next: Frame = { value: item, depth: frame.depth + 1, key: key ?? String(index), parent: frame };
      if (next.depth > maxDepth) return problem('TG_JSON_TOO_DEEP', next, tooDeep(maxDepth));
      stack.push(next);
    }
  }
  return null;
}

function leafProblem(value: unknown): [JsonValueProblemCode, string] | null {
  if (typeof value === 'string') {
    const why = stringProblem(value);
    return why ? ['TG_JSON_STRING_INVALID', `a string ${why}`] : null;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    return ['TG_JSON_NUMBER_INVALID', 'a number is outside the range of a double (e.g. 1e400)'];
  }
  return null;
}

function child(parent: Frame, key: string): Frame {
  return { value: undefined, depth: parent.depth + 1, key, parent };
}

function tooDeep(maxDepth: number): string {
  return `the JSON is nested deeper than ${maxDepth} levels`;
}

function stringProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains U+0000 (NUL), which Postgres cannot store';
  if (!text.isWellFormed()) return 'contains an unpaired UTF-16 surrogate, which is not a Unicode character';
  return null;
}

function problem(code: JsonValueProblemCode, frame: Frame, message: string): JsonValueProblem {
  const path = pointerOf(frame);
  return { code, path, message: `${message}${path === '' ? '' : ` (at ${path})`}` };
}

function pointerOf(frame: Frame): string {
  const parts: string[] = [];
  for (let at: Frame | null = frame; at !== null && at.key !== null; at = at.parent) {
    // A key that is itself invalid is shown escaped, so the pointer stays printable.
    const key = stringProblem(at.key) ? JSON.stringify(at.key).slice(1, -1) : at.key;
    parts.push(key.replaceAll('~', '~0').replaceAll('/', '~1'));
  }
  return parts.length === 0 ? '' : `/${parts.reverse().join('/')}`;
}

/** The JSON-RPC error for a message whose content checkJsonValue refused: -32602, with the TG code in `data`. */
export function invalidJsonValueError(found: JsonValueProblem): JsonRpcError {
  return {
    code: ErrorCode.InvalidParams,
    message: `Invalid params: ${found.message}`,
    data: { code: found.code, path: found.path },
  };
}
