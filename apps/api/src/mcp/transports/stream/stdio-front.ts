import { PassThrough, type Readable, type Writable } from 'node:stream';
import {
  checkJsonValue,
  checkMetaFields,
  classifyMessage,
  ErrorCode,
  errorResponse,
  type JsonRpcId,
  parseJsonText,
  resultResponse,
  revisionKindOf,
} from '@taskgate/protocol';
import { discoverResult, type ServerIdentity } from '../../core/server-info.ts';
import { hasMetaVersion, initialize } from '../../dispatch/initialize.ts';
import {
  invalidUtf8LineResponse,
  oversizedLineResponse,
  readStdioLines,
  STDIO_MAX_MESSAGE_BYTES,
} from './stdio-lines.ts';

/** What is held before the server is ready; past it stdin is paused, and the client waits. */
const HELD_BYTES = 16 * 1024 * 1024;

/**
 * The first moments of `taskgate mcp-stdio`: stdin is read from the first millisecond, and what
 * needs nothing but the server's identity — `initialize`, `server/discover` with valid per-request
 * fields, and `ping` after an initialize — is answered at once, while the database, the worker and
 * the tool catalog start (seconds on the embedded database; a client's first-message timeout may
 * be one). Every line, answered or not, is held in order and handed to the StreamConnection once it
 * exists, so it sets up the pipe as it would have (the revision, the declared capabilities);
 * `answered` tells it which of its responses were sent already. This file imports only what
 * answers those three, so it loads in milliseconds (not even @taskgate/reliability: 50 ms here).
 */
export class StdioFront {
  readonly #output: Writable;
  readonly #input: Readable;
  readonly #server: ServerIdentity;
  /** Lines not handed over yet, in order. */
  #held: string[] = [];
  #heldBytes = 0;
  /** Request ids answered here, with how many times (a client may reuse an id once answered). */
  readonly #answered = new Map<string, number>();
  #initialized = false;
  #ended = false;
  #forward: PassThrough | null = null;
  #failed = false;
  #sawLine = false;
  readonly #lineListeners: (() => void)[] = [];

  constructor(options: { input: Readable; output: Writable; server: ServerIdentity }) {
    this.#input = options.input;
    this.#output = options.output;
    this.#server = options.server;
    readStdioLines(options.input, {
      maxLineBytes: STDIO_MAX_MESSAGE_BYTES,
      onLine: (line) => this.#onLine(line),
      // Answered here, before and after the hand-over alike: the line itself was never kept.
      onOversized: () => this.#write(oversizedLineResponse()),
      onInvalidUtf8: () => this.#write(invalidUtf8LineResponse()),
      onEnd: () => {
        this.#ended = true;
        this.#forward?.end();
        this.#onFirstLine();
      },
    });
  }

  /**
   * The input for the StreamConnection: every line held so far, then the rest of stdin as it comes.
   * `answered(id)` is true once per response already sent here (the server drops it).
   */
  handOver(): { input: Readable; answered: (id: JsonRpcId) => boolean } {
    if (this.#forward) throw new Error('StdioFront.handOver was called twice');
    const forward = new PassThrough();
    this.#forward = forward;
    for (const line of this.#held) forward.write(`${line}\n`);
    this.#held = [];
    this.#heldBytes = 0;
    this.#input.resume();
    if (this.#ended) forward.end();
    return {
      input: forward,
      answered: (id) => {
        const key = idKey(id);
        const count = this.#answered.get(key);
        if (count === undefined) return false;
        if (count === 1) this.#answered.delete(key);
        else this.#answered.set(key, count - 1);
        return true;
      },
    };
  }

  /**
   * Start-up failed: every request held and not answered gets an error, with the failure's code
   * when it has one (a client then says what went wrong, not just "internal error"); nothing more
   * is read.
   */
  fail(message: string, code?: string): void {
    if (this.#forward || this.#failed) return;
    this.#failed = true;
    for (const line of this.#held) {
      const request = requestOf(line);
      if (!request || this.#answered.has(idKey(request.id))) continue;
      this.#write(
        errorResponse(request.id, {
          code: ErrorCode.InternalError,
          message: `Internal error: the server failed to start: ${message}`,
          ...(code === undefined ? {} : { data: { code } }),
        }),
      );
    }
    this.#held = [];
    this.#input.pause();
  }

  /**
   * Resolves once the first line has been handled (answered or held), stdin has ended, or
   * `timeoutMs` has passed. Loading the rest of the server blocks this process's event loop for
   * most of a second, during which nothing on stdin is read: a client's first message (always
   * its initialize or discover) is answered before that starts.
   */
  firstLine(timeoutMs: number): Promise<void> {
    if (this.#sawLine || this.#ended) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      this.#lineListeners.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #onLine(line: string): void {
    this.#onFirstLine();
    if (this.#failed) return;
    if (this.#forward) {
      this.#forward.write(`${line}\n`);
      return;
    }
    const request = requestOf(line);
    if (request) this.#answerEarly(request);
    this.#held.push(line);
    this.#heldBytes += line.length;
    // A client that floods before the server is ready waits, as it would on a full pipe.
    if (this.#heldBytes > HELD_BYTES) this.#input.pause();
  }

  #onFirstLine(): void {
    this.#sawLine = true;
    for (const listener of this.#lineListeners.splice(0)) listener();
  }

  #answerEarly(request: { id: JsonRpcId; method: string; params: Readonly<Record<string, unknown>> | undefined }) {
    const { id, method, params } = request;
    const handshake = revisionKindOf(method, params, undefined) === 'handshake';
    let result: Record<string, unknown> | null = null;
    if (method === 'initialize' && handshake) {
      this.#initialized = true;
      // Negotiated as the StreamConnection will when it gets this line: the same function.
      result = initialize(params, this.#server).result;
    } else if (method === 'ping' && this.#initialized && !hasMetaVersion(params)) {
      // After an initialize the pipe speaks that revision (the StreamConnection's rule), where ping is.
      result = {};
    } else if (method === 'server/discover' && !handshake && checkMetaFields(params).ok) {
      result = discoverResult(this.#server);
    }
    if (result === null) return;
    const key = idKey(id);
    this.#answered.set(key, (this.#answered.get(key) ?? 0) + 1);
    this.#write(resultResponse(id, result));
  }

  #write(message: unknown): void {
    this.#output.write(`${JSON.stringify(message)}\n`);
  }
}

/** A request id as a map key: 1 and "1" are different ids. */
function idKey(id: JsonRpcId): string {
  return typeof id === 'number' ? `n:${id}` : `s:${id}`;
}

/** A line's request, if it is one (anything else is left for the StreamConnection to judge). */
function requestOf(
  line: string,
): { id: JsonRpcId; method: string; params: Readonly<Record<string, unknown>> | undefined } | null {
  // The StreamConnection's reading: a line it refuses (a key twice, a __proto__ key) is not answered here.
  const parsed = parseJsonText(line);
  if (!parsed.ok) return null;
  const value = parsed.value;
  const message = classifyMessage(value);
  // One the StreamConnection will refuse for its content is not answered here either.
  return message.kind === 'request' && checkJsonValue(value) === null ? message : null;
}
