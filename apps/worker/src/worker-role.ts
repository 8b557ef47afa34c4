import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type ClaimRule,
  claimAttempt,
  claimAttempts,
  createKysely,
  createPool,
  DEFAULT_LOST_AFTER_MS,
  heldTasks,
  type InstanceHeartbeat,
  instanceUpkeep,
  PGBOSS_SCHEMA,
  publishTools,
  type SweeperSettings,
  TaskAnnouncer,
  type TaskJobData,
  TaskListener,
  TaskQueues,
  type TaskSweeper,
  toolQueue,
} from '@taskgate/db';
import { CONTENT_TOOL_PREFIX, type ContentRegistry, contentRegistryOfTool, type ToolRegistry } from '@taskgate/tools';
import { fromKysely, PgBoss } from 'pg-boss';
import { CancelWatcher } from './cancel-watcher.ts';
import { ContentWatchRunner } from './content-watch-runner.ts';
import { awaitHolder } from './held-delivery.ts';
import { type FetchedJob, JobPump } from './job-pump.ts';
import { LegacyQueueDrain } from './legacy-queue-drain.ts';
import { DEFAULT_OUTBOX_RETENTION_MS, RetentionSweeper } from './retention-sweeper.ts';
import type { AttemptHooks } from './task-row-store.ts';
import { TaskRunner } from './task-runner.ts';

/** A claim this young may not have started its run yet: the stray audit leaves it alone. */
const STRAY_QUIET_MS = 10_000;

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface WorkerRoleOptions {
  readonly connectionString: string;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly error: LogFn; readonly debug: LogFn };
  readonly tools: ToolRegistry;
  /** How long in-flight handlers get, after stop() begins, to reach a checkpoint and hand back. */
  readonly graceMs: number;
  /**
   * Whether NOTIFY reaches this process's listeners. True on a real Postgres; false on the embedded
   * one, where job pickup and cancels then run on polling alone (faster polls make up for it).
   */
  readonly listenNotify: boolean;
  /**
   * Handlers run at once by this worker (default 32). Tool handlers mostly wait on I/O, and a
   * larger pool also means larger fetch, claim and completion batches under load.
   */
  readonly concurrency?: number;
  /**
   * Per tool, the most of its handlers run at once (TASKGATE_TOOL_CONCURRENCY); a tool not named
   * gets `concurrency`, which stays the cap over all tools together.
   */
  readonly toolConcurrency?: ReadonlyMap<string, number>;
  /** Between moves of jobs out of the legacy single queue (default 30 s; LegacyQueueDrain). */
  readonly legacyDrainIntervalMs?: number;
  /** Between audits of the tasks this worker holds but does not run (default 30 s; handBackStrays). */
  readonly strayAuditIntervalMs?: number;
  readonly checkpointReadIntervalMs?: number;
  /** LISTEN for cancels (default: listenNotify). Off, cancels arrive by poll and checkpoint reads only. */
  readonly listenForCancels?: boolean;
  readonly cancelPollIntervalMs?: number;
  readonly progressWriteIntervalMs?: number;
  /**
   * How often pg-boss's supervisor looks for jobs whose worker stopped heartbeating (and does its
   * maintenance). With the queue's 10 s heartbeat, a dead worker's task moves on within ~15 s.
   */
  readonly superviseIntervalSeconds?: number;
  readonly retentionSweepIntervalMs?: number;
  /** How long delivered outbox rows are kept before the sweep deletes them (default 7 days). */
  readonly outboxRetentionMs?: number;
  readonly workerId?: string;
  readonly hooks?: AttemptHooks;
  /** Run the task sweeper in this process (default true); several processes may. */
  readonly sweep?: boolean;
  /** TASKGATE_MAX_QUEUE_MS, and the sweeper's other knobs (tests shorten them). */
  readonly sweeper?: SweeperSettings;
  /** How often this worker's instance row is heartbeated (default 2 s). */
  readonly heartbeatIntervalMs?: number;
  /** How long a decided task write is retried through a database outage (default: until it lands or the worker stops). */
  readonly outageRetryMs?: number;
}

