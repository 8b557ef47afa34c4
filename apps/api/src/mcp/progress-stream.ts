import type { ServerResponse } from 'node:http';
import type { TaskRecord } from '@taskgate/db';
import { errorResponse, type JsonRpcId, resultResponse } from '@taskgate/protocol';
import { SseStream } from '../sse/sse-stream.ts';
import type { MethodOutcome } from './mcp-methods.ts';

/** Set in the final response's _meta when progress was dropped for a slow reader. */
export const PROGRESS_DROPPED_META = 'dev.taskgate/progressDropped';

/**
 * The SSE answer of a tools/call that carried a progress token: notifications/progress while the
 * task runs, then the response, which ends the stream. Progress is strictly increasing (a value
 * not above the last one sent is dropped) and goes through the bounded buffer: a reader that
 * stalls keeps only the latest progress, never blocks the final response, and is told in the
 * response's _meta that it missed some.
 */
export class ProgressStream {
  readonly #stream: SseStream;
  readonly #token: string | number;
  #last = Number.NEGATIVE_INFINITY;

  constructor(response: ServerResponse, token: string | number, keepaliveMs: number) {
    this.#token = token;
    // Progress for one token coalesces in place; the final response has its own reserved slot.
    this.#stream = new SseStream(response, { capacity: 2, coalesce: 'adjacent', keepaliveMs });
    this.#stream.open();
  }

  offer(task: TaskRecord): void {
    const progress = task.progress;
    if (!progress || !(progress.value > this.#last)) return;
    this.#last = progress.value;
    this.#stream.push({
      kind: 'replaceable',
      key: String(this.#token),
      value: {
        data: {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: {
            progressToken: this.#token,
            progress: progress.value,
            ...(progress.total === null ? {} : { total: progress.total }),
            ...(progress.message === null ? {} : { message: progress.message }),
          },
        },
      },
    });
  }

  finish(id: JsonRpcId, outcome: MethodOutcome): void {
    const dropped = this.#stream.takeRefetchFlag();
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
