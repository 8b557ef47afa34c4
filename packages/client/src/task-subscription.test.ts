import { describe, expect, it } from 'vitest';
import type { Timers } from './call-clocks.ts';
import { subscribeTasks } from './task-subscription.ts';
import type { TaskState } from './task-watch.ts';

const immediate: Timers = {
  now: () => 0,
  setTimeout: (run) => {
    queueMicrotask(run);
    return 0;
  },
  clearTimeout: () => {},
};

const task = (status: string, at: string, extra: Partial<TaskState> = {}): TaskState => ({
  taskId: 't1',
  status,
  lastUpdatedAt: at,
  ...extra,
});

describe('subscribeTasks', () => {
  it('sees each change once, never an older state after a newer one, and ends at the terminal one', async () => {
    const seen: string[] = [];
    let reads = 0;
    const subscription = subscribeTasks(
      {
        async listen(_ids, _signal, notify) {
          notify({ method: 'notifications/subscriptions/acknowledged', params: {} });
          // A newer state pushed before the refetch of an older one answers.
          notify({
            method: 'notifications/tasks',
            params: task('working', '2026-01-01T00:00:02Z', { statusMessage: 'b' }),
          });
          notify({
            method: 'notifications/tasks',
            params: task('working', '2026-01-01T00:00:02Z', { statusMessage: 'b' }),
          });
          await new Promise((resolve) => setTimeout(resolve, 5));
          notify({ method: 'notifications/tasks', params: task('completed', '2026-01-01T00:00:03Z') });
          notify({ method: 'notifications/tasks', params: task('completed', '2026-01-01T00:00:03Z') });
          return {};
        },
        async getTask() {
          reads += 1;
          await new Promise((resolve) => setTimeout(resolve, 1));
          return task('working', '2026-01-01T00:00:01Z', { statusMessage: 'a' });
        },
      },
      ['t1'],
      { onTask: (t) => seen.push(`${t.status}:${t.statusMessage ?? ''}`), timers: immediate },
    );
    await subscription.done;
    expect(reads).toBe(1);
    expect(seen).toEqual(['working:b', 'completed:']);
    expect(subscription.reconnects).toBe(0);
  });

  it('reopens with the tasks not yet ended after a stream ends, until closed', async () => {
    const filters: string[][] = [];
    const subscription = subscribeTasks(
      {
        async listen(ids) {
          filters.push([...ids]);
          if (filters.length === 3) subscription.close();
          throw new Error('stream ended');
        },
        getTask: async () => task('working', 'x'),
      },
      ['t1', 't2'],
      { onTask: () => {}, timers: immediate },
    );
    await subscription.done;
    expect(filters).toEqual([
      ['t1', 't2'],
      ['t1', 't2'],
      ['t1', 't2'],
    ]);
    expect(subscription.reconnects).toBe(2);
  });
});
