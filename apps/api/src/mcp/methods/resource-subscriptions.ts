import { isTerminalStatus } from '@taskgate/reliability';
import { type ResolvedResource, startResourceWatch } from '@taskgate/tools';
import { changesStatus, type TaskWatcher } from '../../tasks/task-watch.ts';
import { MAX_RESOURCE_SUBSCRIPTIONS, type ResourceSubscriptions } from '../core/subscriptions.ts';
import { taskIdOfUri } from './task-resources.ts';

/**
 * resources/subscribe for one connection. A task resource (`taskgate://tasks/{id}`) is watched:
 * each status change sends notifications/resources/updated with its URI, until the task ends
 * (the last change) or the client unsubscribes. One watch per connection, with the poll under
 * NOTIFY, as for 2025-11-25's task status notifications. A module's resource is notified through
 * its definition's `watch`, started for this connection at the subscribe and stopped at the
 * unsubscribe; one without `watch` is kept but never notified. `log` hears of a watch that threw.
 */
export function resourceSubscriptions(
  watcher: TaskWatcher,
  pollMs: number,
  tenantId: string,
  send: (notification: Record<string, unknown>) => void,
  modules: {
    readonly resolve: (uri: string) => ResolvedResource | null;
    readonly log?: (fields: Record<string, unknown>, message: string) => void;
  } = { resolve: () => null },
): ResourceSubscriptions {
  const uris = new Set<string>();
  /** The module resources watched for this connection, each with the function that stops its watch. */
  const watching = new Map<string, () => void>();
  const updated = (uri: string) => {
    if (uris.has(uri)) send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
  };
  const startWatch = (uri: string) => {
    const target = modules.resolve(uri);
    if (!target?.definition.watch) return;
    watching.set(
      uri,
      startResourceWatch(target, uri, () => updated(uri), { tenant: tenantId }, modules.log ?? (() => {})),
    );
  };
  const stopWatch = (uri: string) => {
    const stop = watching.get(uri);
    watching.delete(uri);
    stop?.();
  };
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
      const id = taskIdOfUri(uri);
      if (id === undefined) startWatch(uri);
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
    has: (uri) => uris.has(uri),
    unsubscribe(uri) {
      uris.delete(uri);
      stopWatch(uri);
      const id = taskIdOfUri(uri);
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
      for (const uri of [...watching.keys()]) stopWatch(uri);
      uris.clear();
      tasks.clear();
      watch.stop();
    },
  };
}
