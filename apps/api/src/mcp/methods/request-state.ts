import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * MCP's `requestState` (2026-07-28 basic/patterns/mrtr): what a server hands the client with an
 * input_required result and gets back on the retry, so that any instance can carry on with no
 * state of its own. The client is not to be trusted with it: the payload is signed (HMAC-SHA256
 * under a key every instance shares) and binds the principal, the request it was made for, and an
 * expiry, as the spec's security requirements ask. It is signed, not encrypted: what it carries is
 * the client's own answers.
 */
export interface RequestStatePayload {
  /** The principal it was issued to (the tenant). */
  readonly principal: string;
  /** A digest of the originating request: its method and salient parameters. */
  readonly request: string;
  /** The input answers gathered so far, by key. */
  readonly answers: Readonly<Record<string, unknown>>;
  /** The requests asked in the round that issued it, key → method: only their answers are taken. */
  readonly asked: Readonly<Record<string, string>>;
  /**
   * The durable task the request waits on, parked for these answers (a tool run by a worker):
   * the retry answers that task and waits on, instead of starting the call again.
   */
  readonly task?: string;
}

export type RequestStateProblem = 'malformed' | 'signature' | 'expired' | 'principal' | 'request';

/** Longest state accepted or issued, as text: answers travel in it on every round. */
export const MAX_REQUEST_STATE_CHARS = 256 * 1024;
/** How long a state stays good after it is issued. */
export const DEFAULT_REQUEST_STATE_TTL_MS = 10 * 60 * 1000;

const VERSION = 1;

export interface RequestStateSealerOptions {
  /** At least 32 bytes, the same on every instance that may see the retry. */
  readonly key: Buffer;
  readonly now?: () => number;
  readonly ttlMs?: number;
}

export class RequestStateSealer {
  readonly #key: Buffer;
  readonly #now: () => number;
  readonly #ttlMs: number;

  constructor(options: RequestStateSealerOptions) {
    if (options.key.length < 32) throw new TypeError('a requestState key must be at least 32 bytes');
    this.#key = options.key;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? DEFAULT_REQUEST_STATE_TTL_MS;
  }

  /** How long a state stays good after it is issued. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** The state for `payload`, or null when it would be longer than MAX_REQUEST_STATE_CHARS. */
  seal(payload: RequestStatePayload): string | null {
    const body = Buffer.from(
      JSON.stringify({
        v: VERSION,
        p: payload.principal,
        r: payload.request,
        a: payload.answers,
        q: payload.asked,
        ...(payload.task === undefined ? {} : { t: payload.task }),
        e: this.#now() + this.#ttlMs,
      }),
    ).toString('base64url');
    const state = `${body}.${this.#mac(body).toString('base64url')}`;
    return state.length > MAX_REQUEST_STATE_CHARS ? null : state;
  }

  /**
   * The payload of a state this server issued to `principal` for `request`, still within its
   * expiry; otherwise what is wrong with it. The signature is checked before anything in the
   * payload is read, in constant time.
   */
  open(
    state: unknown,
    expect: { readonly principal: string; readonly request: string },
  ): RequestStatePayload | { readonly problem: RequestStateProblem } {
    if (typeof state !== 'string' || state.length > MAX_REQUEST_STATE_CHARS) return { problem: 'malformed' };
    const [body, mac, extra] = state.split('.');
    if (extra !== undefined || !body || !mac || !BASE64URL.test(body) || !BASE64URL.test(mac)) {
      return { problem: 'malformed' };
    }
    const given = Buffer.from(mac, 'base64url');
    const expected = this.#mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { problem: 'signature' };
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      return { problem: 'malformed' };
    }
    const { v, p, r, a, q, t, e } = fields;
    if (
      v !== VERSION ||
      typeof p !== 'string' ||
      typeof r !== 'string' ||
      typeof a !== 'object' ||
      a === null ||
      Array.isArray(a) ||
      typeof q !== 'object' ||
      q === null ||
      Array.isArray(q) ||
      !Object.values(q).every((method) => typeof method === 'string') ||
      (t !== undefined && typeof t !== 'string') ||
      typeof e !== 'number'
    ) {
      return { problem: 'malformed' };
    }
    if (this.#now() >= e) return { problem: 'expired' };
    if (p !== expect.principal) return { problem: 'principal' };
    if (r !== expect.request) return { problem: 'request' };
    return {
      principal: p,
      request: r,
      answers: a as Record<string, unknown>,
      asked: q as Record<string, string>,
      ...(typeof t === 'string' ? { task: t } : {}),
    };
  }

  #mac(body: string): Buffer {
    return createHmac('sha256', this.#key).update(`taskgate-request-state.${body}`).digest();
  }
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
