import { ChannelListener } from '../channel-listener.ts';
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
 * LISTEN on TASK_CHANNEL, fanning parsed notifications out to handlers. Whoever uses this also
 * polls, so a notification missed while reconnecting only delays what it announced.
 */
export class TaskListener {
  readonly #handlers = new Set<(notification: TaskNotification) => void>();
  readonly #listener: ChannelListener;

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
      ...(options.reconnectDelayMs === undefined ? {} : { reconnectDelayMs: options.reconnectDelayMs }),
    });
  }

  onNotification(handler: (notification: TaskNotification) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }
}
