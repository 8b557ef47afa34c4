import { randomUUID } from 'node:crypto';
import {
  adoptParkedRequest,
  answerInput,
  claimKey,
  type Database,
  detachParkedRequest,
  findTask,
  findTasks,
  GroupCommit,
  insertTasks,
  type KeyRecord,
  keyFingerprint,
  type ListQuery,
  listTasks,
  type NewTask,
  readLogMessages,
  readTaskClocks,
  readTaskEvents,
  readTaskSteps,
  requestCancel,
  type TaskAnnouncer,
  type TaskClocks,
  type TaskEventRecord,
  type TaskJobData,
  type TaskLogMessage,
  type TaskMode,
  TaskQueues,
  type TaskRecord,
  type TaskStepRecord,
  type TaskWriter,
  toolQueue,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { traceCreation } from '@taskgate/metrics';
import { Batcher, type CancelSignal } from '@taskgate/reliability';
import type { InputRequest } from '@taskgate/sdk';
import { inputAnswerProblem, type ToolCatalog, type ToolSpec } from '@taskgate/tools';
import type { Kysely, Transaction } from 'kysely';
import { fromKysely, type PgBoss } from 'pg-boss';
import { isUnavailable } from '../http/failures.ts';
import { keyInProgress, keyMismatch } from '../ledger/key-errors.ts';
import { CancelRetries } from './cancel-retries.ts';
import { decodeCursor, encodeCursor } from './task-cursor.ts';

export interface TaskServiceOptions {
  readonly db: Kysely<Database>;
  /** A pg-boss instance used only to send (it runs no workers). */
  readonly boss: PgBoss;
  /** Announces each change after it commits (workers and waiting calls listen for it). */
  readonly announcer: TaskAnnouncer;
  /** The tools this API offers (the catalog, in a deployment): what calls are checked against. */
  readonly tools: ToolCatalog;
  readonly defaultTtlMs: number;
  readonly pollIntervalMs: number;
  /**
   * The server's ceiling on each tool's clocks. A tool's own limits apply below it; a tool without
   * a max clock gets this one, so every call ends.
   */
  readonly clockCaps?: ClockCaps;
  /** How long an idempotency key is remembered after its call committed (default 24 h). */
  readonly idempotencyRetentionMs?: number;
  /**
   * The API instance this service answers for (its heartbeat row): request-mode tasks carry it, so
   * that the sweeper cancels them if this instance is lost.
   */
  readonly instanceId?: string;
  /** Test seam: runs inside the creating transaction after the row and the job are written. */
  readonly afterEnqueue?: (task: TaskRecord, trx: Transaction<Database>) => Promise<void>;
  /** Hears of cancels retried after an outage (cancelAbandoned). */
  readonly logger?: { readonly warn: (fields: Record<string, unknown>, message: string) => void };
  /** Test seam: the retries' delays (CancelRetriesOptions). */
  readonly cancelRetryDelaysMs?: { readonly first: number; readonly max: number };
}

export interface CreateTaskInput {
  readonly tool: string;
  readonly arguments: unknown;
  readonly ttlMs?: number | undefined;
  readonly mode?: TaskMode;
  /** Answers gathered in the call before the task existed (a tool's askFirst), by request key. */
  readonly inputResponses?: Readonly<Record<string, unknown>>;
  /**
   * The level of ctx.log() messages the caller will hear while it waits for the task (they are
   * kept with the task for it, migration 0012); absent: none are kept.
   */
  readonly logLevel?: string;
  /** What the MCP client declared on the call: the durable handler's ctx.clientCapabilities. */
  readonly clientCapabilities?: Readonly<Record<string, unknown>>;
  /**
   * The caller's W3C traceparent (an HTTP `traceparent` header, an MCP `_meta.traceparent`), as
   * sent: kept when valid, ignored otherwise (taskTraceParent).
   */
  readonly traceParent?: unknown;
}

export interface SubmitOptions {
  /** The `Idempotency-Key` header, when the call came over REST. */
  readonly idempotencyKey?: string | undefined;
}

export interface Submission {
  readonly task: TaskRecord;
  /** True when the key had already been used for this call: nothing new was created. */
  readonly replayed: boolean;
}

export interface ClockCaps {
  readonly idleMs?: number;
  readonly maxMs?: number;
}

/** A tool's clocks under the server's caps: the smaller of the two, or the cap if the tool has none. */
export function cappedClocks(
  tool: ToolSpec,
  caps: ClockCaps | undefined,
): { idleTimeoutMs: number | null; maxTimeoutMs: number | null } {
  const cap = (own: number | undefined, ceiling: number | undefined) =>
    own === undefined ? (ceiling ?? null) : ceiling === undefined ? own : Math.min(own, ceiling);
  return {
    idleTimeoutMs: cap(tool.timeouts?.idleMs, caps?.idleMs),
    maxTimeoutMs: cap(tool.timeouts?.maxMs, caps?.maxMs),
  };
}

export const DEFAULT_IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
const MAX_KEY_LENGTH = 255;

/** GET /v1/tasks's query: its filters, and the cursor of the page before. */
export type TaskListQuery = Omit<ListQuery, 'after'> & { readonly cursor?: string };

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
  readonly #creates: GroupCommit<TaskWriter, NewTask, TaskRecord>;
  // Concurrent reads (every waiting MCP call reads its task when it ends) share one statement.
  readonly #reads: Batcher<{ tenantId: string; id: string }, TaskRecord | null>;
  /** Each tool's queue, ensured before the first send to it (never inside the sending transaction). */
  readonly #queues: TaskQueues;
  readonly #cancelRetries: CancelRetries;

  /** The tools offered: what a call is checked against, and what GET /v1/tools lists. */
  get tools(): ToolCatalog {
    return this.#options.tools;
  }

  constructor(options: TaskServiceOptions) {
    this.#options = options;
    const logger = options.logger;
    this.#cancelRetries = new CancelRetries({
      cancel: (tenantId, id, reason, adoptions, signal) => this.cancel(tenantId, id, reason, { adoptions, signal }),
      retryable: isUnavailable,
      // Called as a method: pino's warn needs its `this`.
      log: (fields, message) => logger?.warn(fields, message),
      ...(options.cancelRetryDelaysMs
        ? { firstDelayMs: options.cancelRetryDelaysMs.first, maxDelayMs: options.cancelRetryDelaysMs.max }
        : {}),
    });
    this.#queues = new TaskQueues(options.boss);
    this.#creates = new GroupCommit(
      (work) => options.announcer.transaction(options.db, work),
      (writer, tasks) => this.#insertAndEnqueue(writer, tasks),
    );
    this.#reads = new Batcher((refs) => findTasks(options.db, refs), { maxBatch: 200 });
  }

  /**
   * Checks the call, then writes the task row, its `created` event and its pg-boss job in one
   * transaction: either a worker will see the task, or the task does not exist.
   */
  async create(tenantId: string, input: CreateTaskInput): Promise<TaskRecord> {
    return (await this.submit(tenantId, input)).task;
  }

  /**
   * Creates a task, or — when the call carries an idempotency key that was used before — answers
   * for the first call: its task again (`replayed`), a refusal if the arguments differ, or
   * TG_IDEMPOTENCY_KEY_IN_PROGRESS while it still runs.
   */
  async submit(tenantId: string, input: CreateTaskInput, options: SubmitOptions = {}): Promise<Submission> {
    const tool = this.#checkCall(input);
    const key = this.#idempotencyKey(tool, input.arguments, options.idempotencyKey);
    // With tracing on, in a span of its own that holds the INSERT's (a batched INSERT, several
    // calls' rows in one statement, is under the span of the call whose row started the batch).
    return traceCreation(input.traceParent, { tool: input.tool }, (traceParent) =>
      this.#write(this.#newTask(tenantId, input, tool, traceParent), tool, key),
    );
  }

  async #write(task: NewTask, tool: ToolSpec, key: string | null): Promise<Submission> {
    // A tool the catalog lists may have no queue yet (its worker has not started since the upgrade
    // or its queue was never needed here): made now, once per process, outside any transaction.
    if (!this.#queues.has(tool.name)) await this.#queues.ensure(tool.name);
    if (key === null) return { task: await this.#creates.run(task), replayed: false };
    return this.#submitWithKey({ ...task, id: randomUUID(), idempotencyKey: key });
  }

  /**
   * A task of a platform tool (a module's content read for this API, CatalogTools.platform): a
   * `request`-mode task a client can neither call nor list, with no idempotency key (reads are
   * safe to repeat). The caller waits for it and cancels it when its request goes.
   */
  async submitPlatform(
    tenantId: string,
    tool: { readonly name: string; readonly fingerprint: string; readonly spec: ToolSpec },
    args: Readonly<Record<string, unknown>>,
    ttlMs: number,
  ): Promise<TaskRecord> {
    if (!this.#queues.has(tool.name)) await this.#queues.ensure(tool.name);
    return this.#creates.run({
      tenantId,
      tool: tool.name,
      arguments: args,
      mode: 'request',
      apiInstanceId: this.#options.instanceId ?? null,
      ttlMs,
      pollIntervalMs: this.#options.pollIntervalMs,
      toolFingerprint: tool.fingerprint,
      ...cappedClocks(tool.spec, this.#options.clockCaps),
    });
  }

  #checkCall(input: CreateTaskInput): ToolSpec {
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
    return tools.get(input.tool) as ToolSpec;
  }

  /** The call's key, from the header or the `idempotencyKey` argument; they may not disagree. */
  #idempotencyKey(tool: ToolSpec, args: unknown, header: string | undefined): string | null {
    const argument =
      args !== null && typeof args === 'object' ? (args as { idempotencyKey?: unknown }).idempotencyKey : undefined;
    if (argument !== undefined && typeof argument !== 'string') {
      throw new TaskgateError('TG_IDEMPOTENCY_KEY_INVALID', 'the idempotencyKey argument must be a string');
    }
    if (header !== undefined && argument !== undefined && header !== argument) {
      throw new TaskgateError(
        'TG_IDEMPOTENCY_KEY_INVALID',
        'the Idempotency-Key header and the idempotencyKey argument name different keys',
      );
    }
    const key = header ?? argument ?? null;
    if (key !== null && (key.length === 0 || key.length > MAX_KEY_LENGTH)) {
      throw new TaskgateError('TG_IDEMPOTENCY_KEY_INVALID', `an idempotency key has 1 to ${MAX_KEY_LENGTH} characters`);
    }
    if (key !== null && tool.retry !== 'conditional') {
      throw new TaskgateError(
        'TG_IDEMPOTENCY_KEY_INVALID',
        `${tool.name} is ${tool.retry === 'safe' ? 'safe to repeat' : 'unsafe'} and takes no idempotency key; only conditional tools do`,
      );
    }
    if (key === null && tool.idempotencyKey === 'required') {
      throw new TaskgateError(
        'TG_IDEMPOTENCY_KEY_MISSING',
        `${tool.name} requires an idempotency key: send the Idempotency-Key header or the idempotencyKey argument`,
      );
    }
    return key;
  }

  #newTask(tenantId: string, input: CreateTaskInput, tool: ToolSpec, traceParent: string | null): NewTask {
    const mode = input.mode ?? 'task';
    return {
      tenantId,
      tool: input.tool,
      arguments: input.arguments ?? {},
      mode,
      apiInstanceId: mode === 'request' ? (this.#options.instanceId ?? null) : null,
      ttlMs: input.ttlMs ?? this.#options.defaultTtlMs,
      ...(input.inputResponses ? { inputResponses: input.inputResponses } : {}),
      ...(input.logLevel ? { logLevel: input.logLevel } : {}),
      ...(input.clientCapabilities ? { clientCapabilities: input.clientCapabilities } : {}),
      // Each attempt's span links to it, when a worker traces (packages/metrics task-traces.ts).
      traceParent,
      pollIntervalMs: this.#options.pollIntervalMs,
      // The version this call was checked against: the worker compares it with the one it serves.
      toolFingerprint: this.#options.tools.fingerprint(input.tool) ?? null,
      ...cappedClocks(tool, this.#options.clockCaps),
    };
  }

  /**
   * The key claim, the task row and its job in one transaction: concurrent calls with one key
   * queue on the key's unique index, and exactly one of them creates a task.
   */
  async #submitWithKey(task: NewTask & { id: string; idempotencyKey: string }): Promise<Submission> {
    const { db, announcer } = this.#options;
    const outcome = await announcer.transaction(db, async (writer) => {
      const claim = await claimKey(writer.db, {
        tenantId: task.tenantId,
        key: task.idempotencyKey,
        operation: task.tool,
        fingerprint: keyFingerprint(task.tool, task.arguments),
        taskId: task.id,
        retentionMs: this.#options.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS,
      });
      if (claim.kind !== 'claimed') return claim;
      const [created] = await this.#insertAndEnqueue(writer, [task]);
      return { kind: 'created' as const, task: created as TaskRecord };
    });
    if (outcome.kind === 'created') return { task: outcome.task, replayed: false };
    if (outcome.kind === 'mismatch') {
      throw keyMismatch(task.idempotencyKey, outcome.existing.operation);
    }
    const first = await this.#taskOf(task.tenantId, outcome.existing);
    if (outcome.kind === 'in-progress') {
      const retryAfterSeconds = Math.max(1, Math.ceil((first.pollIntervalMs ?? 1_000) / 1_000));
      throw keyInProgress(task.idempotencyKey, first.id, retryAfterSeconds);
    }
    return { task: first, replayed: true };
  }

  /** The task that holds a key; after the task's own ttl, rebuilt from what the key stored. */
  async #taskOf(tenantId: string, key: KeyRecord): Promise<TaskRecord> {
    const task = key.taskId === null ? null : await findTask(this.#options.db, tenantId, key.taskId);
    if (task) return task;
    const at = key.completedAt ?? key.createdAt;
    return {
      id: key.taskId ?? '00000000-0000-0000-0000-000000000000',
      tenantId,
      tool: key.operation,
      arguments: {},
      status: 'completed',
      statusMessage: 'replayed from the idempotency ledger; the task itself has expired',
      result: key.result,
      error: null,
      mode: 'task',
      cancelRequestedAt: null,
      cancelReason: null,
      progress: null,
      attempt: 1,
      workerId: null,
      idleTimeoutMs: null,
      maxTimeoutMs: null,
      ttlMs: null,
      pollIntervalMs: this.#options.pollIntervalMs,
      createdAt: key.createdAt,
      lastUpdatedAt: at,
      startedAt: null,
      finishedAt: at,
      expiresAt: key.expiresAt,
      idempotencyKey: key.key,
      inputRequests: null,
      inputResponses: {},
      apiInstanceId: null,
      toolFingerprint: null,
      logLevel: null,
      logCount: 0,
    };
  }

  /** Tasks' rows, their events and their jobs, all in the transaction GroupCommit gives them. */
  async #insertAndEnqueue(writer: TaskWriter, tasks: readonly NewTask[]): Promise<TaskRecord[]> {
    const trx = writer.db as Transaction<Database>;
    const created = await insertTasks(writer, tasks);
    // Each task to its tool's queue (one insert per tool in the batch), in the same transaction as
    // the rows, through pg-boss's Kysely adapter.
    const byTool = new Map<string, { id: string; data: TaskJobData }[]>();
    for (const task of created) {
      const jobs = byTool.get(task.tool) ?? [];
      jobs.push({ id: task.id, data: { taskId: task.id, tenantId: task.tenantId } });
      byTool.set(task.tool, jobs);
    }
    for (const [tool, jobs] of byTool) await this.#options.boss.insert(toolQueue(tool), jobs, { db: fromKysely(trx) });
    for (const task of created) await this.#options.afterEnqueue?.(task, trx);
    return created;
  }

  async get(tenantId: string, id: string): Promise<TaskRecord> {
    const task = await this.#reads.submit({ tenantId, id });
    if (!task) throw notFound(id);
    return task;
  }

  /** The task's ctx.log() messages after `afterSeq`, oldest first, at most `limit`. */
  /** The task's events after `afterId`, with its clocks, trace and holder (the console's task page). */
  async timeline(
    tenantId: string,
    id: string,
    afterId: string,
    limit: number,
  ): Promise<{ readonly clocks: TaskClocks; readonly events: TaskEventRecord[] }> {
    await this.get(tenantId, id); // 404 for an id that is no task of this tenant's, a malformed one included
    const clocks = await readTaskClocks(this.#options.db, tenantId, id);
    if (clocks === null) throw notFound(id);
    return { clocks, events: await readTaskEvents(this.#options.db, { tenantId, taskId: id, afterId, limit }) };
  }

  /** The task's durable steps (404 for a task this tenant does not have). */
  async steps(tenantId: string, id: string, limit: number): Promise<TaskStepRecord[]> {
    await this.get(tenantId, id);
    return readTaskSteps(this.#options.db, tenantId, id, limit);
  }

  logMessages(tenantId: string, id: string, afterSeq: number, limit: number): Promise<TaskLogMessage[]> {
    return readLogMessages(this.#options.db, { tenantId, taskId: id, afterSeq, limit });
  }

  async list(tenantId: string, query: TaskListQuery): Promise<TaskListing> {
    const { cursor, ...filters } = query;
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const page = await listTasks(this.#options.db, tenantId, { ...filters, ...(after ? { after } : {}) });
    return { tasks: page.tasks, nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  /**
   * Records the cancel request and returns the task as it is now: still working (with
   * cancelRequestedAt) until a worker observes the flag, or unchanged if it had already ended.
   */
  /**
   * Answers a parked task's input requests (MCP tasks/update). Keys not outstanding are ignored.
   * When the last one is answered the task is working again and its next run is enqueued, in the
   * same transaction: a worker picks it up whichever API instance took the answer.
   */
  async answerInput(
    tenantId: string,
    id: string,
    responses: Readonly<Record<string, unknown>>,
  ): Promise<{ task: TaskRecord; accepted: readonly string[]; resumed: boolean }> {
    const { db, announcer, boss } = this.#options;
    // The queue the next run goes to is the task's tool's, which never changes: read first, so the
    // queue is ensured before the transaction that sends to it.
    const current = await findTask(db, tenantId, id);
    if (!current) throw notFound(id);
    // An answer to an outstanding request must answer it (its result's shape, an elicitation's
    // content against its requestedSchema): refused here, the client can send a good one, and
    // the task goes on waiting; stored, it would fail the task when its handler reads it.
    for (const [key, request] of Object.entries(current.inputRequests ?? {})) {
      if (!Object.hasOwn(responses, key)) continue;
      const problem = inputAnswerProblem(request as InputRequest, responses[key]);
      if (problem !== null) {
        throw new TaskgateError('TG_INPUT_RESPONSES_INVALID', `inputResponses.${key} ${problem}`, {
          details: { key },
        });
      }
    }
    await this.#queues.ensure(current.tool);
    const answered = await announcer.transaction(db, async (writer) => {
      const jobId = randomUUID();
      const outcome = await answerInput(writer, tenantId, id, responses, jobId);
      if (outcome.resumed && outcome.task) {
        const data = { taskId: outcome.task.id, tenantId: outcome.task.tenantId } satisfies TaskJobData;
        await boss.insert(toolQueue(outcome.task.tool), [{ id: jobId, data }], { db: fromKysely(writer.db) });
      }
      return outcome;
    });
    if (!answered.task) throw notFound(id);
    return { task: answered.task, accepted: answered.accepted, resumed: answered.resumed };
  }

  /**
   * Ends the task cancelled now, whatever its worker is doing (the 2025-11-25 tasks/cancel): the
   * worker still sees the flag and stops at its next checkpoint. `cancelled` false: it had
   * already ended, and the task is returned as it ended.
   */
  async cancelNow(
    tenantId: string,
    id: string,
    reason: string,
    signal: CancelSignal = 'tasks_cancel',
  ): Promise<{ task: TaskRecord; cancelled: boolean }> {
    const outcome = await requestCancel(this.#writer(), tenantId, id, reason, { immediately: true, signal });
    if (!outcome.task) throw notFound(id);
    return { task: outcome.task, cancelled: outcome.recorded };
  }

  /**
   * A request-mode task parked for input whose request ends input_required: it is no instance's
   * until a retry adopts it, and is cancelled `deadlineMs` from now if none does.
   */
  async detachParked(tenantId: string, id: string, deadlineMs: number): Promise<boolean> {
    return detachParkedRequest(this.#options.db, tenantId, id, deadlineMs);
  }

  /**
   * A retry waits on a parked request-mode task here: the task is this instance's again. Resolves
   * with the task's adoptions (the fence of this request's own cancel, cancelAbandoned), or null
   * when it is no live request-mode task of the tenant.
   */
  async adoptParked(tenantId: string, id: string): Promise<number | null> {
    return adoptParkedRequest(this.#options.db, tenantId, id, this.#options.instanceId ?? null);
  }

  /**
   * `adoptions`: only while no later retry has adopted the task (requestCancel). `signal`: which
   * path the cancel took, for the worker's cancel-latency figures and logs (default `other`).
   */
  async cancel(
    tenantId: string,
    id: string,
    reason: string | null,
    options: { readonly adoptions?: number; readonly signal?: CancelSignal } = {},
  ): Promise<TaskRecord> {
    const outcome = await requestCancel(this.#writer(), tenantId, id, reason, {
      ...(options.adoptions === undefined ? {} : { adoptions: options.adoptions }),
      signal: options.signal ?? 'other',
    });
    if (!outcome.task) throw notFound(id);
    return outcome.task;
  }

  /**
   * The cancel of a task whose request is gone (the client went away, its input could not be
   * asked, the server could not park it): nobody else knows the task, so the cancel must land. In
   * an outage it is retried, with backoff, until it does (CancelRetries). `adoptions` is what the
   * request saw (0 for the request that created the task, adoptParked's answer for a retry): a
   * later retry that adopted the task since makes the cancel a no-op, now or when retried. Never
   * rejects: the request that ends has nobody to tell; `log` hears of the failure.
   */
  async cancelAbandoned(
    tenantId: string,
    id: string,
    reason: string,
    log?: (fields: Record<string, unknown>, message: string) => void,
    adoptions = 0,
    signal: CancelSignal = 'other',
  ): Promise<void> {
    try {
      await this.cancel(tenantId, id, reason, { adoptions, signal });
    } catch (error) {
      const retried = isUnavailable(error);
      log?.(
        { taskId: id, error: (error as Error).message },
        retried
          ? 'cancelling the task of a gone request failed; it is retried'
          : 'cancelling the task of a gone request failed',
      );
      if (retried) this.#cancelRetries.add(tenantId, id, reason, adoptions, signal);
    }
  }

  /** Cancels waiting to be retried (cancelAbandoned). */
  get cancelsPending(): number {
    return this.#cancelRetries.pending;
  }

  /** The instance stops: retries end (its stopped row has the sweeper cancel its request-mode tasks). */
  stop(): void {
    this.#cancelRetries.stop();
  }

  #writer(): TaskWriter {
    return this.#options.announcer.writer(this.#options.db);
  }
}

function notFound(id: string): TaskgateError {
  return new TaskgateError('TG_TASK_NOT_FOUND', `no task ${JSON.stringify(id)} exists for this tenant`, {
    details: { id },
  });
}
