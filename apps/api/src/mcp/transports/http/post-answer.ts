import type { TaskProgress } from '@taskgate/db';
import { errorResponse, type JsonRpcId } from '@taskgate/protocol';
import type { FastifyReply } from 'fastify';
import { SseStream } from '../../../sse/sse-stream.ts';
import type { ServerStopping } from '../../core/server-stopping.ts';
import { resultJson, sharedResponse } from '../../core/shared-results.ts';
import type { ListenSubscription } from '../../core/subscriptions.ts';
import type { ListenStream, RequestAnswer, RequestStream } from '../../dispatch/dispatcher.ts';
import { progressTokenOf } from '../../dispatch/progress.ts';
import type { RequestMessageKind } from '../../dispatch/request-runner.ts';
import type { RpcFailure } from '../rpc-failures.ts';
import { ProgressStream } from './progress-stream.ts';

/** Calls in flight on the route, each with the function that ends it because the server is closing. */
export type CallsInFlight = Set<(reason: ServerStopping) => void>;

export interface PostAnswerOptions {
  /** `:` comments on a quiet SSE response. */
  readonly keepaliveMs: number;
  /** A request still running after this long is answered as SSE (status and keepalives at once). */
  readonly sseAfterMs: number;
  readonly calls: CallsInFlight;
  /** Open subscriptions/listen streams, ended gracefully when the server closes. */
  readonly listens: Set<ListenSubscription>;
  /**
   * Aborted when the client closes the response before its answer (watched from its arrival);
   * aborted here with a ServerStopping when the server closes with the request running. One
   * controller for both: a POST's request makes no other, and RunStream says how they differ.
   */
  readonly gone: AbortController;
  /** A failure as its JSON-RPC error, logged. */
  readonly failure: (error: unknown) => RpcFailure;
}

/**
 * The HTTP response of one POSTed request (Streamable HTTP "Sending Messages to the Server"): a
 * JSON body, or an SSE stream once something must go before the answer — progress (the request
 * carried a token), a log message, a request to the client, a task's status — or once the request
 * has run for sseAfterMs, so a proxy's idle timeout does not cut it and the client sees it is
 * alive. The answer ends it; a request cancelled while it is open ends it without a message (an
 * SSE stream just ends, an unanswered POST gets an empty 204). Written on the raw response: a
 * stalled reader's latest progress is held in place without allocating (ProgressStream), and a
 * shared result (tools/list) goes out as its cached bytes.
 */
export class PostAnswer implements RequestStream {
  readonly #reply: FastifyReply;
  readonly #id: JsonRpcId;
  readonly #token: string | number | null;
  readonly #options: PostAnswerOptions;
  readonly #endCall: (reason: ServerStopping) => void;
  #sse: ProgressStream | null = null;
  #timer: NodeJS.Timeout | undefined;

  readonly gone: AbortSignal;
  /** Only a request that asked for progress watches it: the others read their task once, at the end. */
  readonly progress = (update: TaskProgress) => this.#toSse()?.offer(update);

  constructor(
    reply: FastifyReply,
    id: JsonRpcId,
    params: Readonly<Record<string, unknown>> | undefined,
    options: PostAnswerOptions,
  ) {
    reply.hijack();
    this.#reply = reply;
    this.#id = id;
    this.#token = progressTokenOf(params);
    this.#options = options;
    const gone = options.gone;
    this.gone = gone.signal;
    this.#endCall = (reason) => gone.abort(reason);
  }

  send(message: Record<string, unknown>, kind: RequestMessageKind): void {
    // A task's status replaces an undelivered one; anything else is a message of its own.
    this.#toSse()?.message(message, kind === 'status' ? 'status' : undefined);
  }

  running(): void {
    this.#timer = setTimeout(() => this.#toSse(), this.#options.sseAfterMs);
    // The server closing ends the request with what the core answers then (not a cancel).
    this.#options.calls.add(this.#endCall);
  }

  failure(error: unknown): RpcFailure {
    return this.#options.failure(error);
  }

  end(answer: RequestAnswer): void {
    clearTimeout(this.#timer);
    this.#options.calls.delete(this.#endCall);
    const raw = this.#reply.raw;
    if (raw.writableEnded || raw.destroyed) return;
    if (answer.kind === 'cancelled') {
      // One terminal state: a result that lost the race to the cancel was dropped already.
      if (!raw.headersSent) raw.writeHead(204);
      raw.end();
      return;
    }
    const { outcome } = answer;
    for (const [name, value] of Object.entries(answer.headers ?? {})) {
      if (!raw.headersSent) raw.setHeader(name, value);
    }
    if (this.#sse) {
      this.#sse.finish(this.#id, outcome);
      return;
    }
    if (outcome.kind === 'result') {
      const pieces = sharedResponse(this.#id, outcome.result);
      if (pieces) {
        // A shared result's cached bytes in one writev: as one string, the answer would be
        // concatenated and encoded again for every request (0.1-0.2 ms for 200 tools' 104 KB).
        raw.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': pieces.reduce((length, piece) => length + piece.length, 0),
        });
        raw.cork();
        for (const piece of pieces) raw.write(piece);
        raw.end();
        raw.uncork();
        return;
      }
    }
    const body =
      outcome.kind === 'result'
        ? resultJson(this.#id, outcome.result)
        : JSON.stringify(errorResponse(this.#id, outcome.error));
    raw.writeHead(outcome.kind === 'result' ? 200 : outcome.httpStatus, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    raw.end(body);
  }

  /**
   * subscriptions/listen on HTTP: an SSE stream carrying the acknowledgement, then the
   * notifications the filter asked for, with keepalives; per task only the latest undelivered
   * status is kept. The client ends it by closing the stream (which never changes a task); the
   * server by its result.
   */
  listen(watched: number): ListenStream {
    let stream: SseStream | null = null;
    const sink = {
      push: (message: Record<string, unknown>, key: string) =>
        stream?.push({ kind: 'replaceable', key, value: { data: message } }),
      finish: (message: Record<string, unknown>) => stream?.push({ kind: 'final', value: { data: message } }),
    };
    const start = (subscription: ListenSubscription) => {
      // The client left before its subscription started (during auth or the body's read): there
      // is no stream to run it on, and a closed one would never say it closed.
      if (this.#reply.raw.destroyed) {
        subscription.stop();
        return;
      }
      // One slot per watched task (a task's statuses coalesce in it), one for the tool list's
      // changes, plus the acknowledgement and the result: a stalled reader holds at most the
      // latest status of each task and one list change, and nothing is dropped.
      const opened = new SseStream(this.#reply.raw, {
        capacity: watched + 3,
        coalesce: 'by-key',
        keepaliveMs: this.#options.keepaliveMs,
      });
      stream = opened;
      opened.open();
      const { listens } = this.#options;
      listens.add(subscription);
      opened.onClose(() => {
        subscription.stop();
        listens.delete(subscription);
      });
      // The stream's 200 is out: a subscription that could not start ends with its error.
      subscription.start().catch((error: unknown) => sink.finish(errorResponse(this.#id, this.failure(error).error)));
    };
    return { sink, start };
  }

  /** The answer as SSE from now on, unless the client is gone. */
  #toSse(): ProgressStream | null {
    const raw = this.#reply.raw;
    if (!this.#sse && !raw.writableEnded && !raw.destroyed) {
      this.#sse = new ProgressStream(raw, this.#token, this.#options.keepaliveMs);
    }
    return this.#sse;
  }
}
