import type { ServerResponse } from 'node:http';
import type { TaskProgress } from '@taskgate/db';
import { errorResponse, type JsonRpcId, resultResponse } from '@taskgate/protocol';
import { SseStream } from '../../../sse/sse-stream.ts';
import type { MethodOutcome } from '../../core/outcomes.ts';
import { progressNotification } from '../../dispatch/progress.ts';

/** Set in the final response's _meta when progress was dropped for a slow reader. */
export const PROGRESS_DROPPED_META = 'dev.taskgate/progressDropped';

/**
 * The SSE answer of a request that carried a progress token, sent a message before its answer,
 * or outlived the route's threshold: notifications/progress while the task runs (with a token),
 * the request's own messages, keepalive comments, then the response, which ends the stream. Progress arrives strictly increasing (the
 * core filters it) and goes through the bounded buffer: a reader that
 * stalls keeps only the latest progress, never blocks the final response, and is told in the
 * response's _meta that it missed some.
 */
export class ProgressStream {
  readonly #stream: SseStream;
  /** null: the stream carries keepalives and the response only (the call asked for no progress). */
  readonly #token: string | number | null;
  /** The newest progress while the reader is behind: built into a message only once it can be sent. */
  #held: { value: number; total: number | null; message: string | null } | null = null;
  #skipped = false;

  constructor(response: ServerResponse, token: string | number | null, keepaliveMs: number) {
    this.#token = token;
    // Progress for one token coalesces in place; the final response has its own reserved slot.
    this.#stream = new SseStream(response, { capacity: 2, coalesce: 'adjacent', keepaliveMs });
    this.#stream.open();
    // After the stream's own flush on 'drain' (it registered first), send what was held meanwhile.
    response.on('drain', () => this.#sendHeld());
  }

  offer(progress: TaskProgress): void {
    if (this.#token === null) return;
    if (this.#stream.backedUp) {
      // A stalled reader costs one slot and no allocation per update: only the newest is kept.
      if (this.#held) {
        this.#skipped = true;
        this.#held.value = progress.value;
        this.#held.total = progress.total;
        this.#held.message = progress.message;
      } else {
        this.#held = { value: progress.value, total: progress.total, message: progress.message };
      }
      return;
    }
    this.#send(progress);
  }

  #sendHeld(): void {
    const held = this.#held;
    if (!held || this.#stream.backedUp) return;
    this.#held = null;
    this.#send(held);
  }

  #send(progress: { value: number; total: number | null; message: string | null }): void {
    if (this.#token === null) return;
    this.#stream.push({
      kind: 'replaceable',
      key: String(this.#token),
      value: { data: progressNotification(this.#token, progress) },
    });
  }

  /**
   * A notification of the request's own (notifications/message, a request to the client): in
   * order with progress, and dropped, never the response, for a reader that stalls. With a
   * `key`, it replaces an undelivered one of the same key right before it (a task's status).
   */
  message(notification: Record<string, unknown>, key?: string): void {
    this.#messages += 1;
    this.#stream.push({ kind: 'replaceable', key: key ?? `message-${this.#messages}`, value: { data: notification } });
  }

  #messages = 0;

  finish(id: JsonRpcId, outcome: MethodOutcome): void {
    // The latest progress goes before the response (it may be coalesced or dropped; the response never is).
    if (this.#held) {
      this.#send(this.#held);
      this.#held = null;
    }
    const dropped = this.#stream.takeRefetchFlag() || this.#skipped;
    const message =
      outcome.kind === 'result'
        ? resultResponse(id, dropped ? withDroppedFlag(outcome.result) : outcome.result)
        : errorResponse(id, outcome.error);
    this.#stream.push({ kind: 'final', value: { data: message } });
  }
}

function withDroppedFlag(result: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return { ...result, _meta: { ...(result._meta as object), [PROGRESS_DROPPED_META]: true } };
}
