import type { Kysely } from 'kysely';
import type { Database, TaskStatus } from '../schema.ts';
import type { TaskNotification, TaskProgress } from './task-record.ts';

/** What a notification names: the task, its tenant, and its status after the change. */
export interface AnnouncedTask {
  readonly id: string;
  readonly tenantId: string;
  readonly status: TaskStatus;
  /** Named in `created` and `resumed` notifications: a worker wakes only for its own tools' work. */
  readonly tool?: string;
  /** Carried by `progress` notifications: the value written, so a listener tells each one without a read. */
  readonly progress?: TaskProgress | null;
}

export type TaskChange = TaskNotification['event'];

/** Hears of the task rows a write changed. */
export interface TaskChanges {
  changed(change: TaskChange, tasks: Iterable<AnnouncedTask | null | undefined>): void;
}

/**
 * Where a write to the tasks table runs, and who hears of what it changed. Every function that
 * changes a task row takes one and reports its changes to it itself, so no caller can forget to
 * announce a change: a writer is made only by TaskAnnouncer, either for statements that commit on
 * their own (`announcer.writer(db)`: announced as each returns) or for a transaction
 * (`announcer.transaction(db, work)`: announced once it has committed, and not at all if it rolls back).
 */
export interface TaskWriter {
  /** A pool (statements commit on their own) or a transaction. */
  readonly db: Kysely<Database>;
  readonly changes: TaskChanges;
}

/** The changes of a transaction, held until it commits. */
export class HeldChanges implements TaskChanges {
  readonly #held: Array<{ change: TaskChange; tasks: AnnouncedTask[] }> = [];

  changed(change: TaskChange, tasks: Iterable<AnnouncedTask | null | undefined>): void {
    const present = [...tasks].filter((task): task is AnnouncedTask => task !== null && task !== undefined);
    if (present.length > 0) this.#held.push({ change, tasks: present });
  }

  /** Hands everything held to `to`, in the order it was reported. */
  release(to: TaskChanges): void {
    for (const { change, tasks } of this.#held.splice(0)) to.changed(change, tasks);
  }
}
