import { type BackoffOptions, backoffDelay } from '@taskgate/reliability';
import pg from 'pg';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface ChannelListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /** A Postgres identifier; it is interpolated into LISTEN. */
  readonly channel: string;
  /** Names the listener in log lines ("task listener", "outbox listener"). */
  readonly name: string;
  readonly logger: { readonly info?: LogFn; readonly warn: LogFn };
  readonly onNotification: (payload: string | undefined) => void;
  /** After every (re)connect: what was notified while the connection was down went unheard. */
  readonly onConnected?: () => void;
  /** Reconnect delays: capped exponential with full jitter (default 250 ms doubling to 10 s). */
  readonly reconnectBackoff?: BackoffOptions;
  /**
   * How often the idle connection is probed with a query (default 10 s). A connection that dies
   * without a FIN (a cut network, a paused VM) sends no error; the probe, bounded by a timeout of
   * half the interval, finds it.
   */
  readonly probeIntervalMs?: number;
  readonly random?: () => number;
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, capMs: 10_000 };

/**
 * One dedicated connection LISTENing on a channel, reconnecting when it is lost. NOTIFY is a
 * latency hint: whoever listens also polls, so a notification missed while reconnecting only
 * delays what it announced, and onConnected lets the owner re-read at once after a gap.
 */
export class ChannelListener {
  readonly #options: ChannelListenerOptions;
  #client: pg.Client | null = null;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #probeTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #stopped = false;

  constructor(options: ChannelListenerOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new TypeError(`invalid channel name ${options.channel}`);
    this.#options = options;
  }

  /** Whether the LISTEN connection is up now (for readiness). */
  get connected(): boolean {
    return this.#client !== null;
  }

  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    clearTimeout(this.#probeTimer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    const { name, logger } = this.#options;
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: this.#options.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    client.on('notification', (message) => this.#options.onNotification(message.payload));
    client.on('error', (error) => {
      if (this.#client === client) logger.warn({ error: error.message }, `${name} lost its connection; reconnecting`);
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.#options.channel}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    // stop() ran while this connection was being made: nobody will end it otherwise.
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    if (this.#failures > 0) logger.info?.({ attempts: this.#failures }, `${name} reconnected`);
    this.#failures = 0;
    this.#scheduleProbe(client);
    this.#options.onConnected?.();
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = null;
    clearTimeout(this.#probeTimer);
    client.end().catch(() => {});
    this.#scheduleReconnect();
  }

  #scheduleProbe(client: pg.Client): void {
    const interval = this.#options.probeIntervalMs ?? 10_000;
    this.#probeTimer = setTimeout(() => {
      if (this.#client !== client) return;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer to the liveness probe in ${interval / 2} ms`)),
          interval / 2,
        );
      });
      Promise.race([client.query('SELECT 1'), timeout])
        .then(
          () => this.#scheduleProbe(client),
          (error: Error) => {
            if (this.#client !== client) return;
            this.#options.logger.warn(
              { error: error.message },
              `${this.#options.name} stopped answering; reconnecting`,
            );
            this.#lost(client);
          },
        )
        .finally(() => clearTimeout(timer));
    }, interval);
    this.#probeTimer.unref();
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return;
    const delay = backoffDelay(
      Math.min(this.#failures, 30),
      this.#options.reconnectBackoff ?? DEFAULT_BACKOFF,
      this.#options.random ?? Math.random,
    );
    this.#failures += 1;
    this.#reconnectTimer = setTimeout(() => {
      this.#connect().catch((error: Error) => {
        this.#options.logger.warn(
          { error: error.message, attempt: this.#failures },
          `${this.#options.name} could not reconnect; polling meanwhile`,
        );
        this.#scheduleReconnect();
      });
    }, delay);
    this.#reconnectTimer.unref();
  }
}