export interface WorkerRole {
  readonly workerId: string;
  readonly runner: TaskRunner;
  readonly pump: JobPump;
  readonly legacyDrain: LegacyQueueDrain;
  /** Publishes this worker's tools to the catalog again (what a re-registration does). */
  publish(): Promise<void>;
  /**
   * Serves these tools from now on, and publishes them: their queues are made and fetched, the
   * catalog lists the new set (a tool no longer in it leaves the catalog). What a gateway calls
   * when its downstream's tools changed. A tool's handler already running goes on.
   */
  replaceTools(tools: ToolRegistry): Promise<void>;
  readonly sweeper: RetentionSweeper;
  /** Null with `sweep: false`. */
  readonly tasks: TaskSweeper | null;
  readonly heartbeat: InstanceHeartbeat;
  /** Runs the `watch` of the served modules' resources API instances subscribe to; null when none has one. */
  readonly contentWatches: ContentWatchRunner | null;
  stop(): Promise<void>;
}

/**
 * The worker process role: takes task jobs from pg-boss and runs their handlers. pg-boss never
 * migrates here (`taskgate migrate up` owns the schema) and supervises heartbeats, so a job whose
 * worker died goes to another worker.
 *
 * It fetches only its tools' queues (one per tool), and publishes its tools' definitions to the
 * catalog once its instance is registered, and again whenever its heartbeat has to register it
 * again: API processes offer what the catalog lists, so a tool is offered while a worker serves it.
 */
