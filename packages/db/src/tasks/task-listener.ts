import type { BackoffOptions } from '@taskgate/reliability';
import { ChannelListener } from '../channel-listener.ts';
import { parseTaskNotification, TASK_CHANNEL, type TaskNotification } from './task-record.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  readonly logger: { readonly info?: LogFn; readonly warn: LogFn };
  /** Reconnect delays of a lost listener connection (default 250 ms doubling to 10 s, jittered). */
  readonly reconnectBackoff?: BackoffOptions;
}

/**
 * LISTEN on TASK_CHANNEL, fanning parsed notifications out to handlers. Whoever uses this also
 * polls, so a notification missed while reconnecting only delays what it announced; onReconnect
 * handlers run after each reconnect, to re-read at once what the gap may have hidden.
 */
export class TaskListener {
  readonly #handlers = new Set<(notification: TaskNotification) => void>();
  readonly #reconnectHandlers = new Set<() => void>();
  readonly #listener: ChannelListener;
  #started = false;

  constructor(options: TaskListenerOptions) {
    this.#listener = new ChannelListener({
      connectionString: options.connectionString,
      applicationName: options.applicationName,
      channel: TASK_CHANNEL,
      name: 'task listener',
      logger: options.logger,
      onNotification: (payload) => {
        const notification = parseTaskNotification(payload);
        if (notification) for (const handler of this.#handlers) handler(notification);
      },
      onConnected: () => {
        // The first connect is start(); every later one follows a gap.
        if (!this.#started) return;
        for (const handler of this.#reconnectHandlers) handler();
      },
      ...(options.reconnectBackoff === undefined ? {} : { reconnectBackoff: options.reconnectBackoff }),
    });
  }

  /** Whether the LISTEN connection is up now. */
  get connected(): boolean {
    return this.#listener.connected;
  }

  onNotification(handler: (notification: TaskNotification) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** After the connection was lost and made again: notifications in between went unheard. */
  onReconnect(handler: () => void): () => void {
    this.#reconnectHandlers.add(handler);
    return () => this.#reconnectHandlers.delete(handler);
  }

  async start(): Promise<void> {
    await this.#listener.start();
    this.#started = true;
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }
}
