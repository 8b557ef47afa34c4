import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface WireHooks {
  /** A tools/call request went out with this id and this _meta. */
  sent(id: string | number, meta: Record<string, unknown> | undefined): void;
  /**
   * Nothing more will come for this request: its response arrived, its cancel was sent (the
   * spec's receiver does not answer a cancelled request), its send failed, or its own request
   * stream was aborted (the 2026-07-28 cancel over HTTP).
   */
  settled(id: string | number): void;
  /** The connection ended, whatever ended it. */
  closed(): void;
}

type SendOptions = { requestSignal?: AbortSignal } & Record<string, unknown>;

/**
 * The transport as the SDK client sees it, with the gateway's id map kept on its wire. A Proxy,
 * not a wrapper object: the SDKs read more off a transport than the interface says
 * (`hasPerRequestStream`, `sessionId`, `setProtocolVersion` on HTTP), and all of it must reach
 * the real one. Only `send`, and the handlers the client installs, are seen on the way.
 */
export function trackedTransport(transport: Transport, hooks: WireHooks): Transport {
  const isId = (id: unknown): id is string | number => typeof id === 'string' || typeof id === 'number';
  const send = async (message: JSONRPCMessage, options?: SendOptions) => {
    const sent = message as { id?: unknown; method?: string; params?: Record<string, unknown> };
    const isCall = sent.method === 'tools/call' && isId(sent.id);
    if (isCall) {
      hooks.sent(sent.id as string | number, sent.params?._meta as Record<string, unknown> | undefined);
      options?.requestSignal?.addEventListener('abort', () => hooks.settled(sent.id as string | number), {
        once: true,
      });
    } else if (sent.method === 'notifications/cancelled' && isId(sent.params?.requestId)) {
      hooks.settled(sent.params.requestId);
    }
    try {
      await (transport.send as (message: JSONRPCMessage, options?: SendOptions) => Promise<void>)(message, options);
    } catch (error) {
      // Never sent: nothing downstream works on it.
      if (isCall) hooks.settled(sent.id as string | number);
      throw error;
    }
  };
  return new Proxy(transport, {
    get(target, property) {
      if (property === 'send') return send;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set(target, property, value) {
      if (property === 'onmessage') {
        const handler = value as ((message: JSONRPCMessage, extra?: unknown) => void) | undefined;
        target.onmessage = (message: JSONRPCMessage, extra?: unknown) => {
          const received = message as { id?: unknown; method?: string };
          if (received.method === undefined && isId(received.id) && ('result' in message || 'error' in message)) {
            hooks.settled(received.id);
          }
          (handler as ((message: JSONRPCMessage, extra?: unknown) => void) | undefined)?.(message, extra);
        };
        return true;
      }
      if (property === 'onclose') {
        const handler = value as (() => void) | undefined;
        target.onclose = () => {
          hooks.closed();
          handler?.();
        };
        return true;
      }
      return Reflect.set(target, property, value, target);
    },
  });
}
