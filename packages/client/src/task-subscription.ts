import type { Timers } from './call-clocks.ts';
import { type ReconnectOptions, ReconnectSchedule } from './reconnect-schedule.ts';
import { sleep, type TaskState, TERMINAL_STATUSES } from './task-watch.ts';

/** `_meta` key naming the subscriptions/listen request a notification belongs to. */
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

export interface TaskSubscription {
  /** Resolves once every watched task is terminal (each seen once), or the subscription is closed. */
  readonly done: Promise<void>;
  /** Streams opened after the first: each a new request, the same filter. */
  readonly reconnects: number;
  close(): void;
}

export interface SubscriptionWire {
  /** Opens subscriptions/listen; its notifications go to `onNotification` until the answer. */
  listen(
    taskIds: readonly string[],
    signal: AbortSignal,
    onNotification: (message: Record<string, unknown>) => void,
  ): Promise<unknown>;
  getTask(taskId: string): Promise<TaskState>;
}

/**
 * Watches tasks over `subscriptions/listen` and keeps watching across dropped streams: a stream
 * that ends (the API restarted, a proxy cut it, the send failed) is reopened as a new request with
 * the same filter — the tasks not yet ended — after a full-jitter backoff, never resumed (no
 * Last-Event-ID: a reconnect is a new request). Every acknowledgement is followed by a refetch
 * of each task, since what changed while no stream was open was never sent; states are
 * deduplicated by task id and never go back (an older read arriving after a newer notification
 * is dropped), so `onTask` sees each change once and a task's end once.
 */
export function subscribeTasks(
  wire: SubscriptionWire,
  taskIds: readonly string[],
  options: {
    readonly onTask: (task: TaskState) => void;
    /** Each stream's acknowledgement: subscribed (again). */
    readonly onAcknowledged?: () => void;
    readonly timers: Timers;
    readonly reconnect?: ReconnectOptions;
  },
): TaskSubscription {
  const remaining = new Set(taskIds);
  const last = new Map<string, { readonly signature: string; readonly at: string; readonly terminal: boolean }>();
  const closing = new AbortController();
  const schedule = new ReconnectSchedule(options.reconnect);
  let reconnects = 0;
  let allEnded!: () => void;
  const ended = new Promise<void>((resolve) => {
    allEnded = resolve;
  });

  const take = (task: TaskState) => {
    if (typeof task?.taskId !== 'string' || (!remaining.has(task.taskId) && !last.has(task.taskId))) return;
    const at = task.lastUpdatedAt ?? '';
    const previous = last.get(task.taskId);
    if (previous !== undefined && (previous.terminal || at < previous.at)) return;
    const signature = `${task.status}|${at}|${task.statusMessage ?? ''}`;
    if (previous?.signature === signature) return;
    const terminal = TERMINAL_STATUSES.includes(task.status);
    last.set(task.taskId, { signature, at, terminal });
    if (terminal) remaining.delete(task.taskId);
    options.onTask(task);
    if (remaining.size === 0) allEnded();
  };

  const refetch = () => {
    for (const taskId of [...remaining]) wire.getTask(taskId).then(take, () => {});
  };

  const run = async () => {
    while (!closing.signal.aborted && remaining.size > 0) {
      const stream = new AbortController();
      const stop = () => stream.abort();
      closing.signal.addEventListener('abort', stop, { once: true });
      const listened = wire
        .listen([...remaining], stream.signal, (message) => {
          if (message.method === 'notifications/subscriptions/acknowledged') {
            schedule.reset();
            options.onAcknowledged?.();
            refetch();
          } else if (message.method === 'notifications/tasks') {
            take(message.params as TaskState);
          }
        })
        .catch(() => {});
      await Promise.race([
        listened,
        ended,
        new Promise((resolve) => closing.signal.addEventListener('abort', resolve)),
      ]);
      stream.abort();
      closing.signal.removeEventListener('abort', stop);
      if (closing.signal.aborted || remaining.size === 0) break;
      reconnects += 1;
      await sleep(options.timers, schedule.next(), closing.signal).catch(() => {});
    }
  };

  const done = run();
  return {
    done,
    get reconnects() {
      return reconnects;
    },
    close: () => closing.abort(),
  };
}
