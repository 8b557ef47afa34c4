import pg from 'pg';

/** The channel migrations/0003's statement trigger notifies on every INSERT into outbox. */
export const OUTBOX_CHANNEL = 'taskgate_outbox';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface OutboxListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  readonly logger: { readonly warn: LogFn };
  /** Called for every notification, and after each (re)connect: rows may have arrived unheard. */
  readonly onWake: () => void;
  readonly reconnectDelayMs?: number;
}

/**
 * One dedicated connection LISTENing on OUTBOX_CHANNEL, reconnecting when it is lost. The
 * notification is only a wake-up hint (its payload is empty); the relay polls as well, so a
 * notification lost while reconnecting delays delivery by at most one poll.
 */
export class OutboxListener {
  readonly #options: OutboxListenerOptions;
  #client: pg.Client | null = null;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: OutboxListenerOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: this.#options.applicationName,
    });
    client.on('notification', () => this.#options.onWake());
    client.on('error', (error) => {
      this.#options.logger.warn({ error: error.message }, 'outbox listener lost its connection; reconnecting');
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    await client.connect();
    await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#options.onWake();
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = null;
    client.end().catch(() => {});
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#connect().catch((error: Error) => {
        this.#options.logger.warn({ error: error.message }, 'outbox listener could not reconnect; polling meanwhile');
        this.#scheduleReconnect();
      });
    }, this.#options.reconnectDelayMs ?? 1_000);
    this.#reconnectTimer.unref();
  }
}
