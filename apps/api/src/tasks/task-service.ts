import {
  type Database,
  findTask,
  GroupCommit,
  insertTasks,
  listTasks,
  type NewTask,
  requestCancel,
  TASK_QUEUE,
  type TaskJobData,
  type TaskMode,
  type TaskRecord,
  type TaskStatus,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { ToolRegistry } from '@taskgate/tools';
import type { Kysely, Transaction } from 'kysely';
import { fromKysely, type PgBoss } from 'pg-boss';
import { decodeCursor, encodeCursor } from './task-cursor.ts';

export interface TaskServiceOptions {
  readonly db: Kysely<Database>;
  /** A pg-boss instance used only to send (it runs no workers). */
  readonly boss: PgBoss;
  readonly tools: ToolRegistry;
  readonly defaultTtlMs: number;
  readonly pollIntervalMs: number;
  /** Test seam: runs inside the creating transaction after the row and the job are written. */
  readonly afterEnqueue?: (task: TaskRecord, trx: Transaction<Database>) => Promise<void>;
}

export interface CreateTaskInput {
  readonly tool: string;
  readonly arguments: unknown;
  readonly ttlMs?: number | undefined;
  readonly mode?: TaskMode;
}

export interface TaskListing {
  readonly tasks: TaskRecord[];
  readonly nextCursor: string | null;
}

/**
 * Everything a client can do to a task, tenant-scoped. The REST API and the MCP server both call
 * this; neither writes SQL of its own.
 */
export class TaskService {
  readonly #options: TaskServiceOptions;
  // Concurrent creates share a transaction (one commit for many tasks); each task still gets its
  // row, event and job together or not at all.
  readonly #creates: GroupCommit<NewTask, TaskRecord>;

  constructor(options: TaskServiceOptions) {
    this.#options = options;
    this.#creates = new GroupCommit(options.db, (trx, tasks) => this.#insertAndEnqueue(trx, tasks));
  }

  /**
   * Checks the call, then writes the task row, its `created` event and its pg-boss job in one
   * transaction: either a worker will see the task, or the task does not exist.
   */
  async create(tenantId: string, input: CreateTaskInput): Promise<TaskRecord> {
    const { tools } = this.#options;
    const check = tools.check(input.tool, input.arguments ?? {});
    if (!check.ok && check.kind === 'unknown-tool') {
      throw new TaskgateError('TG_TOOL_UNKNOWN', `there is no tool named ${JSON.stringify(input.tool)}`, {
        details: { tool: input.tool, available: tools.list().map((tool) => tool.name) },
      });
    }
    if (!check.ok && check.kind === 'invalid-arguments') {
      throw new TaskgateError(
        'TG_TOOL_ARGUMENTS_INVALID',
        `the arguments do not match the input schema of ${input.tool}: ${check.problems
          .map((problem) => `${problem.path || '(arguments)'} ${problem.message}`)
          .join('; ')}`,
        { details: { errors: check.problems } },
      );
    }
    const tool = tools.get(input.tool);
    return this.#creates.run({
      tenantId,
      tool: input.tool,
      arguments: input.arguments ?? {},
      mode: input.mode ?? 'task',
      ttlMs: input.ttlMs ?? this.#options.defaultTtlMs,
      pollIntervalMs: this.#options.pollIntervalMs,
      idleTimeoutMs: tool?.timeouts?.idleMs ?? null,
      maxTimeoutMs: tool?.timeouts?.maxMs ?? null,
    });
  }

  /** Tasks' rows, their events and their jobs, all in the transaction GroupCommit gives them. */
  async #insertAndEnqueue(trx: Transaction<Database>, tasks: readonly NewTask[]): Promise<TaskRecord[]> {
    const created = await insertTasks(trx, tasks);
    const jobs = created.map((task) => ({
      id: task.id,
      data: { taskId: task.id, tenantId: task.tenantId } satisfies TaskJobData,
    }));
    // The same transaction as the rows, through pg-boss's Kysely adapter.
    await this.#options.boss.insert(TASK_QUEUE, jobs, { db: fromKysely(trx) });
    for (const task of created) await this.#options.afterEnqueue?.(task, trx);
    return created;
  }

  async get(tenantId: string, id: string): Promise<TaskRecord> {
    const task = await findTask(this.#options.db, tenantId, id);
    if (!task) throw notFound(id);
    return task;
  }

  async list(tenantId: string, query: { status?: TaskStatus; limit: number; cursor?: string }): Promise<TaskListing> {
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const page = await listTasks(this.#options.db, tenantId, {
      limit: query.limit,
      ...(query.status ? { status: query.status } : {}),
      ...(after ? { after } : {}),
    });
    return { tasks: page.tasks, nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  /**
   * Records the cancel request and returns the task as it is now: still working (with
   * cancelRequestedAt) until a worker observes the flag, or unchanged if it had already ended.
   */
  async cancel(tenantId: string, id: string, reason: string | null): Promise<TaskRecord> {
    const outcome = await requestCancel(this.#options.db, tenantId, id, reason);
    if (!outcome.task) throw notFound(id);
    return outcome.task;
  }
}

function notFound(id: string): TaskgateError {
  return new TaskgateError('TG_TASK_NOT_FOUND', `no task ${JSON.stringify(id)} exists for this tenant`, {
    details: { id },
  });
}
