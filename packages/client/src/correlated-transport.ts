import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CorrelationTable } from './correlation-table.ts';
import { interceptTransport, type MessageHandler, type SendOptions } from './transport-proxy.ts';

type Id = string | number;

/** What the table keeps of a request. */
export interface WireRequest {
  /** The SDK's own id for it; null for a request the client sends itself (`request()`). */
  readonly localId: Id | null;
  readonly method: string;
  /** Hands a message to the SDK as if it had arrived (an SDK request's). */
  readonly deliver?: MessageHandler;
  /** The SDK request's own signal (2026-07-28 HTTP): it aborts when the SDK gives up on it. */
  readonly signal?: AbortSignal;
  /** The client's own request: its answer goes here, never to the SDK. */
  readonly answer?: (message: Record<string, unknown>) => void;
  /** What the client knew of the call when it went out (WireEvents.contextOf). */
  readonly context?: unknown;
}

/** A tools/call answered with a task (the Tasks extension's `resultType: "task"`), held from the SDK. */
export interface HeldCall {
  readonly task: Record<string, unknown>;
  /**
   * `extension`: the Tasks extension's answer (`resultType: "task"`, its result at tasks/get);
   * `handshake`: 2025-11-25's `{task}` answer to a task-augmented call (its result at tasks/result).
   */
  readonly shape: 'extension' | 'handshake';
  /** Ends the SDK's tools/call with this result, or error, when the task is over. */
  readonly finish: (outcome: { result: Record<string, unknown> } | { error: Record<string, unknown> }) => void;
  /** Aborts when the SDK gives up on the call (its caller cancelled, a clock ran out). */
  readonly signal: AbortSignal;
  /** WireEvents.contextOf's value when the call was sent. */
  readonly context: unknown;
}

export interface WireEvents {
  /** A response to a request given up on arrived, and was dropped. */
  readonly late?: (method: string, wireId: number) => void;
  /** A response to no request of ours arrived, and was dropped. */
  readonly unknown?: (message: JSONRPCMessage) => void;
  /** A cancel of `initialize` was not sent: the spec forbids it (the connection is closed instead). */
  readonly initializeCancelDropped?: () => void;
  /**
   * A tools/call was answered with a task, which the SDK cannot take (v2 refuses resultType
   * "task"); the client watches the task and finishes the call. Without a handler the answer
   * goes to the SDK as it came.
   */
  readonly taskAnswer?: (held: HeldCall) => void;
  /** Read when an SDK request is sent, and kept with it (the caller's per-call context). */
  readonly contextOf?: () => unknown;
  /** An SDK request about to go out, with its context: what to send instead (a task-augmented call). */
  readonly augment?: (message: JSONRPCMessage, context: unknown) => JSONRPCMessage;
  /** A notification arrived; true takes it (the client's own subscription's), false leaves it to the SDK. */
  readonly notification?: (message: Record<string, unknown>) => boolean;
  /**
   * A progress notification of an SDK request sent with a context, in the order it arrived. The SDK
   * handles a notification a turn later than a response read in the same chunk, and drops the
   * progress of a request it settled meanwhile: a call's last progress, written just before its
   * result, was lost (1 run in 3 on a loaded machine). It still reaches the SDK too.
   */
  readonly progress?: (context: unknown, update: { progress: number; total?: number; message?: string }) => void;
}

/**
 * The error the SDK client gets when a request's own response stream ended without its answer:
 * sent, and lost. Without it the SDK would wait for an answer that cannot come any more.
 */
export const STREAM_ENDED = { code: -32099, message: 'the response stream ended before the response' } as const;

export interface CorrelatedTransport {
  /** The transport to hand the SDK client. */
  readonly transport: Transport;
  /**
   * A request the client sends itself, past the SDK (tasks/get, tasks/cancel: the v2 SDK refuses
   * methods its revision does not define), with a wire id from the same table. Resolves with the
   * JSON-RPC response (result or error) as it came.
   */
  request(method: string, params: Record<string, unknown>, options?: SendOptions): Promise<Record<string, unknown>>;
  /** The same, with the wire id known at once (a subscription's notifications carry it). */
  open(
    method: string,
    params: Record<string, unknown>,
    options?: SendOptions,
  ): { readonly id: number; readonly answer: Promise<Record<string, unknown>> };
  /** The sends of notifications/cancelled not yet done (a session's POST): close() waits for them. */
  cancelsInFlight(): Promise<unknown>[];
}

