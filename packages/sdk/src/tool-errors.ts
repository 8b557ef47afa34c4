/**
 * Why a running handler must stop, carried as the reason of ctx.signal and thrown by
 * ctx.checkpoint(); and the one error a handler throws on purpose (ToolProtocolError).
 *
 * A tool module may bring its own copy of this package (npm installs one per dependency tree
 * when versions differ), and the platform must still recognise what the module throws: each
 * class is recognised by a registered symbol, so `instanceof` holds across copies.
 */

function branded(brand: symbol) {
  return (value: unknown): boolean =>
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

const CANCELLED = Symbol.for('taskgate.sdk.TaskCancelledError');
const TIMEOUT = Symbol.for('taskgate.sdk.TaskTimeoutError');
const RELEASED = Symbol.for('taskgate.sdk.TaskReleasedError');
const PARKED = Symbol.for('taskgate.sdk.TaskParkedError');
const PROTOCOL = Symbol.for('taskgate.sdk.ToolProtocolError');
const RACE_LOST = Symbol.for('taskgate.sdk.RaceLostError');
const URL_ELICITATION = Symbol.for('taskgate.sdk.UrlElicitationRequiredError');

/** Why a branch of ctx.race() was aborted: another branch succeeded first. */
export class RaceLostError extends Error {
  static override [Symbol.hasInstance] = branded(RACE_LOST);
  readonly [RACE_LOST] = true;
  constructor() {
    super('another branch of ctx.race() finished first');
    this.name = 'RaceLostError';
  }
}

/** A cancel was requested for the task (it ends `cancelled`). */
export class TaskCancelledError extends Error {
  static override [Symbol.hasInstance] = branded(CANCELLED);
  readonly [CANCELLED] = true;
  readonly reason: string | null;
  constructor(reason: string | null) {
    super(reason ? `task cancelled: ${reason}` : 'task cancelled');
    this.name = 'TaskCancelledError';
    this.reason = reason;
  }
}

/** One of the two clocks ran out (the task ends `failed` with a timeout error naming the clock). */
export class TaskTimeoutError extends Error {
  static override [Symbol.hasInstance] = branded(TIMEOUT);
  readonly [TIMEOUT] = true;
  readonly clock: 'idle' | 'max';
  readonly limitMs: number;
  constructor(clock: 'idle' | 'max', limitMs: number) {
    super(
      clock === 'idle'
        ? `idle timeout: no progress for ${limitMs} ms`
        : `maximum timeout: the task ran for its limit of ${limitMs} ms`,
    );
    this.name = 'TaskTimeoutError';
    this.clock = clock;
    this.limitMs = limitMs;
  }
}

/** The worker is shutting down and hands the task to another worker (it stays `working`). */
export class TaskReleasedError extends Error {
  static override [Symbol.hasInstance] = branded(RELEASED);
  readonly [RELEASED] = true;
  constructor(why: string) {
    super(`task released: ${why}`);
    this.name = 'TaskReleasedError';
  }
}

/**
 * ctx.input() parked the task until its client answers: this attempt ends here, the task stays
 * `input_required`, and the answer queues the next run. A handler must let it propagate.
 */
export class TaskParkedError extends Error {
  static override [Symbol.hasInstance] = branded(PARKED);
  readonly [PARKED] = true;
  readonly keys: readonly string[];
  constructor(keys: readonly string[]) {
    super(`task waits for input: ${keys.join(', ')}`);
    this.name = 'TaskParkedError';
    this.keys = keys;
  }
}

/**
 * Thrown by a handler to end the task `failed` with a JSON-RPC error (a protocol error), as
 * opposed to a tool error, which is a normal result with `isError: true`.
 */
export class ToolProtocolError extends Error {
  static override [Symbol.hasInstance] = branded(PROTOCOL);
  readonly [PROTOCOL] = true;
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'ToolProtocolError';
    this.code = code;
    this.data = data;
  }
}

/** MCP's URLElicitationRequiredError code (2025-11-25 client/elicitation "URL Elicitation Required Error"). */
export const URL_ELICITATION_REQUIRED = -32042;

/** A URL-mode elicitation the user must complete (out of band, on that page) before a call can succeed. */
export interface UrlElicitation {
  /** The page the user opens: with no credentials or personal data in it (client/elicitation "Safe URL Handling"). */
  readonly url: string;
  /** Why the user should open it, shown with the URL. */
  readonly message: string;
  /**
   * Names the elicitation to the page (put it in the URL) and in ctx.elicitationComplete(); a
   * random UUID when absent. It must be unique within the server, and is opaque to the client.
   */
  readonly elicitationId?: string;
}

/**
 * Thrown by a handler that cannot go on until the user has completed out-of-band interactions (a
 * third-party OAuth consent, a payment page): the call ends with MCP's URLElicitationRequiredError,
 * -32042 with `data.elicitations`, and the client retries it once the user is done. The handler
 * finds out on that retry, from its own state, whether they are. A client that did not declare
 * `elicitation.url` gets -32021 naming it instead; a revision without this error (2026-07-28) is
 * asked the same elicitations as `input_required`, which its retry answers.
 */
export class UrlElicitationRequiredError extends ToolProtocolError {
  static override [Symbol.hasInstance] = branded(URL_ELICITATION);
  readonly [URL_ELICITATION] = true;
  /** As they go to the client: each with `mode: "url"` and its elicitationId. */
  readonly elicitations: readonly (Required<UrlElicitation> & { readonly mode: 'url' })[];
  constructor(elicitations: readonly UrlElicitation[], message = 'this request needs the user to open a URL first') {
    // Checked here, where the handler can be told which one is wrong: the error MUST carry URL
    // elicitations, each with an elicitationId (client/elicitation "URL Elicitation Required Error").
    if (!Array.isArray(elicitations) || elicitations.length === 0) {
      throw new TypeError('UrlElicitationRequiredError needs at least one elicitation');
    }
    const entries = elicitations.map((elicitation, index) => {
      const { url, message: text, elicitationId } = (elicitation ?? {}) as Partial<UrlElicitation>;
      if (typeof url !== 'string' || !URL.canParse(url)) {
        throw new TypeError(`UrlElicitationRequiredError: elicitations[${index}].url must be an absolute URL`);
      }
      if (typeof text !== 'string') {
        throw new TypeError(`UrlElicitationRequiredError: elicitations[${index}].message must be a string`);
      }
      if (elicitationId !== undefined && (typeof elicitationId !== 'string' || elicitationId === '')) {
        throw new TypeError(
          `UrlElicitationRequiredError: elicitations[${index}].elicitationId must be a non-empty string`,
        );
      }
      return { mode: 'url' as const, url, message: text, elicitationId: elicitationId ?? crypto.randomUUID() };
    });
    super(URL_ELICITATION_REQUIRED, message, { elicitations: entries });
    this.name = 'UrlElicitationRequiredError';
    this.elicitations = entries;
  }
}
