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
  /**
   * The request's own response stream (Streamable HTTP) ended, whether or not its response came
   * on it (a response arrives, and is settled, before its stream ends).
   */
  streamEnded(id: string | number): void;
  /** The connection ended, whatever ended it. */
  closed(): void;
}

type SendOptions = { requestSignal?: AbortSignal; onRequestStreamEnd?: () => void } & Record<string, unknown>;
type MessageHandler = (message: JSONRPCMessage, extra?: unknown) => void;

/**
 * The transport as the SDK client sees it, with the gateway's id map kept on its wire. A Proxy,
 * not a wrapper object: the SDKs read more off a transport than the interface says
 * (`hasPerRequestStream`, `sessionId`, `setProtocolVersion` on HTTP), and all of it must reach
 * the real one. `send` is seen on its way out; `onmessage` and `onclose` are the client's, kept
 * in slots of their own and called by one fixed handler on the real transport, so whatever the
 * client sets or reads back (the v2 client swaps them during its probe) is what it set.
 */
export function trackedTransport(transport: Transport, hooks: WireHooks): Transport {
  const isId = (id: unknown): id is string | number => typeof id === 'string' || typeof id === 'number';
  let onmessage: MessageHandler | undefined;
  let onclose: (() => void) | undefined;
  const send = async (message: JSONRPCMessage, options?: SendOptions) => {
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
      await (transport.send as (message: JSONRPCMessage, options?: SendOptions) => Promise<void>)(message, forwarded);
    } catch (error) {
      // Never sent: nothing downstream works on it.
      if (isCall) hooks.settled(id);
      throw error;
    }
  };
  transport.onmessage = ((message: JSONRPCMessage, extra?: unknown) => {
    const received = message as { id?: unknown; method?: string };
    if (received.method === undefined && isId(received.id) && ('result' in message || 'error' in message)) {
      hooks.settled(received.id);
    }
    onmessage?.(message, extra);
  }) as Transport['onmessage'];
  transport.onclose = () => {
    hooks.closed();
    onclose?.();
  };
  // Methods are bound once, so the client sees the same function each time it reads one.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(transport, {
    get(target, property) {
      if (property === 'send') return send;
      if (property === 'onmessage') return onmessage;
      if (property === 'onclose') return onclose;
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let method = bound.get(property);
      if (method === undefined || (method as { original?: unknown }).original !== value) {
        method = Object.assign(value.bind(target), { original: value });
        bound.set(property, method);
      }
      return method;
    },
    set(target, property, value) {
      if (property === 'onmessage') onmessage = value as MessageHandler | undefined;
      else if (property === 'onclose') onclose = value as (() => void) | undefined;
      else return Reflect.set(target, property, value, target);
      return true;
    },
  });
}
