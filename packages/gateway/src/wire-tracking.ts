import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { interceptTransport } from '@taskgate/client';

export interface WireHooks {
  /** A tools/call request went out with this id and this _meta. */
  sent(id: string | number, meta: Record<string, unknown> | undefined): void;
  /**
   * Nothing more will come for this request: its response arrived, its cancel was sent (the
   * spec's receiver does not answer a cancelled request), its send failed, or its own request
   * stream was aborted (the 2026-07-28 cancel over HTTP).
   */
  settled(id: string | number): void;
  /**
   * The request's own response stream (Streamable HTTP) ended, whether or not its response came
   * on it (a response arrives, and is settled, before its stream ends).
   */
  streamEnded(id: string | number): void;
  /** The connection ended, whatever ended it. */
  closed(): void;
}

/**
 * The transport as the SDK client sees it, with the gateway's id map kept on its wire
 * (interceptTransport: the SDKs read more off a transport than the interface says, and all of it
 * reaches the real one).
 */
export function trackedTransport(transport: Transport, hooks: WireHooks): Transport {
  const isId = (id: unknown): id is string | number => typeof id === 'string' || typeof id === 'number';
  return interceptTransport(transport, {
    async send(message, options, forward) {
      const sent = message as { id?: unknown; method?: string; params?: Record<string, unknown> };
      const id = sent.id;
      const isCall = sent.method === 'tools/call' && isId(id);
      let forwarded = options;
      if (isCall) {
        hooks.sent(id, sent.params?._meta as Record<string, unknown> | undefined);
        options?.requestSignal?.addEventListener('abort', () => hooks.settled(id), { once: true });
        // The SDK passes no onRequestStreamEnd of its own: without this, a stream that breaks
        // before the response leaves the call waiting for ever.
        forwarded = {
          ...options,
          onRequestStreamEnd: () => {
            options?.onRequestStreamEnd?.();
            hooks.streamEnded(id);
          },
        };
      } else if (sent.method === 'notifications/cancelled' && isId(sent.params?.requestId)) {
        hooks.settled(sent.params.requestId);
      }
      try {
        await forward(message, forwarded);
      } catch (error) {
        // Never sent: nothing downstream works on it.
        if (isCall) hooks.settled(id);
        throw error;
      }
    },
    message(message, extra, deliver) {
      const received = message as { id?: unknown; method?: string };
      if (received.method === undefined && isId(received.id) && ('result' in message || 'error' in message)) {
        hooks.settled(received.id);
      }
      deliver(message, extra);
    },
    close: () => hooks.closed(),
  });
}
