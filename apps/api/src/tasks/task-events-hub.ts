import { TaskListener, type TaskNotification } from '@taskgate/db';
import { isTerminalStatus } from '@taskgate/reliability';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** How many recent terminal notifications are remembered for late subscribers. */
const RECENT_TERMINAL = 4_096;

/**
 * Fans task notifications out to the streams watching each task, from one LISTEN connection per
 * API process. Watchers poll as well (NOTIFY is only a hint), so a hub without a listener (the
 * embedded Postgres) is still correct, only slower.
 */
export class TaskEventsHub {
  readonly #listener: TaskListener | null;
  readonly #subscribers = new Map<string, Set<(notification: TaskNotification | null) => void>>();
  /** By tenant: every notification of the tenant's tasks (the console's live list hears new tasks). */
  readonly #tenantSubscribers = new Map<string, Set<(notification: TaskNotification | null) => void>>();
  /**
   * The latest terminal notifications, oldest first. A caller subscribes after its task was
   * created, and a fast worker's terminal NOTIFY may arrive before that: the subscriber is told at
   * once instead of waiting for its poll.
   */
  readonly #recentTerminal = new Map<string, TaskNotification>();

  constructor(options: { connectionString: string; listen: boolean; logger: { readonly warn: LogFn } }) {
    this.#listener = options.listen
      ? new TaskListener({
          connectionString: options.connectionString,
          applicationName: 'taskgate-api-events',
          logger: options.logger,
        })
      : null;
    this.#listener?.onNotification((notification) => {
      if (isTerminalStatus(notification.status)) this.#remember(notification);
      for (const handler of this.#subscribers.get(notification.id) ?? []) handler(notification);
      for (const handler of this.#tenantSubscribers.get(notification.tenant) ?? []) handler(notification);
    });
    // The LISTEN connection was lost and is back: whatever changed meanwhile went unheard, so every
    // watcher re-reads now instead of at its next poll (null: "something may have changed").
    this.#listener?.onReconnect(() => {
      for (const handlers of this.#subscribers.values()) for (const handler of handlers) handler(null);
      for (const handlers of this.#tenantSubscribers.values()) for (const handler of handlers) handler(null);
    });
  }

  /** Whether notifications arrive at all (without them, watchers rely on their polls). */
  get listening(): boolean {
    return this.#listener !== null;
  }

  /** Null without a listener (embedded); otherwise whether its connection is up now. */
  get connected(): boolean | null {
    return this.#listener === null ? null : this.#listener.connected;
  }

  /** How many watchers of this process subscribe to a task now (diagnostics; tests order on it). */
  subscribers(taskId: string): number {
    return this.#subscribers.get(taskId)?.size ?? 0;
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
    const ended = this.#recentTerminal.get(taskId);
    if (ended) queueMicrotask(() => handlers.has(onChange) && onChange(ended));
    return () => {
      handlers.delete(onChange);
      if (handlers.size === 0) this.#subscribers.delete(taskId);
    };
  }

  /**
   * Calls `onNotification` with every notification of the tenant's tasks (null: the listener
   * reconnected, some may have been missed). Returns the unsubscribe function.
   */
  subscribeTenant(tenant: string, onNotification: (notification: TaskNotification | null) => void): () => void {
    let handlers = this.#tenantSubscribers.get(tenant);
    if (!handlers) {
      handlers = new Set();
      this.#tenantSubscribers.set(tenant, handlers);
    }
    handlers.add(onNotification);
    return () => {
      handlers.delete(onNotification);
      if (handlers.size === 0) this.#tenantSubscribers.delete(tenant);
    };
  }

  #remember(notification: TaskNotification): void {
    this.#recentTerminal.delete(notification.id);
    this.#recentTerminal.set(notification.id, notification);
    if (this.#recentTerminal.size > RECENT_TERMINAL) {
      this.#recentTerminal.delete(this.#recentTerminal.keys().next().value as string);
    }
  }

  async stop(): Promise<void> {
    await this.#listener?.stop();
  }
}
