import { type TaskEventsHub, type TaskReading, type TaskService, TaskWatcher } from '@taskgate/api';
import type { TaskNotification, TaskRecord } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// TaskWatcher, the one way every watcher (MCP waits, listens, the REST event stream, 2025-11-25
// status notifications) learns that a task changed. The reads and notifications are driven by
// hand here, so each ordering is forced rather than hoped for.

interface PendingRead {
  readonly id: string;
  readonly resolve: (task: TaskRecord) => void;
  readonly reject: (error: unknown) => void;
}

function fakeService() {
  const reads: PendingRead[] = [];
  const service = {
    get: (_tenantId: string, id: string) =>
      new Promise<TaskRecord>((resolve, reject) => {
        reads.push({ id, resolve, reject });
      }),
  };
  return { service: service as unknown as TaskService, reads };
}

function fakeHub(listening = true, connected: boolean | null = null) {
  const subscribers = new Map<string, Set<(notification: TaskNotification | null) => void>>();
  const hub = {
    listening,
    connected,
    subscribe(taskId: string, onChange: (notification: TaskNotification | null) => void) {
      const set = subscribers.get(taskId) ?? new Set();
      subscribers.set(taskId, set);
      set.add(onChange);
      return () => set.delete(onChange);
    },
  };
  const emit = (taskId: string, notification: Partial<TaskNotification> | null) => {
    for (const handler of subscribers.get(taskId) ?? [])
      handler(
        notification === null
          ? null
          : ({ id: taskId, tenant: 't', event: 'status', ...notification } as TaskNotification),
      );
  };
  const count = (taskId: string) => subscribers.get(taskId)?.size ?? 0;
  return { hub: hub as unknown as TaskEventsHub, emit, count };
}

const task = (id: string, status: string, progress?: number) =>
  ({ id, status, ...(progress === undefined ? {} : { progress: { value: progress } }) }) as unknown as TaskRecord;

