import { isDatabaseUnavailable, type TaskRecord } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { isTerminalStatus } from '@taskgate/reliability';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskService } from '../tasks/task-service.ts';

/**
 * Resolves with the task once it is terminal: woken by the task's notifications, with a poll
 * behind them (NOTIFY is a hint); `onChange` sees every non-terminal reading (for progress).
 * With notifications and no `onChange`, the task is read once, when its terminal notification
 * arrives (the hub remembers one that came before the subscription).
 * Rejects with the signal's reason if `signal` aborts first.
 */
export function waitForTerminal(
  service: TaskService,
  hub: TaskEventsHub,
  tenantId: string,
  taskId: string,
  options: { pollMs: number; signal: AbortSignal; onChange?: (task: TaskRecord) => void },
): Promise<TaskRecord> {
  return new Promise((resolve, reject) => {
    let reading = false;
    let again = false;
    let settled = false;
    const finish = (action: () => void) => {
      if (settled) return;
      settled = true;
      unsubscribe();
      clearInterval(poll);
      options.signal.removeEventListener('abort', onAbort);
      action();
    };
    const check = async () => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          const task = await service.get(tenantId, taskId);
          if (isTerminalStatus(task.status)) return finish(() => resolve(task));
          options.onChange?.(task);
        } while (again && !settled);
      } catch (error) {
        // A database outage is waited out (the poll reads again): the task goes on in its worker,
        // and its caller should get its answer, not a 503 for a blip. The task's own clocks and
        // the sweeper bound the wait.
        if (!isTaskgateError(error, 'TG_TASK_NOT_FOUND') && !isDatabaseUnavailable(error)) {
          return finish(() => reject(error));
        }
      } finally {
        reading = false;
      }
    };
    const onAbort = () => finish(() => reject(options.signal.reason));
    // A notification says what changed: without a progress listener only a terminal status is
    // worth a read (the poll still catches a notification that never came).
    const unsubscribe = hub.subscribe(taskId, (notification) => {
      if (options.onChange || !notification || isTerminalStatus(notification.status)) void check();
    });
    const poll = setInterval(() => void check(), options.pollMs);
    poll.unref();
    options.signal.addEventListener('abort', onAbort, { once: true });
    // Without notifications, or to report progress from the first reading, read at once.
    if (!hub.listening || options.onChange) void check();
  });
}
