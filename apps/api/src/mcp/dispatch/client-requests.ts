import { randomUUID } from 'node:crypto';
import { inputResultProblem } from '@taskgate/tools';

interface Pending {
  readonly method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/** The client answered a request of the server's with a JSON-RPC error. */
export class ClientAnsweredError extends Error {
  readonly code: unknown;
  constructor(method: string, error: { code?: unknown; message?: unknown }) {
    // Only what was checked goes into the text: a value of another type may not even be a string.
    const code = Number.isInteger(error.code) ? String(error.code) : 'of no integer code';
    const message = typeof error.message === 'string' ? error.message.slice(0, 1_000) : '';
    super(`the client answered ${method} with error ${code}: ${message}`);
    this.code = error.code;
  }
}

/**
 * Requests this server sends a client on one connection (a handshake session, a stdio pipe) —
 * elicitation/create, sampling/createMessage, roots/list, as revisions before 2026-07-28 make
 * them — and the responses the client sends back, matched by id. Ids are random, so a response
 * meant for another connection or instance finds nothing here rather than the wrong request.
 * A request whose asker gives up (its signal: the call's cancel or clocks) is forgotten and the
 * client told with notifications/cancelled.
 */
export class ClientRequests {
  readonly #pending = new Map<string, Pending>();

  /** Sends `method` through `write` and resolves with the client's result. */
  ask(
    method: string,
    params: Readonly<Record<string, unknown>>,
    write: (message: Record<string, unknown>) => void,
    signal: AbortSignal,
  ): Promise<unknown> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = `taskgate-${randomUUID()}`;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.#pending.delete(id)) return;
        write({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: id, reason: 'no longer needed' },
        });
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = () => signal.removeEventListener('abort', onAbort);
      this.#pending.set(id, {
        method,
        resolve: (result) => {
          settle();
          resolve(result);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      write({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** A response from the client: true when it answered a request waiting here. */
  answer(message: Readonly<Record<string, unknown>>): boolean {
    const id = message.id;
    const pending = typeof id === 'string' ? this.#pending.get(id) : undefined;
    if (!pending) return false;
    this.#pending.delete(id as string);
    const error = message.error;
    if (error !== undefined) {
      pending.reject(new ClientAnsweredError(pending.method, (error ?? {}) as { code?: unknown; message?: unknown }));
      return true;
    }
    const problem = inputResultProblem(pending.method, message.result);
    if (problem !== null) {
      pending.reject(new Error(`the client's result for ${pending.method} ${problem}`));
    } else pending.resolve(message.result);
    return true;
  }

  get size(): number {
    return this.#pending.size;
  }
}
