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
  const stack: Frame[] = [{ value, depth: 0, key: null, parent: null }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const current = frame.value;
    if (typeof current === 'string') {
      const why = stringProblem(current);
      if (why) return problem('TG_JSON_STRING_INVALID', frame, `a string ${why}`);
      continue;
    }
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) {
        return problem('TG_JSON_NUMBER_INVALID', frame, 'a number is outside the range of a double (e.g. 1e400)');
      }
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    const depth = frame.depth + 1;
    if (depth > maxDepth) {
      return problem('TG_JSON_TOO_DEEP', frame, `the JSON is nested deeper than ${maxDepth} levels`);
    }
    if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) {
        stack.push({ value: current[index], depth, key: String(index), parent: frame });
      }
      continue;
    }
    const keys = Object.keys(current);
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index] as string;
      const child: Frame = { value: (current as Record<string, unknown>)[key], depth, key, parent: frame };
      const why = stringProblem(key);
      if (why) return problem('TG_JSON_STRING_INVALID', child, `an object key ${why}`);
      stack.push(child);
    }
  }
  return null;
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
