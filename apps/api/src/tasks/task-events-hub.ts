import { TaskListener, type TaskNotification } from '@taskgate/db';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Fans task notifications out to the streams watching each task, from one LISTEN connection per
 * API process. Watchers poll as well (NOTIFY is only a hint), so a hub without a listener (the
 * embedded Postgres) is still correct, only slower.
 */
export class TaskEventsHub {
  readonly #listener: TaskListener | null;
  readonly #subscribers = new Map<string, Set<(notification: TaskNotification | null) => void>>();

  constructor(options: { connectionString: string; listen: boolean; logger: { readonly warn: LogFn } }) {
    this.#listener = options.listen
      ? new TaskListener({
          connectionString: options.connectionString,
          applicationName: 'taskgate-api-events',
          logger: options.logger,
        })
      : null;
    this.#listener?.onNotification((notification) => {
      for (const handler of this.#subscribers.get(notification.id) ?? []) handler(notification);
    });
  }

  async start(): Promise<void> {
    await this.#listener?.start();
  }

  /**
   * Calls `onChange` with the notification whenever the task changed (status, progress, a cancel
   * request). Returns the unsubscribe function.
   */
  subscribe(taskId: string, onChange: (notification: TaskNotification | null) => void): () => void {
    let handlers = this.#subscribers.get(taskId);
    if (!handlers) {
      handlers = new Set();
      this.#subscribers.set(taskId, handlers);
    }
    handlers.add(onChange);
    return () => {
      handlers.delete(onChange);
      if (handlers.size === 0) this.#subscribers.delete(taskId);
    };
  }

  async stop(): Promise<void> {
    await this.#listener?.stop();
  }
}
