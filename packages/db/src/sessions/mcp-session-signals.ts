import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { ChannelListener } from '../channel-listener.ts';
import type { Database } from '../schema.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * What a client POSTs about a request of its session that the instance it landed on does not
 * hold: a `notifications/cancelled`, or its response to a request of the server's. Behind a load
 * balancer any instance may take the POST, and only the instance holding the request can act on it.
 * `resources`: the session's resources/subscribe URIs changed (they are kept in mcp_sessions): the
 * instance holding its GET stream reads them again now, rather than at the session's next request.
 * `elicitation_complete`: a URL elicitation its client was sent in a -32042 is done (POST
 * /v1/elicitations/{id}/complete): the instance holding its GET stream tells the client there.
 */
export type SessionSignal =
  | {
      readonly kind: 'cancel';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly requestId: string | number;
      readonly reason: string | null;
    }
  | {
      readonly kind: 'response';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly message: Readonly<Record<string, unknown>>;
    }
  | { readonly kind: 'resources'; readonly tenantId: string; readonly sessionId: string }
  | {
      readonly kind: 'elicitation_complete';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly elicitationId: string;
    };

/** Carries session signals to every API instance (each acts only on the requests it holds). */
export interface SessionSignals {
  /** Best effort: a signal that cannot be sent is logged and dropped. */
  send(signal: SessionSignal): void;
  onSignal(handler: (signal: SessionSignal) => void): () => void;
}

export const SESSION_CHANNEL = 'taskgate_mcp_session';
/** NOTIFY's payload must stay under 8,000 bytes; a larger response cannot travel this way. */
export const MAX_SIGNAL_BYTES = 7_900;

/**
 * MCP session signals over Postgres NOTIFY (this file owns the channel) on SESSION_CHANNEL, with one LISTEN connection per
 * instance. Signals are not stored: one sent while an instance's listener reconnects is lost, as
 * the POST would have been had it landed on an instance that was down (the cancelled call's
 * clocks still bound it; an unanswered request of the server's times out with the call).
 */
export class DatabaseSessionSignals implements SessionSignals {
  readonly #db: Kysely<Database>;
  readonly #listener: ChannelListener;
  readonly #logger: { readonly warn: LogFn; readonly debug?: LogFn };
  readonly #handlers = new Set<(signal: SessionSignal) => void>();
  /** This process's signals come back to it too: they are skipped by this mark. */
  readonly #origin = randomUUID();

  constructor(options: {
    readonly db: Kysely<Database>;
    readonly connectionString: string;
    readonly applicationName: string;
    readonly logger: { readonly warn: LogFn; readonly debug?: LogFn; readonly info?: LogFn };
  }) {
    this.#db = options.db;
    this.#logger = options.logger;
    this.#listener = new ChannelListener({
      connectionString: options.connectionString,
      applicationName: options.applicationName,
      channel: SESSION_CHANNEL,
      name: 'MCP session listener',
      logger: options.logger,
      onNotification: (payload) => this.#received(payload),
    });
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  stop(): Promise<void> {
    this.#handlers.clear();
    return this.#listener.stop();
  }

  send(signal: SessionSignal): void {
    const payload = JSON.stringify({ ...signal, origin: this.#origin });
    if (Buffer.byteLength(payload) > MAX_SIGNAL_BYTES) {
      this.#logger.warn(
        { kind: signal.kind, sessionId: signal.sessionId, bytes: Buffer.byteLength(payload) },
        `a session signal over ${MAX_SIGNAL_BYTES} bytes cannot reach the other instances; only this one acted on it`,
      );
      return;
    }
    sql`SELECT pg_notify(${SESSION_CHANNEL}, ${payload})`.execute(this.#db).catch((error: Error) => {
      this.#logger.warn({ kind: signal.kind, error: error.message }, 'a session signal was not sent');
    });
  }

  onSignal(handler: (signal: SessionSignal) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  #received(payload: string | undefined): void {
    const signal = parseSignal(payload);
    if (!signal || signal.origin === this.#origin) return;
    const { origin: _origin, ...rest } = signal;
    for (const handler of this.#handlers) {
      // A payload any instance may send is never this process's crash: a throwing handler is logged.
      try {
        handler(rest as SessionSignal);
      } catch (error) {
        this.#logger.warn(
          { kind: rest.kind, error: (error as Error).message },
          'a session signal could not be handled',
        );
      }
    }
  }
}

/** A signal from the channel, checked field by field (anything else on it is ignored). */
function parseSignal(payload: string | undefined): (SessionSignal & { origin?: unknown }) | null {
  if (!payload) return null;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  if (typeof value.tenantId !== 'string' || typeof value.sessionId !== 'string') return null;
  if (value.kind === 'cancel') {
    const id = value.requestId;
    if (typeof id !== 'string' && typeof id !== 'number') return null;
    if (value.reason !== null && typeof value.reason !== 'string') return null;
    return value as unknown as SessionSignal;
  }
  if (value.kind === 'resources') return value as unknown as SessionSignal;
  if (value.kind === 'elicitation_complete' && typeof value.elicitationId === 'string') {
    return value as unknown as SessionSignal;
  }
  if (value.kind === 'response' && typeof value.message === 'object' && value.message !== null) {
    return value as unknown as SessionSignal;
  }
  return null;
}
