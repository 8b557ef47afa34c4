import pg from 'pg';
import { parseTaskNotification, TASK_CHANNEL, type TaskNotification } from './task-record.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  readonly logger: { readonly warn: LogFn };
  /** Delay before reconnecting a lost listener connection. */
  readonly reconnectDelayMs?: number;
}

/**
 * One dedicated connection LISTENing on TASK_CHANNEL, reconnecting when it is lost. NOTIFY is a
 * latency hint: whoever uses this also polls, so a notification missed while reconnecting only
 * delays what it announced.
 */
export class TaskListener {
  readonly #options: TaskListenerOptions;
  readonly #handlers = new Set<(notification: TaskNotification) => void>();
  #client: pg.Client | null = null;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: TaskListenerOptions) {
    this.#options = options;
  }

  onNotification(handler: (notification: TaskNotification) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
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
    client.on('notification', (message) => {
      const notification = parseTaskNotification(message.payload);
      if (notification) for (const handler of this.#handlers) handler(notification);
    });
    client.on('error', (error) => {
      this.#options.logger.warn({ error: error.message }, 'task listener lost its connection; reconnecting');
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    await client.connect();
    await client.query(`LISTEN ${TASK_CHANNEL}`);
    this.#client = client;
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
        this.#options.logger.warn({ error: error.message }, 'task listener could not reconnect; polling meanwhile');
        this.#scheduleReconnect();
      });
    }, this.#options.reconnectDelayMs ?? 1_000);
    this.#reconnectTimer.unref();
  }
}
