import { isTerminalStatus } from '@taskgate/reliability';
import { UriTemplate } from '@taskgate/tools';
import { changesStatus, type TaskWatcher } from '../../tasks/task-watch.ts';
import { TASK_RESOURCE_TEMPLATE } from '../task-resources.ts';

/** At most this many URIs one connection is subscribed to at a time. */
export const MAX_RESOURCE_SUBSCRIPTIONS = 100;

/** A connection's resources/subscribe set (handshake revisions): `stop` with the connection. */
export interface ResourceSubscriptions {
  /** False when the connection already holds MAX_RESOURCE_SUBSCRIPTIONS others. */
  subscribe(uri: string): boolean;
  unsubscribe(uri: string): void;
  stop(): void;
}

const TASKS = new UriTemplate(TASK_RESOURCE_TEMPLATE);

/**
 * resources/subscribe for one connection. A task resource (`taskgate://tasks/{id}`) is watched:
 * each status change sends notifications/resources/updated with its URI, until the task ends
 * (the last change) or the client unsubscribes. One watch per connection, with the poll under
 * NOTIFY, as for 2025-11-25's task status notifications. A module's resources have no change
 * signal, so a subscription to one is kept but never notified.
 */
export function resourceSubscriptions(
  watcher: TaskWatcher,
  pollMs: number,
  tenantId: string,
  send: (notification: Record<string, unknown>) => void,
): ResourceSubscriptions {
  const uris = new Set<string>();
  /** The watched task ids, each with the URIs it was subscribed by (aliases) and its last status. */
  const tasks = new Map<string, { uris: Set<string>; status: string | null }>();
  const watch = watcher.watch({ tenantId, pollMs, wakeOn: changesStatus, readAtStart: true }, (taskId, reading) => {
    const watched = tasks.get(taskId);
    if (!watched) return;
    if (reading.kind === 'missing') {
      // Expired (or never this tenant's): nothing more will change.
      watch.remove(taskId);
      tasks.delete(taskId);
      return;
    }
    if (reading.kind !== 'task') return;
    const status = reading.task.status;
    // The first reading sets the baseline: only changes after the subscribe are news.
    if (watched.status !== null && status !== watched.status) {
      for (const uri of watched.uris) {
        send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
      }
    }
    watched.status = status;
    if (isTerminalStatus(status)) {
      watch.remove(taskId);
      tasks.delete(taskId);
    }
  });
  return {
    subscribe(uri) {
      if (uris.has(uri)) return true;
      if (uris.size >= MAX_RESOURCE_SUBSCRIPTIONS) return false;
      uris.add(uri);
      const id = TASKS.match(uri)?.id;
      if (id !== undefined) {
        const watched = tasks.get(id);
        if (watched) watched.uris.add(uri);
        else {
          tasks.set(id, { uris: new Set([uri]), status: null });
          watch.add(id);
        }
      }
      return true;
    },
    unsubscribe(uri) {
      uris.delete(uri);
      const id = TASKS.match(uri)?.id;
      const watched = id === undefined ? undefined : tasks.get(id);
      if (!watched) return;
      watched.uris.delete(uri);
      // Another URI of the same task keeps it watched.
      if (watched.uris.size === 0) {
        tasks.delete(id as string);
        watch.remove(id as string);
      }
    },
    stop() {
      uris.clear();
      tasks.clear();
      watch.stop();
    },
  };
}
