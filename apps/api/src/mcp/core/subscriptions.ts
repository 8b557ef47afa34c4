/** At most this many URIs one connection is subscribed to at a time. */
export const MAX_RESOURCE_SUBSCRIPTIONS = 100;

/**
 * What resources/subscribe and resources/unsubscribe change for a connection: a pipe's watches
 * here, or a Streamable HTTP session's URIs in Postgres (watched where its GET stream is).
 */
export interface SubscriptionSet {
  /** False when the connection already holds MAX_RESOURCE_SUBSCRIPTIONS others. */
  subscribe(uri: string): boolean | Promise<boolean>;
  /** Whether the connection is subscribed to `uri` (as far as this request knows). */
  has(uri: string): boolean;
  unsubscribe(uri: string): void | Promise<void>;
}

/** A connection's resources/subscribe watches (handshake revisions): `stop` with the connection. */
export interface ResourceSubscriptions extends SubscriptionSet {
  subscribe(uri: string): boolean;
  unsubscribe(uri: string): void;
  stop(): void;
}

/** Where a subscription's messages go: an SSE response, or the stdio pipe. */
export interface ListenSink {
  /** A notification; one still undelivered with the same `key` is replaced by it. */
  push(message: Record<string, unknown>, key: string): void;
  /** The graceful end: the listen request's result; nothing follows it. */
  finish(message: Record<string, unknown>): void;
}

/**
 * A subscriptions/listen subscription as its transport drives it: `start` once the stream is open,
 * `stop` when the client went away, `endGracefully` at the server's shutdown.
 */
export interface ListenSubscription {
  start(): Promise<void>;
  stop(): void;
  endGracefully(): void;
}