const isId = (id: unknown): id is Id => typeof id === 'string' || typeof id === 'number';

/**
 * The SDK client's transport with the client's correlation table on its wire. The SDK keeps its
 * own per-connection ids; on the wire each request carries an id from the table instead (never
 * reused, across connections too), and each response is mapped back — or, when it answers a
 * request given up on, dropped before the SDK sees it (the SDK would report it as an error).
 * `notifications/cancelled` is rewritten to the wire id and tombstones it; one for `initialize`
 * is not sent at all. A request whose own stream is aborted (Streamable HTTP 2026-07-28, where
 * that is the cancel) is tombstoned too.
 */
export function correlatedTransport(
  transport: Transport,
  table: CorrelationTable<WireRequest>,
  events: WireEvents = {},
): CorrelatedTransport {
  // This connection's SDK requests still open: the SDK's id → the wire id.
  const wireIdOf = new Map<Id, number>();
  // Calls answered with a task and held from the SDK: its cancel of one (notifications/cancelled,
  // on a revision without per-request streams) must become the task's cancel, not a notification.
  const heldCalls = new Map<Id, AbortController>();
  const cancelSends = new Set<Promise<unknown>>();
  // The contexts of open SDK requests that asked for progress, by progressToken, and each one's
  // token by the SDK's id (to forget it when the request settles).
  const progressContexts = new Map<Id, unknown>();
  const progressTokenOf = new Map<Id, Id>();
  const forgetProgress = (localId: Id) => {
    const token = progressTokenOf.get(localId);
    if (token === undefined) return;
    progressTokenOf.delete(localId);
    progressContexts.delete(token);
  };
  const send = transport.send.bind(transport) as (message: JSONRPCMessage, options?: SendOptions) => Promise<void>;
  const wrapped = interceptTransport(transport, {
    async send(message, options, forward, deliver) {
      const sent = message as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
      if (typeof sent.method === 'string' && isId(sent.id)) {
        const localId = sent.id;
        const signal = options?.requestSignal;
        const context = events.contextOf?.();
        const wireId = table.open({
          localId,
          method: sent.method,
          deliver,
          ...(signal ? { signal } : {}),
          ...(context === undefined ? {} : { context }),
        });
        wireIdOf.set(localId, wireId);
        const token = (sent.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
        if (events.progress && context !== undefined && isId(token)) {
          progressContexts.set(token, context);
          progressTokenOf.set(localId, token);
        }
        signal?.addEventListener(
          'abort',
          () => {
            forgetProgress(localId);
            if (wireIdOf.delete(localId)) table.abandon(wireId);
          },
          { once: true },
        );
        const forwarded = options && {
          ...options,
          onRequestStreamEnd: () => {
            options.onRequestStreamEnd?.();
            // A response arrives, and is settled, before its stream ends: still open means lost.
            if (wireIdOf.get(localId) !== wireId || table.get(wireId) === undefined) return;
            wireIdOf.delete(localId);
            table.abandon(wireId);
            deliver({ jsonrpc: '2.0', id: localId, error: { ...STREAM_ENDED } } as JSONRPCMessage);
          },
        };
        const outgoing = events.augment && context !== undefined ? events.augment(message, context) : message;
        return forward({ ...outgoing, id: wireId } as JSONRPCMessage, forwarded);
      }
      if (sent.method === 'notifications/cancelled' && isId(sent.params?.requestId)) {
        const localId = sent.params.requestId;
        const held = heldCalls.get(localId);
        if (held !== undefined) {
          heldCalls.delete(localId);
          held.abort(new Error('the call was given up'));
          return;
        }
        const wireId = wireIdOf.get(localId);
        // Answered already (the SDK cancels what it stopped waiting for): nothing to cancel on the wire.
        if (wireId === undefined) return;
        wireIdOf.delete(localId);
        if (table.abandon(wireId)?.method === 'initialize') {
          events.initializeCancelDropped?.();
          return;
        }
        const sending = forward(
          { ...message, params: { ...sent.params, requestId: wireId } } as JSONRPCMessage,
          options,
        );
        const tracked = sending.catch(() => {}).finally(() => cancelSends.delete(tracked));
        cancelSends.add(tracked);
        return sending;
      }
      return forward(message, options);
    },
    message(message, extra, deliver) {
      const received = message as { id?: unknown; method?: unknown; result?: Record<string, unknown> };
      const isResponse = received.method === undefined && ('result' in message || 'error' in message);
      if (!isResponse) {
        if (received.method !== undefined && received.id === undefined && events.notification?.(message as never))
          return;
        if (received.method === 'notifications/progress') progressArrived(message);
        return deliver(message, extra);
      }
      const settlement = table.settle(received.id);
      if (settlement.kind === 'late') return events.late?.(settlement.entry.method, received.id as number);
      if (settlement.kind === 'unknown') return events.unknown?.(message);
      const entry = settlement.entry;
      if (entry.answer) return entry.answer(message as unknown as Record<string, unknown>);
      const localId = entry.localId as Id;
      wireIdOf.delete(localId);
      forgetProgress(localId);
      const handshakeTask = received.result?.task as Record<string, unknown> | undefined;
      const shape =
        received.result?.resultType === 'task'
          ? 'extension'
          : typeof handshakeTask?.taskId === 'string' && !('content' in (received.result ?? {}))
            ? 'handshake'
            : null;
      if (entry.method === 'tools/call' && shape !== null && events.taskAnswer) {
        const given = new AbortController();
        heldCalls.set(localId, given);
        entry.signal?.addEventListener('abort', () => given.abort(entry.signal?.reason), { once: true });
        return events.taskAnswer({
          task:
            shape === 'extension'
              ? (received.result as Record<string, unknown>)
              : (handshakeTask as Record<string, unknown>),
          shape,
          signal: given.signal,
          context: entry.context,
          finish: (outcome) => {
            heldCalls.delete(localId);
            deliver({ jsonrpc: '2.0', id: localId, ...outcome } as JSONRPCMessage, extra);
          },
        });
      }
      deliver({ ...message, id: localId } as JSONRPCMessage, extra);
    },
    close() {
      // Nothing more arrives on this connection; what was still open stays a tombstone for a while
      // (a resumed session may still answer it) and its ids are never used again.
      for (const wireId of wireIdOf.values()) table.abandon(wireId);
      wireIdOf.clear();
      progressContexts.clear();
      progressTokenOf.clear();
    },
  });

  function progressArrived(message: JSONRPCMessage): void {
    const params = (message as { params?: Record<string, unknown> }).params;
    const token = params?.progressToken;
    const context = isId(token) ? progressContexts.get(token) : undefined;
    if (context === undefined || typeof params?.progress !== 'number') return;
    events.progress?.(context, {
      progress: params.progress,
      ...(typeof params.total === 'number' ? { total: params.total } : {}),
      ...(typeof params.message === 'string' ? { message: params.message } : {}),
    });
  }
  return {
    transport: wrapped,
    cancelsInFlight: () => [...cancelSends],
    request(method, params, options) {
      return this.open(method, params, options).answer;
    },
    open(method, params, options) {
      let resolve!: (message: Record<string, unknown>) => void;
      let reject!: (error: unknown) => void;
      const answer = new Promise<Record<string, unknown>>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      const wireId = table.open({ localId: null, method, answer: (message) => resolve(message) });
      // Closed by the client (a subscription ended): nothing more is waited for on it.
      options?.requestSignal?.addEventListener(
        'abort',
        () => {
          if (table.get(wireId) === undefined) return;
          table.abandon(wireId);
          resolve({ jsonrpc: '2.0', id: wireId, error: { code: STREAM_ENDED.code, message: 'closed by the client' } });
        },
        { once: true },
      );
      send({ jsonrpc: '2.0', id: wireId, method, params } as JSONRPCMessage, {
        ...options,
        onRequestStreamEnd: () => {
          if (table.get(wireId) === undefined) return;
          table.abandon(wireId);
          resolve({ jsonrpc: '2.0', id: wireId, error: { ...STREAM_ENDED } });
        },
      }).catch((error: unknown) => {
        table.abandon(wireId);
        reject(error);
      });
      return { id: wireId, answer };
    },
  };
}
