import pg from 'pg';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface ChannelListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /** A Postgres identifier; it is interpolated into LISTEN. */
  readonly channel: string;
  /** Names the listener in log lines ("task listener", "outbox listener"). */
  readonly name: string;
  readonly logger: { readonly warn: LogFn };
  readonly onNotification: (payload: string | undefined) => void;
  /** After every (re)connect: what was notified while the connection was down went unheard. */
  readonly onConnected?: () => void;
  /** Delay before reconnecting a lost connection (default 1 s). */
  readonly reconnectDelayMs?: number;
}

/**
 * One dedicated connection LISTENing on a channel, reconnecting when it is lost. NOTIFY is a
 * latency hint: whoever listens also polls, so a notification missed while reconnecting only
 * delays what it announced.
 */
export class ChannelListener {
  readonly #options: ChannelListenerOptions;
  #client: pg.Client | null = null;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: ChannelListenerOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new TypeError(`invalid channel name ${options.channel}`);
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
    const { name, logger } = this.#options;
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: this.#options.applicationName,
    });
    client.on('notification', (message) => this.#options.onNotification(message.payload));
    client.on('error', (error) => {
      logger.warn({ error: error.message }, `${name} lost its connection; reconnecting`);
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    await client.connect();
    await client.query(`LISTEN ${this.#options.channel}`);
    // stop() ran while this connection was being made: nobody will end it otherwise.
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#options.onConnected?.();
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
        this.#options.logger.warn(
          { error: error.message },
          `${this.#options.name} could not reconnect; polling meanwhile`,
        );
        this.#scheduleReconnect();
      });
    }, this.#options.reconnectDelayMs ?? 1_000);
    this.#reconnectTimer.unref();
  }
}