/** Lets every settled promise's continuations run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a watch', () => {
  it('keeps one read in flight per task; wake-ups during it fold into one more, delivered in order', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const seen: TaskReading[] = [];
    const watch = new TaskWatcher({ service, hub }).watch({ tenantId: 't', pollMs: 1_000 }, (_id, reading) =>
      seen.push(reading),
    );
    watch.add('a');
    emit('a', { status: 'working' });
    expect(reads).toHaveLength(1);
    emit('a', { status: 'working' });
    emit('a', null);
    emit('a', { status: 'completed' });
    expect(reads).toHaveLength(1); // three wake-ups while the first read is under way
    reads[0]?.resolve(task('a', 'working', 1));
    await settle();
    expect(reads).toHaveLength(2); // folded into exactly one more
    reads[1]?.resolve(task('a', 'completed', 2));
    await settle();
    expect(reads).toHaveLength(2);
    expect(seen.map((reading) => (reading.kind === 'task' ? reading.task.status : reading.kind))).toEqual([
      'working',
      'completed',
    ]);
    watch.stop();
  });

  it('polls under the notifications, one timer for every task it holds, and none once empty', async () => {
    const { service, reads } = fakeService();
    const { hub } = fakeHub(false);
    const watch = new TaskWatcher({ service, hub }).watch({ tenantId: 't', pollMs: 250 }, () => {});
    watch.add('a');
    watch.add('b');
    expect(vi.getTimerCount()).toBe(1);
    expect(reads).toHaveLength(0);
    vi.advanceTimersByTime(250);
    expect(reads.map((read) => read.id)).toEqual(['a', 'b']);
    watch.remove('a');
    watch.remove('b');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a jittered first poll comes between half and one and a half poll periods', async () => {
    const { service, reads } = fakeService();
    const { hub } = fakeHub();
    const watch = new TaskWatcher({ service, hub }).watch(
      { tenantId: 't', pollMs: 1_000, firstPoll: 'jittered' },
      () => {},
    );
    watch.add('a');
    vi.advanceTimersByTime(499);
    expect(reads).toHaveLength(0);
    vi.advanceTimersByTime(1_001);
    expect(reads).toHaveLength(1);
    watch.stop();
  });

  it('wakes only on the notifications asked for, and always on a listener reconnect', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const watch = new TaskWatcher({ service, hub }).watch(
      { tenantId: 't', pollMs: 1_000, wakeOn: (notification) => notification.event === 'status' },
      () => {},
    );
    watch.add('a');
    emit('a', { event: 'progress' });
    expect(reads).toHaveLength(0);
    emit('a', { event: 'status' });
    expect(reads).toHaveLength(1);
    reads[0]?.resolve(task('a', 'working'));
    await settle();
    emit('a', null);
    expect(reads).toHaveLength(2);
    watch.stop();
  });

  it('delivers nothing after stop, even a read already under way, and leaves nothing subscribed or timed', async () => {
    const { service, reads } = fakeService();
    const { hub, emit, count } = fakeHub();
    const seen: TaskReading[] = [];
    const watch = new TaskWatcher({ service, hub }).watch(
      { tenantId: 't', pollMs: 1_000, readAtStart: true },
      (_id, reading) => seen.push(reading),
    );
    watch.add('a');
    expect(reads).toHaveLength(1);
    watch.stop();
    expect({ subscribed: count('a'), timers: vi.getTimerCount() }).toEqual({ subscribed: 0, timers: 0 });
    reads[0]?.resolve(task('a', 'completed'));
    await settle();
    emit('a', { status: 'completed' });
    expect(seen).toEqual([]);
    watch.add('b'); // a stopped watch stays stopped
    expect(count('b')).toBe(0);
  });

  it('tells a missing task, an outage and another failure apart', async () => {
    const { service, reads } = fakeService();
    const { hub } = fakeHub();
    const seen: string[] = [];
    const watch = new TaskWatcher({ service, hub }).watch(
      { tenantId: 't', pollMs: 1_000, readAtStart: true },
      (_id, reading) => seen.push(reading.kind),
    );
    watch.add('a');
    reads[0]?.reject(new TaskgateError('TG_TASK_NOT_FOUND', 'no task a'));
    await settle();
    watch.refresh('a');
    reads[1]?.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    await settle();
    watch.refresh('a');
    reads[2]?.reject(new Error('syntax error at or near "SELEC"'));
    await settle();
    expect(seen).toEqual(['missing', 'unavailable', 'failed']);
    watch.stop();
  });
});

describe('shared reads', () => {
  it('keep one read of a task in flight, however many watches ask; a late asker gets the next read', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const watcher = new TaskWatcher({ service, hub });
    const seen: string[][] = [[], [], []];
    const watches = seen.map((into) =>
      watcher.watch({ tenantId: 't', pollMs: 1_000, shared: true }, (_id, reading) => {
        if (reading.kind === 'task') into.push(reading.task.status);
      }),
    );
    for (const watch of watches) watch.add('a');
    emit('a', { status: 'working' }); // three watches wake: one read, the other two queued behind it
    emit('a', { status: 'completed' }); // each folds this into one more of its own
    expect(reads).toHaveLength(1);
    let outstanding = 1;
    let status = 'working';
    while (reads.length < 6) {
      const read = reads[reads.length - 1] as PendingRead;
      read.resolve(task('a', status));
      status = 'completed';
      const before = reads.length;
      await settle();
      outstanding = Math.max(outstanding, reads.length - before);
      if (reads.length === before) break;
    }
    // Unshared, the first wake-up alone would be three reads at once; shared, never more than one.
    expect(outstanding).toBe(1);
    expect(reads.length).toBeLessThan(6); // the reads came to an end, not the loop's bound
    for (const into of seen) expect(into.at(-1)).toBe('completed');
    for (const watch of watches) watch.stop();
  });
});

describe('untilTerminal', () => {
  it('with notifications and no progress listener, reads once: at the terminal notification', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
    });
    expect(reads).toHaveLength(0);
    emit('a', { event: 'progress', status: 'working' });
    emit('a', { status: 'working' });
    expect(reads).toHaveLength(0);
    emit('a', { status: 'completed' });
    expect(reads).toHaveLength(1);
    reads[0]?.resolve(task('a', 'completed'));
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('without notifications, reads at once and then at every poll, waiting out a missing task and an outage', async () => {
    const { service, reads } = fakeService();
    const { hub, count } = fakeHub(false);
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 250,
      signal: new AbortController().signal,
    });
    expect(reads).toHaveLength(1);
    reads[0]?.reject(new TaskgateError('TG_TASK_NOT_FOUND', 'no task a'));
    await settle();
    vi.advanceTimersByTime(250);
    reads[1]?.reject(Object.assign(new Error('the database system is shutting down'), { code: '57P03' }));
    await settle();
    vi.advanceTimersByTime(250);
    reads[2]?.resolve(task('a', 'failed'));
    await expect(done).resolves.toMatchObject({ status: 'failed' });
    expect({ reads: reads.length, subscribed: count('a'), timers: vi.getTimerCount() }).toEqual({
      reads: 3,
      subscribed: 0,
      timers: 0,
    });
  });

  it('with statusOnly, reads on a status change only: not its own task’s created, a claim or progress', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const statuses: string[] = [];
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: (reading) => statuses.push(reading.status),
      statusOnly: { readAtStart: false },
    });
    emit('a', { event: 'created', status: 'working' });
    emit('a', { event: 'started', status: 'working' });
    emit('a', { event: 'progress', status: 'working' });
    expect(reads).toHaveLength(0);
    emit('a', { event: 'status', status: 'input_required' });
    expect(reads).toHaveLength(1);
    reads[0]?.resolve(task('a', 'input_required'));
    await settle();
    emit('a', { event: 'resumed', status: 'working' });
    reads[1]?.resolve(task('a', 'completed'));
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect([reads.length, statuses]).toEqual([2, ['input_required']]);
  });

  it('with onNotification, hears each notification and reads on none that carries its progress', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const heard: (number | null | undefined)[] = [];
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: () => {},
      onNotification: (notification) => heard.push(notification && (notification.progress?.value ?? -1)),
    });
    expect(reads).toHaveLength(1); // the first reading: what was written before the watch began
    reads[0]?.resolve(task('a', 'working'));
    await settle();
    for (const value of [1, 2, 3]) {
      emit('a', { event: 'progress', status: 'working', progress: { value, total: null, message: null } });
    }
    expect(reads).toHaveLength(1);
    // Without its value (too long for a payload), a progress notification is worth a read.
    emit('a', { event: 'progress', status: 'working' });
    expect(reads).toHaveLength(2);
    reads[1]?.resolve(task('a', 'working', 4));
    await settle();
    emit('a', null);
    expect(reads).toHaveLength(3);
    reads[2]?.resolve(task('a', 'completed'));
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect(heard).toEqual([1, 2, 3, -1, null]);
  });

  it('with onNotification, holds a terminal status read first until its notification, or a bound', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub(true, true);
    const heard: number[] = [];
    const watcher = new TaskWatcher({ service, hub });
    const done = watcher.untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: () => {},
      onNotification: (notification) => notification?.progress && heard.push(notification.progress.value),
    });
    reads[0]?.resolve(task('a', 'working'));
    await settle();
    // A poll reads the task completed before the notifications sent before that status arrive.
    vi.advanceTimersByTime(1_000);
    reads[1]?.resolve(task('a', 'completed', 2));
    await settle();
    let resolved = false;
    void done.then(() => {
      resolved = true;
    });
    await settle();
    expect(resolved).toBe(false);
    emit('a', { event: 'progress', status: 'working', progress: { value: 1, total: null, message: null } });
    emit('a', { event: 'progress', status: 'working', progress: { value: 2, total: null, message: null } });
    emit('a', { status: 'completed' });
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect([heard, reads.length, vi.getTimerCount()]).toEqual([[1, 2], 2, 0]);

    // Its notification lost: the read status is the answer after the bound.
    const lost = watcher.untilTerminal('t', 'b', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: () => {},
      onNotification: () => {},
    });
    reads[2]?.resolve(task('b', 'failed'));
    await settle();
    vi.advanceTimersByTime(249);
    await settle();
    let ended = false;
    void lost.then(() => {
      ended = true;
    });
    await settle();
    expect(ended).toBe(false);
    vi.advanceTimersByTime(1);
    await expect(lost).resolves.toMatchObject({ status: 'failed' });
    expect(vi.getTimerCount()).toBe(0);

    // Whatever ends the hold (the request's signal here), the answer is the status read.
    const controller = new AbortController();
    const aborted = watcher.untilTerminal('t', 'c', {
      pollMs: 1_000,
      signal: controller.signal,
      onChange: () => {},
      onNotification: () => {},
    });
    reads[3]?.resolve(task('c', 'completed'));
    await settle();
    controller.abort(new Error('hand over'));
    await expect(aborted).resolves.toMatchObject({ status: 'completed' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('passes on to onNotification only what names the watched task’s tenant', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const heard: (number | undefined)[] = [];
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: () => {},
      onNotification: (notification) => heard.push(notification?.progress?.value),
    });
    reads[0]?.resolve(task('a', 'working'));
    await settle();
    emit('a', { event: 'progress', tenant: 'other', progress: { value: 9, total: null, message: 'forged' } });
    emit('a', { event: 'progress', progress: { value: 1, total: null, message: null } });
    emit('a', { status: 'completed' });
    reads[1]?.resolve(task('a', 'completed'));
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect(heard).toEqual([1, undefined]);
  });

  it('reports strictly the readings before the terminal one to onChange', async () => {
    const { service, reads } = fakeService();
    const { hub, emit } = fakeHub();
    const changes: number[] = [];
    const done = new TaskWatcher({ service, hub }).untilTerminal('t', 'a', {
      pollMs: 1_000,
      signal: new AbortController().signal,
      onChange: (reading) => changes.push(reading.progress?.value ?? -1),
    });
    expect(reads).toHaveLength(1); // a progress listener reads from the start
    reads[0]?.resolve(task('a', 'working', 1));
    await settle();
    emit('a', { event: 'progress' });
    reads[1]?.resolve(task('a', 'completed', 2));
    await expect(done).resolves.toMatchObject({ status: 'completed' });
    expect(changes).toEqual([1]);
  });

  it('rejects with a failed read, and with the abort reason, leaving nothing behind', async () => {
    const { service, reads } = fakeService();
    const { hub, count } = fakeHub();
    const watcher = new TaskWatcher({ service, hub });
    const broken = watcher.untilTerminal('t', 'a', { pollMs: 100, signal: new AbortController().signal });
    vi.advanceTimersByTime(100);
    reads[0]?.reject(new Error('permission denied for table tasks'));
    await expect(broken).rejects.toThrow('permission denied');

    const controller = new AbortController();
    const aborted = watcher.untilTerminal('t', 'b', { pollMs: 100, signal: controller.signal });
    vi.advanceTimersByTime(100);
    controller.abort(new Error('client went away'));
    await expect(aborted).rejects.toThrow('client went away');
    reads[1]?.resolve(task('b', 'completed')); // the read under way at the abort goes nowhere
    await settle();
    expect({ a: count('a'), b: count('b'), timers: vi.getTimerCount() }).toEqual({ a: 0, b: 0, timers: 0 });
    await expect(
      watcher.untilTerminal('t', 'c', { pollMs: 100, signal: AbortSignal.abort(new Error('already')) }),
    ).rejects.toThrow('already');
    expect(count('c')).toBe(0);
  });
});
