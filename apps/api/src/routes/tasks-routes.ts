import type { ServerResponse } from 'node:http';
import type { TaskRecord } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';
import { SseStream } from '../sse/sse-stream.ts';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { TaskWatcher } from '../tasks/task-watch.ts';
import { IdempotencyHeaders, sendSubmission, submitWithKey } from './idempotent-submit.ts';
import { streamTaskList } from './task-list-events.ts';
import {
  CancelTaskBody,
  CreateTaskBody,
  ListTasksQuery,
  listFilters,
  listLimit,
  TaskIdParams,
  TaskListSchema,
  taskBody,
} from './task-schemas.ts';

export interface TaskRoutesOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  readonly events: { readonly keepaliveMs: number; readonly pollMs: number; readonly capacity: number };
}

/** /v1/tasks: create, read, list, cancel, and watch tasks. Every call is scoped to the caller's tenant. */
export function registerTaskRoutes(app: FastifyInstance, options: TaskRoutesOptions): void {
  const { service } = options;
  const watcher = new TaskWatcher(options);
  // Open event streams end when the server closes (the client reconnects, to another instance, and
  // refetches); a stream left open would hold close() until the shutdown deadline.
  const watching = new Set<SseStream>();
  app.addHook('preClose', async () => {
    for (const stream of watching) stream.close();
  });
  const security = [{ bearer: [] }];

  app.post(
    '/v1/tasks',
    {
      schema: {
        summary: 'Create a task: call a tool',
        description:
          'Validates the arguments against the tool input schema, then stores the task and queues it in one transaction. ' +
          'For a conditional tool, an Idempotency-Key header (or idempotencyKey argument) makes the call once-only: ' +
          'a retry with the same key and body answers 200 with the first task and Idempotent-Replayed: true; ' +
          'a different body is 422; while the first still runs, 409 with Retry-After.',
        tags: ['tasks'],
        security,
        headers: IdempotencyHeaders,
        body: CreateTaskBody,
        response: { 200: Type.Ref('Task'), 201: Type.Ref('Task'), ...problemResponses(400, 401, 409, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const body = request.body as { tool: string; arguments?: Record<string, unknown>; ttlMs?: number };
      const submission = await submitWithKey(service, reply, tenantOf(request), request, {
        tool: body.tool,
        arguments: body.arguments ?? {},
        ttlMs: body.ttlMs,
      });
      return sendSubmission(reply, submission);
    },
  );

  app.get(
    '/v1/tasks',
    {
      schema: {
        summary: 'List tasks, newest first',
        description:
          'Keyset pagination: pass nextCursor back as cursor for the next page, with the same filters. Filters combine (all must hold).',
        tags: ['tasks'],
        security,
        querystring: ListTasksQuery,
        response: { 200: TaskListSchema, ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const query = request.query as Parameters<typeof listFilters>[0] & { limit?: string; cursor?: string };
      const listing = await service.list(tenantOf(request), {
        limit: listLimit(query.limit),
        ...listFilters(query),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      return { tasks: listing.tasks.map(taskBody), nextCursor: listing.nextCursor };
    },
  );

  app.get(
    '/v1/tasks/events',
    {
      schema: {
        summary: 'Watch a list of tasks (Server-Sent Events): the tasks page of the console, live',
        description:
          'Takes the query of GET /v1/tasks. Every task it sends is a summary: the Task without arguments, result and error (GET /v1/tasks/{id} has them). Events: `snapshot` (that page: tasks and nextCursor), then `tasks` (tasks of the page that changed, each whole, the latest of each, gathered over 50 ms), `created` (a new task matching the filters; without a cursor it enters the page, whose oldest task leaves), `gone` (a task of the page expired: id), `refetch` (the reader fell behind and changes were dropped: read the page again). `:` comments keep quiet streams open.',
        tags: ['tasks'],
        security,
        querystring: ListTasksQuery,
        response: {
          200: { content: { 'text/event-stream': { schema: Type.String() } } },
          ...problemResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request);
      const query = request.query as Parameters<typeof listFilters>[0] & { limit?: string; cursor?: string };
      const listQuery = {
        limit: listLimit(query.limit),
        ...listFilters(query),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      };
      const first = await service.list(tenantId, listQuery);
      reply.hijack();
      const stream = streamTaskList(reply.raw, tenantId, listQuery, first, {
        service,
        hub: options.hub,
        watcher,
        keepaliveMs: options.events.keepaliveMs,
        pollMs: options.events.pollMs,
      });
      if (!stream.closed) {
        watching.add(stream);
        stream.onClose(() => watching.delete(stream));
      }
    },
  );

  app.get(
    '/v1/tasks/:id',
    {
      schema: {
        summary: 'Read a task',
        tags: ['tasks'],
        security,
        params: TaskIdParams,
        response: { 200: Type.Ref('Task'), ...problemResponses(401, 404) },
      },
    },
    async (request) => taskBody(await service.get(tenantOf(request), (request.params as { id: string }).id)),
  );

  app.post(
    '/v1/tasks/:id/cancel',
    {
      schema: {
        summary: 'Ask for a task to be cancelled',
        description:
          'Acknowledges the intent (202) with the task as it is now: still working, with cancelRequestedAt, until a worker checkpoint observes the flag; unchanged if it had already ended. Poll or watch until a terminal status.',
        tags: ['tasks'],
        security,
        params: TaskIdParams,
        body: CancelTaskBody,
        response: { 202: Type.Ref('Task'), ...problemResponses(400, 401, 404) },
      },
      // The body is optional: a bare POST cancels without a reason.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const reason = (request.body as { reason?: string } | undefined)?.reason ?? null;
      const task = await service.cancel(tenantOf(request), (request.params as { id: string }).id, reason, {
        signal: 'rest_cancel',
      });
      return reply.code(202).send(taskBody(task));
    },
  );

  app.get(
    '/v1/tasks/:id/events',
    {
      schema: {
        summary: 'Watch a task (Server-Sent Events)',
        description:
          'Events `status` and `progress`, each carrying the whole task; the stream ends after the terminal status. `:` comments keep quiet streams open.',
        tags: ['tasks'],
        security,
        params: TaskIdParams,
        response: {
          200: { content: { 'text/event-stream': { schema: Type.String() } } },
          ...problemResponses(401, 404),
        },
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request);
      const id = (request.params as { id: string }).id;
      const first = await service.get(tenantId, id);
      reply.hijack();
      const stream = watchTask(reply.raw, first, tenantId, options, watcher);
      if (!stream.closed) {
        watching.add(stream);
        stream.onClose(() => watching.delete(stream));
      }
    },
  );
}

/** Streams a task's changes until it is terminal or the client goes away. */
function watchTask(
  response: ServerResponse,
  first: TaskRecord,
  tenantId: string,
  options: TaskRoutesOptions,
  watcher: TaskWatcher,
): SseStream {
  // One replaceable slot per task (each event carries the whole task, so only the latest matters)
  // plus the final event: a stalled client costs two events of memory, however long it stalls.
  const stream = new SseStream(response, {
    capacity: options.events.capacity,
    coalesce: 'by-key',
    keepaliveMs: options.events.keepaliveMs,
  });
  stream.open();
  let last = first;

  const emit = (task: TaskRecord, event: 'status' | 'progress') => {
    const terminal = task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
    const data = taskBody(task);
    stream.push(
      terminal
        ? { kind: 'final', value: { event, data } }
        : { kind: 'replaceable', key: 'task', value: { event, data } },
    );
  };

  emit(first, 'status');
  if (stream.closed) return stream;
  const watch = watcher.watch({ tenantId, pollMs: options.events.pollMs }, (_id, reading) => {
    // The task expired while watched: end the stream; a new request will answer 404. Other
    // failed reads (an outage) are waited out by the next poll.
    if (reading.kind === 'missing') return stream.close();
    if (reading.kind !== 'task') return;
    const task = reading.task;
    if (task.status !== last.status) emit(task, 'status');
    else if (JSON.stringify(task.progress) !== JSON.stringify(last.progress)) emit(task, 'progress');
    last = task;
  });
  watch.add(first.id);
  stream.onClose(() => watch.stop());
  return stream;
}
