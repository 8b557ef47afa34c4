import { isTerminalStatus } from '@taskgate/reliability';
import { changesStatus, type TaskWatcher } from '../../../tasks/task-watch.ts';
import type { StatusWatch } from '../../core/revision.ts';
import { statusNotification } from './tasks.ts';

/**
 * notifications/tasks/status for every task a connection created with the `task` param, on each
 * status change until it ends: one watch per connection, so one poll timer however many tasks it
 * created. Woken by the tasks' notifications, with the poll under them — on the embedded database
 * there are no notifications, and the poll is all there is. Each task is read once when added: a
 * task that ended before is still reported.
 */
export function statusWatch(watcher: TaskWatcher, pollMs: number) {
  return (tenantId: string, send: (notification: Record<string, unknown>) => void): StatusWatch => {
    const last = new Map<string, string>();
    const watch = watcher.watch({ tenantId, pollMs, wakeOn: changesStatus, readAtStart: true }, (taskId, reading) => {
      // An expired task has nothing more to say; an outage is waited out by the next poll.
      if (reading.kind === 'missing') {
        watch.remove(taskId);
        last.delete(taskId);
      }
      if (reading.kind !== 'task' || reading.task.status === last.get(taskId)) return;
      last.set(taskId, reading.task.status);
      send(statusNotification(reading.task));
      if (isTerminalStatus(reading.task.status)) {
        watch.remove(taskId);
        last.delete(taskId);
      }
    });
    return {
      add: (taskId) => {
        last.set(taskId, 'working'); // tasks start working: only changes are reported
        watch.add(taskId);
      },
      stop: () => watch.stop(),
    };
  };
}
