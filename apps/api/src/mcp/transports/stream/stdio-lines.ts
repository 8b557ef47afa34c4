import type { Readable } from 'node:stream';
import { ErrorCode, errorResponse, type JsonRpcError, type JsonTextProblem } from '@taskgate/protocol';

/** The longest message accepted on stdin: the same 1 MiB as a POST /mcp body. */
export const STDIO_MAX_MESSAGE_BYTES = 1024 * 1024;

/** The one answer to a line that is not UTF-8 (no id: the line is not read), as a POST /mcp body gets. */
export function invalidUtf8LineResponse() {
  return errorResponse(null, {
    code: ErrorCode.ParseError,
    message: 'Parse error: the line is not valid UTF-8',
    data: { code: 'TG_ENCODING_INVALID' },
  });
}

/**
 * The error for a line parseJsonText refused, as rpc-failures.ts shapes a POST /mcp body's: not
 * JSON or a key twice is -32700, a number its double does not mean -32602.
 */
export function lineRefusal(problem: JsonTextProblem): JsonRpcError {
  const data = { code: problem.code, ...(problem.path === '' ? {} : { path: problem.path }) };
  return problem.code === 'TG_JSON_NUMBER_INVALID'
    ? { code: ErrorCode.InvalidParams, message: `Invalid params: the line ${problem.message}`, data }
    : { code: ErrorCode.ParseError, message: `Parse error: the line ${problem.message}`, data };
}

/** The one answer to a line past STDIO_MAX_MESSAGE_BYTES (it has no id: the line was never kept). */
export function oversizedLineResponse() {
  return errorResponse(null, {
    code: ErrorCode.InvalidRequest,
    message: `Invalid Request: the message is larger than the ${STDIO_MAX_MESSAGE_BYTES} bytes accepted`,
    data: { code: 'TG_BODY_TOO_LARGE' },
  });
}

export interface StdioLinesOptions {
  /** The longest line kept; a longer one is dropped as it arrives, without buffering it. */
  readonly maxLineBytes: number;
  readonly onLine: (line: string) => void;
  /** Called once per line that was too long (at the point it became too long). */
  readonly onOversized: () => void;
  /** Called, in place of onLine, for a line that is not valid UTF-8. */
  readonly onInvalidUtf8: () => void;
  /** Called once, when the input ends or closes. */
  readonly onEnd: () => void;
}

/**
 * Newline-delimited messages from stdin (basic/transports/stdio: messages are delimited by
 * newlines and contain none), with a bound readline lacks: a line past `maxLineBytes` — the same
 * 1 MiB a POST /mcp body may have — is discarded while it streams in, so a client that never sends
 * a newline costs no more memory than that. A line that is not UTF-8 (RFC 8259 section 8.1; an
 * overlong form, an encoded surrogate, a truncated sequence) is refused as a whole, where
 * readline's decoder would have put U+FFFD in place of its bytes and passed it on to be stored. A
 * trailing CR is dropped (CRLF line ends).
 */
export function readStdioLines(input: Readable, options: StdioLinesOptions): void {
  // ignoreBOM keeps a byte-order mark for JSON.parse to refuse, as a POST /mcp body's is.
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  const emit = (bytes: Buffer) => {
    let line: string;
    try {
      line = decoder.decode(bytes);
    } catch {
      options.onInvalidUtf8();
      return;
    }
    options.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  };
  input.on('data', (chunk: Buffer | string) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (let end = bytes.indexOf(10, start); end !== -1; end = bytes.indexOf(10, start)) {
      const piece = bytes.subarray(start, end);
      if (!skipping) {
        if (size + piece.length > options.maxLineBytes) options.onOversized();
        else emit(parts.length === 0 ? piece : Buffer.concat([...parts, piece]));
      }
      parts = [];
      size = 0;
      skipping = false;
      start = end + 1;
    }
    if (skipping || start === bytes.length) return;
    const rest = bytes.subarray(start);
    if (size + rest.length > options.maxLineBytes) {
      skipping = true;
      parts = [];
      size = 0;
      options.onOversized();
      return;
    }
    // Copied, so a short remainder does not keep its whole chunk alive.
    parts.push(Buffer.from(rest));
    size += rest.length;
  });
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    if (!skipping && parts.length > 0) emit(Buffer.concat(parts));
    options.onEnd();
  };
  input.on('end', end);
  input.on('close', end);
}
