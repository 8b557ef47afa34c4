import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export type SendOptions = { requestSignal?: AbortSignal; onRequestStreamEnd?: () => void } & Record<string, unknown>;
export type MessageHandler = (message: JSONRPCMessage, extra?: unknown) => void;

export interface Interceptors {
  /**
   * Called for every message the SDK client sends; `forward` sends it (or another) on, and
   * `deliver` hands a message to the SDK client as if it had arrived.
   */
  readonly send: (
    message: JSONRPCMessage,
    options: SendOptions | undefined,
    forward: (message: JSONRPCMessage, options?: SendOptions) => Promise<void>,
    deliver: MessageHandler,
  ) => Promise<void>;
  /** Called for every message that arrives; `deliver` hands it (or another) to the SDK client. */
  readonly message: (message: JSONRPCMessage, extra: unknown, deliver: MessageHandler) => void;
  /** The connection ended, whatever ended it; called before the SDK client hears of it. */
  readonly close?: () => void;
}

/**
 * A transport as an SDK client sees it, with its traffic seen (and rewritten) on the way. A Proxy,
 * not a wrapper object: the SDKs read more off a transport than the interface says
 * (`hasPerRequestStream`, `sessionId`, `setProtocolVersion` on HTTP), and all of it must reach the
 * real one. `onmessage` and `onclose` are the client's, kept in slots of their own and called by
 * one fixed handler on the real transport, so whatever the client sets or reads back (the v2
 * client swaps them during its version probe) is what it set.
 */
export function interceptTransport(transport: Transport, interceptors: Interceptors): Transport {
  let onmessage: MessageHandler | undefined;
  let onclose: (() => void) | undefined;
  const forward = (message: JSONRPCMessage, options?: SendOptions) =>
    (transport.send as (message: JSONRPCMessage, options?: SendOptions) => Promise<void>)(message, options);
  const deliver: MessageHandler = (message, extra) => onmessage?.(message, extra);
  const send = (message: JSONRPCMessage, options?: SendOptions) =>
    interceptors.send(message, options, forward, deliver);
  transport.onmessage = ((message: JSONRPCMessage, extra?: unknown) =>
    interceptors.message(message, extra, deliver)) as Transport['onmessage'];
  transport.onclose = () => {
    interceptors.close?.();
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
