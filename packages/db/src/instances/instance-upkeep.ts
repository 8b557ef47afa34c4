import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';
import type { TaskAnnouncer } from '../tasks/task-announcer.ts';
import { DEFAULT_MAX_QUEUE_MS, TaskSweeper, type TaskSweeperOptions } from '../tasks/task-sweeper.ts';
import { InstanceHeartbeat } from './instance-heartbeat.ts';
import type { InstanceIdentity } from './instance-registry.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** The sweeper's knobs a role may set (TASKGATE_MAX_QUEUE_MS; tests shorten the others). */
export type SweeperSettings = Partial<
  Pick<TaskSweeperOptions, 'maxQueueMs' | 'lostAfterMs' | 'intervalMs' | 'deadlineGraceMs'>
>;

export interface InstanceUpkeepOptions {
  readonly db: Kysely<Database>;
  readonly announcer: TaskAnnouncer;
  readonly identity: InstanceIdentity;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
  readonly heartbeatIntervalMs?: number;
  /** Run a task sweeper beside the heartbeat (default true); one per process is plenty. */
  readonly sweep?: boolean;
  readonly sweeper?: SweeperSettings;
  /** After each registration (InstanceHeartbeatOptions.onRegistered): a worker publishes its tools. */
  readonly onRegistered?: () => Promise<void>;
}

export interface InstanceUpkeep {
  readonly heartbeat: InstanceHeartbeat;
  readonly sweeper: TaskSweeper | null;
  /** Registers the instance (before it takes any work) and starts heartbeating and sweeping. */
  start(): Promise<void>;
  /** Stops sweeping and marks the instance stopped: call it once its work is handed back. */
  stop(): Promise<void>;
}

/**
 * What every API and worker instance keeps up while it runs: its heartbeat row, and (usually) a
 * task sweeper, which judges other instances lost only by the unbroken stretch this heartbeat has
 * seen the database answer.
 */
export function instanceUpkeep(options: InstanceUpkeepOptions): InstanceUpkeep {
  const heartbeat = new InstanceHeartbeat({
    db: options.db,
    identity: options.identity,
    logger: options.logger,
    ...(options.heartbeatIntervalMs === undefined ? {} : { intervalMs: options.heartbeatIntervalMs }),
    ...(options.onRegistered ? { onRegistered: options.onRegistered } : {}),
  });
  const sweeper =
    options.sweep === false
      ? null
      : new TaskSweeper({
          db: options.db,
          announcer: options.announcer,
          maxQueueMs: DEFAULT_MAX_QUEUE_MS,
          ...options.sweeper,
          reachableForMs: () => heartbeat.reachableForMs(),
          onUnavailable: () => heartbeat.noteUnavailable(),
          logger: options.logger,
        });
  let started = false;
  return {
    heartbeat,
    sweeper,
    start: async () => {
      await heartbeat.start();
      started = true;
      sweeper?.start();
    },
    stop: async () => {
      await sweeper?.stop();
      if (started) await heartbeat.stop();
    },
  };
}
