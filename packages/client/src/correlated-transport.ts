import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CorrelationTable } from './correlation-table.ts';
import { interceptTransport } from './transport-proxy.ts';

/** What the table keeps of a request: the SDK's own id for it, and its method. */
export interface WireRequest {
  readonly localId: string | number;
  readonly method: string;
}

export interface WireEvents {
  /** A response to a request given up on arrived, and was dropped. */
  readonly late?: (method: string, wireId: number) => void;
  /** A response to no request of ours arrived, and was dropped. */
  readonly unknown?: (message: JSONRPCMessage) => void;
  /** A cancel of `initialize` was not sent: the spec forbids it (the connection is closed instead). */
  readonly initializeCancelDropped?: () => void;
}

type Id = string | number;

/**
 * The error the SDK client gets when a request's own response stream ended without its answer:
 * sent, and lost. Without it the SDK would wait for an answer that cannot come any more.
 */
export const STREAM_ENDED = { code: -32099, message: 'the response stream ended before the response' } as const;
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
): Transport {
  // This connection's requests still open: the SDK's id → the wire id.
  const wireIdOf = new Map<Id, number>();
  return interceptTransport(transport, {
    async send(message, options, forward, deliver) {
      const sent = message as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
      if (typeof sent.method === 'string' && isId(sent.id)) {
        const localId = sent.id;
        const wireId = table.open({ localId, method: sent.method });
        wireIdOf.set(localId, wireId);
        options?.requestSignal?.addEventListener(
          'abort',
          () => {
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
        return forward({ ...message, id: wireId } as JSONRPCMessage, forwarded);
      }
      if (sent.method === 'notifications/cancelled' && isId(sent.params?.requestId)) {
        const localId = sent.params.requestId;
        const wireId = wireIdOf.get(localId);
        // Answered already (the SDK cancels what it stopped waiting for): nothing to cancel on the wire.
        if (wireId === undefined) return;
        wireIdOf.delete(localId);
        if (table.abandon(wireId)?.method === 'initialize') {
          events.initializeCancelDropped?.();
          return;
        }
        return forward({ ...message, params: { ...sent.params, requestId: wireId } } as JSONRPCMessage, options);
      }
      return forward(message, options);
    },
    message(message, extra, deliver) {
      const received = message as { id?: unknown; method?: unknown };
      const isResponse = received.method === undefined && ('result' in message || 'error' in message);
      if (!isResponse) return deliver(message, extra);
      const settlement = table.settle(received.id);
      if (settlement.kind === 'late') return events.late?.(settlement.entry.method, received.id as number);
      if (settlement.kind === 'unknown') return events.unknown?.(message);
      wireIdOf.delete(settlement.entry.localId);
      deliver({ ...message, id: settlement.entry.localId } as JSONRPCMessage, extra);
    },
    close() {
      // Nothing more arrives on this connection; what was still open stays a tombstone for a while
      // (a resumed session may still answer it) and its ids are never used again.
      for (const wireId of wireIdOf.values()) table.abandon(wireId);
      wireIdOf.clear();
    },
  });
}
