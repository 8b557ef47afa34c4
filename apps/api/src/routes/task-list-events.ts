import type { ServerResponse } from 'node:http';
import type { TaskRecord } from '@taskgate/db';
import { isTerminalStatus } from '@taskgate/reliability';
import { SseStream } from '../sse/sse-stream.ts';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskListQuery, TaskService } from '../tasks/task-service.ts';
import type { TaskWatcher } from '../tasks/task-watch.ts';
import { taskSummary } from './task-schemas.ts';

/** Changes of a page's tasks are gathered this long into one event. */
const BATCH_MS = 50;
/** How far behind the newest task seen each look for new ones reaches (late commits). */
const LOOK_BACK_MS = 2_000;

export interface ListStreamOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  readonly watcher: TaskWatcher;
  readonly keepaliveMs: number;
  readonly pollMs: number;
}

/**
 * GET /v1/tasks/events: a list of tasks, live — the console's tasks page, one stream per open
 * page. Tasks go out as summaries (taskSummary: no arguments, result or error). The stream starts with `snapshot` (the page GET /v1/tasks answers for the same query),
 * then sends `tasks` with the tasks of the page that changed (the task watch every other watcher
 * uses: notifications, a poll under them, reads batched across watchers), and `created` for a
 * new task that matches the filters. On the first page (no cursor) the page stays the newest
 * `limit` tasks: a new one enters and the oldest leaves, on both ends alike; on a later page a new
 * task is only announced (the page counts them). A reader too slow for the changes gets
 * `refetch` (some were dropped) and reads the page again. Everything is the caller's tenant's.
 */