export async function startWorkerRole(options: WorkerRoleOptions): Promise<WorkerRole> {
  const workerId = options.workerId ?? `worker-${randomUUID().slice(0, 8)}`;
  const concurrency = options.concurrency ?? 32;
  const { logger } = options;
  let tools = options.tools;
  let served = tools.list().map((tool) => tool.name);
  if (served.length === 0) throw new TypeError('a worker needs at least one tool to serve');
  for (const [tool, limit] of options.toolConcurrency ?? []) {
    if (!served.includes(tool)) {
      logger.warn({ tool, limit }, 'TASKGATE_TOOL_CONCURRENCY names a tool this worker does not serve; ignored here');
    }
  }
  // A tool's slots here. A module's resource reads and prompt gets take at most half the slots
  // unless told otherwise, so a flood of slow reads cannot starve the tools.
  const slotsOf = (tool: string) =>
    options.toolConcurrency?.get(tool) ??
    (tool.startsWith(CONTENT_TOOL_PREFIX) ? Math.max(1, Math.floor(concurrency / 2)) : concurrency);
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: 'taskgate-worker',
    migrate: false,
    supervise: true,
    schedule: false,
    superviseIntervalSeconds: options.superviseIntervalSeconds ?? 5,
    monitorIntervalSeconds: options.superviseIntervalSeconds ?? 5,
    instanceName: workerId,
    max: 4,
  });
  boss.on('error', (error) => logger.error({ error: error.message }, 'pg-boss error'));
  boss.on('warning', (warning) => logger.warn({ warning: warning.message }, 'pg-boss warning'));

  // Handlers hold no connection while they run; the pool serves short statements (claims, progress,
  // checkpoint reads, batched completions), so it stays small however many handlers run: a few
  // workers must fit in a default max_connections of 100.
  const pool = createPool(options.connectionString, {
    applicationName: 'taskgate-worker',
    max: Math.min(concurrency + 2, 10),
  });
  const db = createKysely(pool);
  // One LISTEN connection per worker: task-created wakes the pump, cancel wakes the handler.
  const listener = options.listenNotify
    ? new TaskListener({
        connectionString: options.connectionString,
        applicationName: 'taskgate-worker-listen',
        logger,
      })
    : null;
  const watcher = new CancelWatcher({
    db,
    listener: (options.listenForCancels ?? true) ? listener : null,
    pollIntervalMs: options.cancelPollIntervalMs ?? (options.listenNotify ? 1_000 : 250),
    logger,
  });
  const announcer = new TaskAnnouncer(db, { logger });
  let entries = tools.catalogEntries();
  // Definitions only: handlers never leave this process. Identical rows are left as they were.
  // One publish at a time, each reading the entries when its turn comes: a re-registration's
  // publish begun before a replaceTools must not land after it with the old list.
  let publishing: Promise<void> = Promise.resolve();
  const publish = () => {
    const turn = publishing
      .catch(() => {})
      .then(async () => {
        const report = await publishTools(
          db,
          workerId,
          // What the catalog page shows: never more than the cap over all tools together.
          entries.map((entry) => ({ ...entry, concurrency: Math.min(slotsOf(entry.name), concurrency) })),
        );
        logger.info({ workerId, tools: served, ...report }, 'tools published to the catalog');
      });
    publishing = turn;
    return turn;
  };
  // The worker id in tasks.worker_id is this instance's row: a sweeper elsewhere tells from its
  // heartbeat whether a task's worker is still there.
  const upkeep = instanceUpkeep({
    db,
    announcer,
    identity: { id: workerId, kind: 'worker', host: hostname(), pid: process.pid },
    logger,
    // Registered, then published (the catalog's rows hang off the instance row): at start, and
    // again after a re-registration (retention may have deleted the row, and the rows with it).
    onRegistered: publish,
    ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.sweeper ? { sweeper: options.sweeper } : {}),
  });
  // Whether a task another worker holds may be claimed: only once that worker is lost, judged as
  // the sweeper judges it (after watching the database answer for the loss bound itself).
  const lostAfterMs = options.sweeper?.lostAfterMs ?? DEFAULT_LOST_AFTER_MS;
  const claimRule = (): ClaimRule => ({
    holderLostAfterMs: upkeep.heartbeat.reachableForMs() > lostAfterMs ? lostAfterMs : null,
  });
  const draining = new AbortController();
  let strayAudit: NodeJS.Timeout | undefined;
  const runner = new TaskRunner({
    db,
    announcer,
    tools: options.tools,
    watcher,
    logger,
    checkpointReadIntervalMs: options.checkpointReadIntervalMs ?? 250,
    progressWriteIntervalMs: options.progressWriteIntervalMs ?? 100,
    ...(options.outageRetryMs === undefined ? {} : { outageRetryMs: options.outageRetryMs }),
    ...(options.hooks ? { hooks: options.hooks } : {}),
  });
  const sweeper = new RetentionSweeper(
    db,
    options.retentionSweepIntervalMs ?? 60_000,
    logger,
    options.outboxRetentionMs ?? DEFAULT_OUTBOX_RETENTION_MS,
  );
  // The served modules' resources that have a `watch`: subscriptions held by API processes that
  // did not load the module are watched here.
  const watchable = new Map<string, ContentRegistry>();
  for (const tool of tools.list()) {
    const registry = contentRegistryOfTool(tool);
    const watches =
      registry?.resources().some((resource) => resource.watch) ||
      registry?.templates().some((entry) => entry.definition.watch);
    if (registry && watches) watchable.set(tool.name, registry);
  }
  const contentWatches =
    watchable.size === 0
      ? null
      : new ContentWatchRunner({
          db,
          workerId,
          registries: watchable,
          ...(options.listenNotify
            ? {
                listen: {
                  connectionString: options.connectionString,
                  applicationName: 'taskgate-worker-content',
                },
              }
            : {}),
          logger,
        });
  const queues = new TaskQueues(boss);
  const pumpQueues = (names: readonly string[]) =>
    names.map((tool) => ({
      name: toolQueue(tool),
      concurrency: slotsOf(tool),
    }));
  const pump = new JobPump({
    boss,
    queues: pumpQueues(served),
    concurrency,
    pollIntervalMs: options.listenNotify ? 1_000 : 250,
    heartbeatIntervalMs: 4_000,
    // The fetch and the claim of its tasks commit together: one commit per batch, and no job is
    // ever active without its task knowing which attempt and worker hold it. A fetch of several
    // queues is one fetch statement per queue, still in the one transaction and the one claim.
    fetch: (requests) =>
      announcer.transaction(db, async (writer) => {
        const adapter = fromKysely(writer.db);
        const fetched: { queue: string; job: FetchedJob['job'] }[] = [];
        for (const { queue, count } of requests) {
          const jobs = await boss.fetch<TaskJobData>(queue, { batchSize: count, db: adapter });
          for (const job of jobs) fetched.push({ queue, job });
        }
        const ids = fetched.map(({ job }) => job.data.taskId);
        const claims = await claimAttempts(writer, ids, workerId, claimRule());
        const byTask = new Map(claims.map((claim) => [claim.task.id, claim]));
        // Left out: ended (nothing to run), or still held by a live worker (awaitHolder).
        const held = await heldTasks(
          writer.db,
          ids.filter((id) => !byTask.has(id)),
        );
        return fetched.map(({ queue, job }) => {
          const holder = held.get(job.data.taskId);
          return { queue, job, claim: byTask.get(job.data.taskId) ?? null, ...(holder ? { heldBy: holder } : {}) };
        });
      }),
    run: async (claim, { job, heldBy }) => {
      if (heldBy === undefined) return runner.run(claim);
      logger.info(
        { taskId: job.data.taskId, holder: heldBy },
        'a delivery of a task another live worker holds: waiting for it to finish or be lost',
      );
      const later = await awaitHolder({
        taskId: job.data.taskId,
        holder: heldBy,
        signal: draining.signal,
        claim: async (taskId) => {
          const writer = announcer.writer(db);
          const claim = await claimAttempt(writer, taskId, workerId, claimRule());
          if (claim) return claim;
          return (await heldTasks(db, [taskId])).has(taskId) ? 'held' : null;
        },
      });
      return runner.run(later);
    },
    logger,
  });
  const legacyDrain = new LegacyQueueDrain({
    db,
    boss,
    queues,
    logger,
    ...(options.legacyDrainIntervalMs === undefined ? {} : { intervalMs: options.legacyDrainIntervalMs }),
  });
  listener?.onNotification((notification) => {
    // A new task, or a parked one whose input was answered (its next run was just enqueued): only
    // its tool's queue is worth a fetch (a notification from an older API names no tool: all are).
    if (notification.event === 'created' || notification.event === 'resumed') {
      pump.wake(notification.tool === undefined ? undefined : toolQueue(notification.tool));
    }
  });
  // LISTEN was down for a while: tasks created and cancels requested meanwhile went unheard.
  listener?.onReconnect(() => {
    pump.wake();
    watcher.pollNow();
  });

  try {
    await boss.start();
    // Before the first fetch (and before the tools are listed anywhere): an API may send to a
    // tool's queue as soon as the catalog lists it.
    await queues.ensureAll(served);
    // Registered before the first claim: a task never names a worker the sweeper cannot find.
    await upkeep.start();
    await listener?.start();
    watcher.start();
    // Before the first fetch, nothing here runs: whatever the database says this worker id holds
    // was left by a process before this one.
    await runner.handBackStrays(workerId, 0);
    strayAudit = setInterval(() => {
      runner.handBackStrays(workerId, STRAY_QUIET_MS).catch((error: Error) => {
        logger.warn({ error: error.message }, 'auditing the tasks this worker holds failed; tried again later');
      });
    }, options.strayAuditIntervalMs ?? 30_000);
    strayAudit.unref();
    pump.start();
    sweeper.start();
    legacyDrain.start();
    await contentWatches?.start();
  } catch (error) {
    clearInterval(strayAudit);
    watcher.stop();
    await contentWatches?.stop();
    await Promise.allSettled([listener?.stop(), upkeep.stop(), boss.stop({ graceful: false, close: true })]);
    await db.destroy();
    throw error;
  }
  logger.info(
    {
      workerId,
      concurrency,
      tools: served,
      ...(options.toolConcurrency?.size ? { toolConcurrency: Object.fromEntries(options.toolConcurrency) } : {}),
    },
    'worker started',
  );

  return {
    workerId,
    runner,
    pump,
    legacyDrain,
    publish,
    async replaceTools(next) {
      const names = next.list().map((tool) => tool.name);
      if (names.length === 0) throw new TypeError('a worker needs at least one tool to serve');
      // Queues first: an API may send to a tool's queue as soon as the catalog lists it.
      await queues.ensureAll(names.filter((name) => !served.includes(name)));
      tools = next;
      served = names;
      entries = next.catalogEntries();
      runner.replaceTools(next);
      pump.setQueues(pumpQueues(names));
      await publish();
    },
    sweeper,
    tasks: upkeep.sweeper,
    heartbeat: upkeep.heartbeat,
    contentWatches,
    stop: async () => {
      await contentWatches?.stop();
      // 1. Take no new jobs; running handlers hand their task back at their next checkpoint, and
      // deliveries waiting on another worker's task go back to the queue.
      runner.beginDrain();
      draining.abort();
      clearInterval(strayAudit);
      await pump.stopFetching();
      // 2. The grace period for them to get there (or to finish).
      const drained = await runner.settled(options.graceMs);
      if (!drained) {
        // 3. Whatever is still running is stopped and handed back now.
        logger.warn({ inFlight: runner.inFlight }, 'grace period over: releasing the tasks still running');
        runner.releaseAll('shutdown grace period ended');
        // Released handlers' subprocess trees may have a grace of their own (up to 60 s): not
        // waited out here, or their tasks would run again elsewhere while the old trees still run.
        if (!(await runner.settled(1_000))) {
          runner.killSubprocesses();
          await runner.settled(1_000);
        }
      }
      await pump.close();
      await legacyDrain.stop();
      await sweeper.stop();
      watcher.stop();
      await listener?.stop();
      await boss.stop({ graceful: true, close: true, timeout: 1_000 });
      // Marked stopped only now: until its tasks are handed back, they are this worker's.
      await upkeep.stop();
      await announcer.settled();
      await db.destroy();
      logger.info({ workerId }, 'worker stopped');
    },
  };
}
