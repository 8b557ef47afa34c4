import type { Rng } from './rng.ts';

export type HttpOutcome =
  | { readonly kind: 'response'; readonly status: number; readonly headers: Headers; readonly text: string }
  | { readonly kind: 'network'; readonly error: string }
  | { readonly kind: 'timeout' };

export interface Unexpected5xx {
  readonly atMs: number;
  readonly method: string;
  readonly url: string;
  /** The MCP method (its Mcp-Method header), for a POST /mcp. */
  readonly mcpMethod: string | null;
  readonly status: number;
  readonly body: string;
}

/**
 * The HTTP side of every workload client: one request with a timeout, classified the way a careful
 * client would (a 503, a refused or reset connection and a timeout are worth a retry; anything else
 * is an answer), with a record of every 5xx other than 503 — the product promises none.
 */
export class HttpClient {
  readonly unexpected5xx: Unexpected5xx[] = [];
  readonly statusCounts = new Map<string, number>();
  readonly #now: () => number;
  readonly #closing = new AbortController();

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Ends every request under way and refuses new ones (the end of the run). */
  abortAll(): void {
    this.#closing.abort();
  }

  async send(
    method: string,
    url: string,
    options: { headers?: Record<string, string>; body?: string; timeoutMs: number; signal?: AbortSignal },
  ): Promise<HttpOutcome> {
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = AbortSignal.any([timeout, this.#closing.signal, ...(options.signal ? [options.signal] : [])]);
    try {
      const response = await fetch(url, {
        method,
        headers: options.headers ?? {},
        ...(options.body === undefined ? {} : { body: options.body }),
        signal,
      });
      const text = await response.text();
      this.#count(String(response.status));
      if (response.status >= 500 && response.status !== 503) {
        this.unexpected5xx.push({
          atMs: this.#now(),
          method,
          url,
          mcpMethod: options.headers?.['mcp-method'] ?? null,
          status: response.status,
          body: text.slice(0, 300),
        });
      }
      return { kind: 'response', status: response.status, headers: response.headers, text };
    } catch (error) {
      if (timeout.aborted) {
        this.#count('timeout');
        return { kind: 'timeout' };
      }
      this.#count('network');
      return { kind: 'network', error: describe(error) };
    }
  }

  /**
   * A request whose response body is read as it arrives (SSE): resolves at the headers. A non-2xx
   * body is read whole (and a 5xx other than 503 recorded); the caller cancels through `signal`.
   */
  async stream(
    method: string,
    url: string,
    options: { headers?: Record<string, string>; body?: string; signal: AbortSignal },
  ): Promise<
    | { readonly kind: 'stream'; readonly status: number; readonly body: ReadableStream<Uint8Array> }
    | Exclude<HttpOutcome, { kind: 'timeout' }>
  > {
    try {
      const response = await fetch(url, {
        method,
        headers: options.headers ?? {},
        ...(options.body === undefined ? {} : { body: options.body }),
        signal: AbortSignal.any([options.signal, this.#closing.signal]),
      });
      this.#count(String(response.status));
      if (response.ok && response.body) return { kind: 'stream', status: response.status, body: response.body };
      const text = await response.text();
      if (response.status >= 500 && response.status !== 503) {
        this.unexpected5xx.push({
          atMs: this.#now(),
          method,
          url,
          mcpMethod: options.headers?.['mcp-method'] ?? null,
          status: response.status,
          body: text.slice(0, 300),
        });
      }
      return { kind: 'response', status: response.status, headers: response.headers, text };
    } catch (error) {
      this.#count('network');
      return { kind: 'network', error: describe(error) };
    }
  }

  #count(key: string): void {
    this.statusCounts.set(key, (this.statusCounts.get(key) ?? 0) + 1);
  }
}

export function retryable(outcome: HttpOutcome): boolean {
  return outcome.kind !== 'response' || outcome.status === 503;
}

export function jsonOf(outcome: HttpOutcome): Record<string, unknown> {
  if (outcome.kind !== 'response') return {};
  try {
    const value = JSON.parse(outcome.text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Capped exponential backoff with full jitter (100 ms doubling to 2 s). */
export function backoff(rng: Rng, attempt: number, capMs = 2_000): Promise<void> {
  const ceiling = Math.min(capMs, 100 * 2 ** Math.min(attempt, 10));
  return new Promise((resolve) => setTimeout(resolve, rng.between(0, ceiling)));
}

export function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}