export function streamTaskList(
  response: ServerResponse,
  tenantId: string,
  query: TaskListQuery,
  first: { readonly tasks: readonly TaskRecord[]; readonly nextCursor: string | null },
  options: ListStreamOptions,
): SseStream {
  const limit = query.limit;
  // Every task of the page can change between two reads: room for each, plus the stream's own
  // events; a page's worth of new tasks beyond that coalesce or drop, and the reader refetches.
  const stream = new SseStream(response, { capacity: limit + 8, coalesce: 'by-key', keepaliveMs: options.keepaliveMs });
  stream.open();
  const send = (key: string, event: string, data: unknown) => {
    stream.push({ kind: 'replaceable', key, value: { event, data } });
    if (stream.takeRefetchFlag())
      stream.push({ kind: 'replaceable', key: 'refetch', value: { event: 'refetch', data: {} } });
  };
  send('snapshot', 'snapshot', { tasks: first.tasks.map(taskSummary), nextCursor: first.nextCursor });
  if (stream.closed) return stream;

  /** The page as this stream keeps it, newest first (on the first page, new tasks enter it). */
  const page = first.tasks.map((task) => ({ id: task.id, at: task.createdAt.getTime() }));
  const watch = options.watcher.watch({ tenantId, pollMs: options.pollMs, shared: true }, (id, reading) => {
    if (reading.kind === 'missing') {
      // Expired while shown: the page drops it.
      watch.remove(id);
      changed.delete(id);
      send(id, 'gone', { id });
      return;
    }
    if (reading.kind !== 'task') return;
    // The poll reads every task of the page: only a task that changed since it was sent is sent,
    // or an idle page of 1,000 rows got 1,000 events a second.
    const version = versionOf(reading.task);
    if (sent.get(id) === version) return;
    sent.set(id, version);
    changed.set(id, taskSummary(reading.task));
    flushSoon();
    if (isTerminalStatus(reading.task.status)) {
      watch.remove(id);
      sent.delete(id);
    }
  });
  /** What each watched task was when last sent (versionOf). */
  const sent = new Map<string, string>();
  // Changes go out as one `tasks` event per BATCH_MS, the latest of each task: a thousand rows
  // changing together are one event for the page to parse, not a thousand. While the reader is
  // not keeping up (the socket is full) they wait here, still one per task, so the stream holds
  // at most a page of them whatever the rate; none is dropped, a terminal status included.
  const changed = new Map<string, ReturnType<typeof taskSummary>>();
  let flushTimer: NodeJS.Timeout | undefined;
  let batches = 0;
  const flushSoon = () => {
    flushTimer ??= setTimeout(flush, BATCH_MS);
  };
  const flush = () => {
    flushTimer = undefined;
    if (stream.closed || changed.size === 0) return;
    if (stream.backedUp) {
      flushSoon();
      return;
    }
    const tasks = [...changed.values()];
    changed.clear();
    batches += 1;
    send(`tasks-${batches}`, 'tasks', { tasks });
  };
  for (const task of first.tasks) {
    if (isTerminalStatus(task.status)) continue;
    sent.set(task.id, versionOf(task));
    watch.add(task.id);
  }

  // New tasks: looked for after a `created` notification of this tenant, and every poll (the
  // notification is a hint, and absent on the embedded database). Not for a query that names
  // one task, which no new task can match. A task's created_at is its transaction's start, so
  // one that commits late is older than tasks seen before it: each look reaches LOOK_BACK_MS
  // behind the newest task seen, and remembers the ids it found there.
  const looksForNew = query.id === undefined && query.idempotencyKey === undefined;
  let newest = first.tasks[0]?.createdAt.getTime() ?? Date.now();
  const known = new Map(first.tasks.map((task) => [task.id, task.createdAt.getTime()]));
  let looking = false;
  let again = false;
  const lookForNew = async (): Promise<void> => {
    if (looking) {
      again = true;
      return;
    }
    looking = true;
    try {
      do {
        again = false;
        const from = new Date(newest - LOOK_BACK_MS);
        const after = query.createdAfter !== undefined && query.createdAfter > from ? query.createdAfter : from;
        const { cursor: _cursor, ...filters } = query;
        const found = await options.service
          .list(tenantId, { ...filters, createdAfter: after, limit })
          .catch(() => null); // an outage: the next poll looks again
        if (found === null || stream.closed) return;
        for (const task of [...found.tasks].reverse()) {
          if (known.has(task.id)) continue;
          const at = task.createdAt.getTime();
          known.set(task.id, at);
          newest = Math.max(newest, at);
          admit(task, at);
        }
        for (const [id, at] of known) if (at < newest - LOOK_BACK_MS) known.delete(id);
      } while (again && !stream.closed);
    } finally {
      looking = false;
    }
  };
  /** Announces a new task; on the first page it takes its place by (createdAt, id), the oldest leaves. */
  const admit = (task: TaskRecord, at: number) => {
    if (query.cursor !== undefined) {
      send(task.id, 'created', taskSummary(task));
      return;
    }
    let index = page.findIndex((row) => row.at < at || (row.at === at && row.id < task.id));
    if (index === -1) index = page.length;
    if (index >= limit) return; // older than everything the full page shows
    send(task.id, 'created', taskSummary(task));
    page.splice(index, 0, { id: task.id, at });
    if (!isTerminalStatus(task.status)) {
      sent.set(task.id, versionOf(task));
      watch.add(task.id);
    }
    for (const left of page.splice(limit)) {
      watch.remove(left.id);
      sent.delete(left.id);
    }
  };
  const unsubscribe = looksForNew
    ? options.hub.subscribeTenant(tenantId, (notification) => {
        if (notification === null || notification.event === 'created') void lookForNew();
      })
    : () => {};
  const timer = looksForNew ? setInterval(() => void lookForNew(), options.pollMs) : undefined;
  timer?.unref();
  stream.onClose(() => {
    clearTimeout(flushTimer);
    clearInterval(timer);
    unsubscribe();
    watch.stop();
  });
  return stream;
}

/**
 * What a task's row shows, compactly: every write sets last_updated_at, but two writes within a
 * millisecond share it in a Date, so the status and progress are part of it too (a terminal status
 * is never mistaken for the progress written just before it).
 */
function versionOf(task: TaskRecord): string {
  return JSON.stringify([
    task.lastUpdatedAt.getTime(),
    task.status,
    task.statusMessage,
    task.progress,
    task.cancelRequestedAt?.getTime() ?? null,
    task.attempt,
  ]);
}
