import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { TaskIdParams } from './task-schemas.ts';

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);
const Instant = () => Nullable(Type.String({ format: 'date-time' }));
const Limit = (max: number, fallback: number) =>
  Type.Optional(
    Type.String({
      pattern: `^(?:[1-9][0-9]{0,${String(max).length - 2}}|${max})$`,
      description: `page size: a decimal integer from 1 to ${max} (default ${fallback})`,
    }),
  );
/** A page's `next`, below 10^digits (an event id is a bigint, a log message's seq an integer). */
const Cursor = (digits: number) =>
  Type.Optional(
    Type.String({ pattern: `^(?:0|[1-9][0-9]{0,${digits - 1}})$`, description: 'the `next` of the previous page' }),
  );

const EventSchema = Type.Object({
  id: Type.String(),
  type: Type.Enum([
    'created',
    'status_changed',
    'cancel_requested',
    'cancel_observed',
    'attempt_started',
    'attempt_lost',
    'attempt_released',
  ]),
  fromStatus: Nullable(Type.String()),
  toStatus: Nullable(Type.String()),
  attempt: Type.Union([Type.Integer(), Type.Null()]),
  reason: Nullable(Type.String()),
  data: Type.Unknown({
    description: 'what the event knows besides: the worker of an attempt, how a cancel was observed',
  }),
  at: Type.String({ format: 'date-time' }),
});

const ClocksSchema = Type.Object({
  idleTimeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  maxTimeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  idleDeadlineAt: Instant(),
  maxDeadlineAt: Instant(),
  inputDeadlineAt: Instant(),
  now: Type.String({ format: 'date-time', description: "the database's clock: what is left is measured from it" }),
});

/**
 * What the console's task page shows beside the task: its timeline (events, clocks, trace,
 * holder), its durable steps and its ctx.log() messages. Tenant-scoped like every /v1/tasks route.
 */
export function registerTaskDetailRoutes(app: FastifyInstance, options: { readonly service: TaskService }): void {
  const { service } = options;
  const security = [{ bearer: [] }];
  const tags = ['tasks'];

  app.get(
    '/v1/tasks/:id/timeline',
    {
      schema: {
        summary: "A task's timeline: its events oldest first, its two clocks, trace and holder",
        tags,
        security,
        params: TaskIdParams,
        querystring: Type.Object({ after: Cursor(18), limit: Limit(1000, 500) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            events: Type.Array(EventSchema),
            next: Nullable(Type.String({ description: 'pass as `after` for the events after these' })),
            clocks: ClocksSchema,
            traceParent: Nullable(Type.String({ description: 'the W3C traceparent of the request that created it' })),
            cancelSignal: Nullable(Type.String({ description: 'which path the cancel took' })),
            worker: Type.Union([Type.Object({ id: Type.String(), heartbeatAt: Instant() }), Type.Null()]),
            toolFingerprint: Nullable(Type.String()),
          }),
          ...problemResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const query = request.query as { after?: string; limit?: string };
      const limit = query.limit === undefined ? 500 : Number.parseInt(query.limit, 10);
      const { clocks, events } = await service.timeline(tenantOf(request), id, query.after ?? '0', limit);
      const iso = (date: Date | null) => (date === null ? null : date.toISOString());
      return {
        events: events.map((event) => ({ ...event, at: event.at.toISOString() })),
        next: events.length === limit ? (events.at(-1)?.id ?? null) : null,
        clocks: {
          idleTimeoutMs: clocks.idleTimeoutMs,
          maxTimeoutMs: clocks.maxTimeoutMs,
          idleDeadlineAt: iso(clocks.idleDeadlineAt),
          maxDeadlineAt: iso(clocks.maxDeadlineAt),
          inputDeadlineAt: iso(clocks.inputDeadlineAt),
          now: clocks.now.toISOString(),
        },
        traceParent: clocks.traceParent,
        cancelSignal: clocks.cancelSignal,
        worker: clocks.workerId === null ? null : { id: clocks.workerId, heartbeatAt: iso(clocks.heartbeatAt) },
        toolFingerprint: clocks.toolFingerprint,
      };
    },
  );

  app.get(
    '/v1/tasks/:id/steps',
    {
      schema: {
        summary: "A task's durable steps (ctx.step), irreversible ones marked, in the order recorded",
        tags,
        security,
        params: TaskIdParams,
        response: {
          200: Type.Object({
            steps: Type.Array(
              Type.Object({
                name: Type.String(),
                state: Type.Enum(['started', 'done'], {
                  description: 'started: an irreversible step began and never recorded how it went',
                }),
                irreversible: Type.Boolean(),
                attempt: Type.Integer(),
                result: Type.Unknown(),
                at: Type.String({ format: 'date-time' }),
              }),
            ),
          }),
          ...problemResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const steps = await service.steps(tenantOf(request), id, 1000);
      return { steps: steps.map((step) => ({ ...step, at: step.at.toISOString() })) };
    },
  );

  app.get(
    '/v1/tasks/:id/logs',
    {
      schema: {
        summary: "A task's log messages (ctx.log), oldest first",
        tags,
        security,
        params: TaskIdParams,
        querystring: Type.Object({ after: Cursor(9), limit: Limit(1000, 200) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            messages: Type.Array(
              Type.Object({
                seq: Type.Integer(),
                level: Type.String(),
                logger: Nullable(Type.String()),
                data: Type.Unknown(),
              }),
            ),
            next: Nullable(Type.String({ description: 'pass as `after` for the messages after these' })),
          }),
          ...problemResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const query = request.query as { after?: string; limit?: string };
      const limit = query.limit === undefined ? 200 : Number.parseInt(query.limit, 10);
      const tenant = tenantOf(request);
      await service.get(tenant, id);
      const read = await service.logMessages(tenant, id, Number(query.after ?? '0'), limit);
      const messages = read.flatMap((message) =>
        message.kind === 'log'
          ? [{ seq: message.seq, level: message.level, logger: message.logger, data: message.data }]
          : [],
      );
      return { messages, next: read.length === limit ? String(read.at(-1)?.seq ?? '') : null };
    },
  );
}
