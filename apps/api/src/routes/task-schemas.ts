import type { TaskRecord, TaskStatus } from '@taskgate/db';
import { type Static, Type } from 'typebox';
import { MAX_TTL_MS } from '../tasks/task-limits.ts';

/**
 * The REST API's shapes. Fastify validates requests with them and @fastify/swagger publishes them
 * in /openapi.json: one definition for both.
 */
// One enum rather than a union of literals: a wrong value is refused with one message listing the
// allowed ones, where a union gave one "must be equal to constant" per member and then "anyOf".
export const TaskStatusSchema = Type.Enum(['working', 'input_required', 'completed', 'failed', 'cancelled'], {
  description: 'working ⇄ input_required → completed | failed | cancelled (terminal)',
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const TaskSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    tool: Type.String(),
    arguments: Type.Unknown(),
    status: TaskStatusSchema,
    statusMessage: Nullable(Type.String()),
    result: Type.Unknown({ description: 'the tool result (an MCP CallToolResult) once completed' }),
    error: Type.Unknown({ description: 'a JSON-RPC error object once failed' }),
    progress: Nullable(
      Type.Object({ value: Type.Number(), total: Nullable(Type.Number()), message: Nullable(Type.String()) }),
    ),
    cancelRequestedAt: Nullable(Type.String({ format: 'date-time' })),
    cancelReason: Nullable(Type.String()),
    attempt: Type.Integer({ description: 'how many times a worker has started it' }),
    ttlMs: Nullable(Type.Integer()),
    pollIntervalMs: Nullable(Type.Integer()),
    createdAt: Type.String({ format: 'date-time' }),
    lastUpdatedAt: Type.String({ format: 'date-time' }),
    startedAt: Nullable(Type.String({ format: 'date-time' })),
    finishedAt: Nullable(Type.String({ format: 'date-time' })),
    expiresAt: Nullable(Type.String({ format: 'date-time' })),
    idempotencyKey: Nullable(Type.String({ description: 'the idempotency key the task was created with' })),
  },
  { $id: 'Task', additionalProperties: false },
);
export type TaskBody = Static<typeof TaskSchema>;

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    code: Type.String({ description: 'a stable Taskgate error code, see docs/errors.md' }),
    errors: Type.Optional(Type.Array(Type.Unknown())),
  },
  { $id: 'Problem' },
);

export const CreateTaskBody = Type.Object(
  {
    tool: Type.String({ minLength: 1, maxLength: 128 }),
    arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "the tool's arguments" })),
    ttlMs: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_TTL_MS, description: 'how long the task is kept after it ends' }),
    ),
  },
  { additionalProperties: false },
);

export const TaskIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const DEFAULT_LIST_LIMIT = 20;

/**
 * A query string is text, and nothing coerces it (ajv's coerceTypes is off): `limit` is checked
 * as the decimal digits of 1 to 100, so `1e2`, `1.0`, `+5`, `0x10`, `true` and an empty value
 * are 400 rather than numbers JavaScript would make of them.
 */
export const ListTasksQuery = Type.Object(
  {
    status: Type.Optional(TaskStatusSchema),
    limit: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9][0-9]{0,2}|1000)$',
        description: `page size: a decimal integer from 1 to 1000 (default ${DEFAULT_LIST_LIMIT})`,
      }),
    ),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    tool: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "only this tool's tasks" })),
    createdAfter: Type.Optional(
      Type.String({ format: 'date-time', description: 'only tasks created at or after this instant (RFC 3339)' }),
    ),
    createdBefore: Type.Optional(
      Type.String({ format: 'date-time', description: 'only tasks created before this instant (RFC 3339)' }),
    ),
    id: Type.Optional(Type.String({ format: 'uuid', description: 'the task with this id, if it is yours' })),
    idempotencyKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'the task this idempotency key named, while the ledger remembers the key',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The filters of a query ListTasksQuery accepted, as TaskService.list takes them. */
export function listFilters(query: {
  status?: TaskStatus;
  tool?: string;
  createdAfter?: string;
  createdBefore?: string;
  id?: string;
  idempotencyKey?: string;
}) {
  return {
    ...(query.status ? { status: query.status } : {}),
    ...(query.tool === undefined ? {} : { tool: query.tool }),
    ...(query.createdAfter === undefined ? {} : { createdAfter: new Date(query.createdAfter) }),
    ...(query.createdBefore === undefined ? {} : { createdBefore: new Date(query.createdBefore) }),
    ...(query.id === undefined ? {} : { id: query.id }),
    ...(query.idempotencyKey === undefined ? {} : { idempotencyKey: query.idempotencyKey }),
  };
}

/** The page size of a query ListTasksQuery accepted. */
export function listLimit(limit: string | undefined): number {
  return limit === undefined ? DEFAULT_LIST_LIMIT : Number.parseInt(limit, 10);
}

export const CancelTaskBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 500 })) },
  { additionalProperties: false },
);

export const TaskListSchema = Type.Object({
  tasks: Type.Array(Type.Ref('Task')),
  nextCursor: Nullable(Type.String()),
});

/** A task as the API shows it: no tenant (implicit) and no worker id (internal). */
export function taskBody(task: TaskRecord): TaskBody {
  const iso = (date: Date | null) => (date === null ? null : date.toISOString());
  return {
    id: task.id,
    tool: task.tool,
    arguments: task.arguments,
    status: task.status,
    statusMessage: task.statusMessage,
    result: task.result,
    error: task.error,
    progress: task.progress,
    cancelRequestedAt: iso(task.cancelRequestedAt),
    cancelReason: task.cancelReason,
    attempt: task.attempt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    startedAt: iso(task.startedAt),
    finishedAt: iso(task.finishedAt),
    expiresAt: iso(task.expiresAt),
    idempotencyKey: task.idempotencyKey,
  };
}

/**
 * A task as a list shows it: everything but its arguments, result and error, which can be large
 * (a megabyte each) and which a row does not show. GET /v1/tasks/events sends these; the task
 * itself (GET /v1/tasks/:id) has the rest.
 */
export function taskSummary(task: TaskRecord): Omit<TaskBody, 'arguments' | 'result' | 'error'> {
  const { arguments: _arguments, result: _result, error: _error, ...summary } = taskBody(task);
  return summary;
}
