import {
  type Database,
  isOutboxEventId,
  listOutboxEvents,
  type OutboxEventRecord,
  type OutboxState,
  outboxSummary,
  redeliverOutboxEvent,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';

/** Whole numbers, as outbox ids are (a bigint identity); the range is checked after the pattern. */
const ID_PATTERN = '^[1-9][0-9]{0,18}$';
const DEFAULT_LIMIT = 50;

const GroupSchema = Type.Object({
  eventType: Type.String(),
  pending: Type.Integer({ description: 'not delivered and not dead-lettered: due, retrying later, or in flight' }),
  dead: Type.Integer({ description: 'dead-lettered: out of attempts, waiting for an operator' }),
  oldestPendingAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  oldestPendingAgeSeconds: Type.Union([Type.Number(), Type.Null()], {
    description: "how long the oldest pending event has waited, on the database's clock",
  }),
  newestDeadAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const EventSchema = Type.Object({
  id: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('dead')]),
  eventType: Type.String(),
  aggregateType: Type.String(),
  aggregateId: Type.String(),
  attempts: Type.Integer({ description: 'delivery attempts since it was added or last redelivered' }),
  lastError: Type.Union([Type.String(), Type.Null()], {
    description: "the last failed attempt's error, naming the sink",
  }),
  createdAt: Type.String({ format: 'date-time' }),
  availableAt: Type.String({ format: 'date-time', description: 'pending: due from then on (a retry waits for it)' }),
  leasedBy: Type.Union([Type.String(), Type.Null()], { description: 'the relay that claimed it last' }),
  leasedUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  deadAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  payload: Type.Unknown(),
});

/**
 * The outbox (admin scope): what is pending and dead-lettered per event type, the events
 * themselves, and redelivering a dead-lettered one. Rows name no endpoint: the relay sends every
 * event to all of its TASKGATE_RELAY_SINKS, so the event type is the grouping; a refusing sink is
 * named in lastError. Tenant-scoped like every /v1 route.
 */
export function registerOutboxRoutes(app: FastifyInstance, options: { readonly db: Kysely<Database> }): void {
  const { db } = options;
  const security = [{ bearer: [] }];

  app.get(
    '/v1/outbox',
    {
      schema: {
        summary: 'Pending and dead-lettered outbox events per event type',
        description:
          'Every event goes to every sink the relay is configured with (TASKGATE_RELAY_SINKS), so there is one figure per event type, not per sink. Event types with neither pending nor dead events are left out.',
        tags: ['operations'],
        security,
        response: { 200: Type.Object({ groups: Type.Array(GroupSchema) }), ...problemResponses(401, 403) },
      },
    },
    async (request) => {
      const groups = await outboxSummary(db, tenantOf(request));
      return {
        groups: groups.map((group) => ({
          eventType: group.eventType,
          pending: group.pending,
          dead: group.dead,
          oldestPendingAt: group.oldestPendingAt?.toISOString() ?? null,
          oldestPendingAgeSeconds: group.oldestPendingAgeSeconds,
          newestDeadAt: group.newestDeadAt?.toISOString() ?? null,
        })),
      };
    },
  );

  app.get(
    '/v1/outbox/events',
    {
      schema: {
        summary: 'Dead-lettered events newest first, or pending events oldest first (the next to be delivered)',
        tags: ['operations'],
        security,
        querystring: Type.Object(
          {
            state: Type.Optional(Type.Union([Type.Literal('dead'), Type.Literal('pending')], { default: 'dead' })),
            eventType: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            after: Type.Optional(
              Type.String({ pattern: ID_PATTERN, description: 'the id the previous page ended at (its `next`)' }),
            ),
            limit: Type.Optional(
              Type.String({
                pattern: '^(?:[1-9][0-9]?|1[0-9]{2}|200)$',
                description: `page size: a decimal integer from 1 to 200 (default ${DEFAULT_LIMIT})`,
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            events: Type.Array(EventSchema),
            next: Type.Union([Type.String(), Type.Null()], { description: 'pass as `after` for the next page' }),
          }),
          ...problemResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      const query = request.query as { state?: OutboxState; eventType?: string; after?: string; limit?: string };
      const limit = query.limit === undefined ? DEFAULT_LIMIT : Number.parseInt(query.limit, 10);
      // The pattern allows 19 digits; past 2^63 - 1 no event can have the id.
      if (query.after !== undefined && !isOutboxEventId(query.after)) {
        throw new TaskgateError('TG_REQUEST_INVALID', 'querystring/after must be the id of an event (below 2^63)');
      }
      const events = await listOutboxEvents(db, tenantOf(request), {
        state: query.state ?? 'dead',
        eventType: query.eventType,
        after: query.after,
        limit,
      });
      return { events: events.map(eventJson), next: events.length === limit ? (events.at(-1)?.id ?? null) : null };
    },
  );

  app.post(
    '/v1/outbox/events/:id/redeliver',
    {
      schema: {
        summary: 'Sends a dead-lettered event again: pending, due now, with a fresh set of attempts',
        description:
          'Acknowledges (202) with the event as it is now, pending; the relay delivers it as it does any pending event (it is woken at once). Its attempts start again from 0; lastError is kept until the next attempt. Only a dead-lettered event can be redelivered: a pending or delivered one is 409.',
        tags: ['operations'],
        security,
        params: Type.Object({ id: Type.String({ pattern: ID_PATTERN }) }),
        body: Type.Object({}, { additionalProperties: false }),
        response: { 202: EventSchema, ...problemResponses(400, 401, 403, 404, 409) },
      },
      // The body is optional: a bare POST redelivers.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      if (!isOutboxEventId(id)) {
        throw new TaskgateError('TG_REQUEST_INVALID', 'params/id must be the id of an event (below 2^63)');
      }
      const outcome = await redeliverOutboxEvent(db, tenantOf(request), id);
      if (outcome.kind === 'not-found') {
        throw new TaskgateError('TG_OUTBOX_EVENT_NOT_FOUND', `no outbox event ${JSON.stringify(id)}`);
      }
      if (outcome.kind === 'not-dead') {
        throw new TaskgateError(
          'TG_OUTBOX_EVENT_NOT_DEAD',
          outcome.state === 'delivered'
            ? `outbox event ${id} was delivered at ${outcome.deliveredAt?.toISOString()}: there is nothing to redeliver`
            : `outbox event ${id} is pending, not dead-lettered: the relay is delivering it`,
        );
      }
      return reply.code(202).send(eventJson(outcome.event));
    },
  );
}

function eventJson(event: OutboxEventRecord) {
  return {
    id: event.id,
    state: event.state,
    eventType: event.eventType,
    aggregateType: event.aggregateType,
    aggregateId: event.aggregateId,
    attempts: event.attempts,
    lastError: event.lastError,
    createdAt: event.createdAt.toISOString(),
    availableAt: event.availableAt.toISOString(),
    leasedBy: event.leasedBy,
    leasedUntil: event.leasedUntil?.toISOString() ?? null,
    deadAt: event.deadAt?.toISOString() ?? null,
    payload: event.payload,
  };
}
