import type { Readable } from 'node:stream';
import { ErrorCode, errorResponse } from '@taskgate/protocol';

/** The longest message accepted on stdin: the same 1 MiB as a POST /mcp body. */
export const STDIO_MAX_MESSAGE_BYTES = 1024 * 1024;

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
  /** Called once, when the input ends or closes. */
  readonly onEnd: () => void;
}

/**
 * Newline-delimited messages from stdin (basic/transports/stdio: messages are delimited by
 * newlines and contain none), with a bound readline lacks: a line past `maxLineBytes` — the same
 * 1 MiB a POST /mcp body may have — is discarded while it streams in, so a client that never sends
 * a newline costs no more memory than that. Bytes that are not UTF-8 decode to U+FFFD, as
 * readline's decoder would; a trailing CR is dropped (CRLF line ends).
 */
export function readStdioLines(input: Readable, options: StdioLinesOptions): void {
  const decoder = new TextDecoder('utf-8');
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  const emit = (bytes: Buffer) => {
    const line = decoder.decode(bytes);
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
