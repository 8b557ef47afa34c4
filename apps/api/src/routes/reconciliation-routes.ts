import { isReconciliationItemId, type ReconciliationFilter, type ReconciliationItem } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';
import type { LedgerService } from '../ledger/ledger-service.ts';

export interface ReconciliationRoutesOptions {
  readonly ledger: LedgerService;
}

const KeyRecordSchema = Type.Object({
  key: Type.String(),
  operation: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('completed')]),
  taskId: Type.Union([Type.String(), Type.Null()]),
  result: Type.Unknown({ description: 'the stored result, once completed' }),
  createdAt: Type.String({ format: 'date-time' }),
  completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresAt: Type.String({ format: 'date-time' }),
});

/**
 * The reads that reconcile after a lost response: the key's ledger record ("did my call commit,
 * and with what result?") and the calls waiting for a decision.
 */
export function registerReconciliationRoutes(app: FastifyInstance, options: ReconciliationRoutesOptions): void {
  const { ledger } = options;
  const security = [{ bearer: [] }];

  app.get(
    '/v1/idempotency-keys/:key',
    {
      schema: {
        summary: "The ledger's record of a key: did the call that used it commit, and with what result?",
        tags: ['reconciliation'],
        security,
        params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 255 }) }),
        response: { 200: KeyRecordSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) => {
      const record = await ledger.idempotencyRecord(tenantOf(request), (request.params as { key: string }).key);
      return {
        key: record.key,
        operation: record.operation,
        state: record.state,
        taskId: record.taskId,
        result: record.result,
        createdAt: record.createdAt.toISOString(),
        completedAt: record.completedAt?.toISOString() ?? null,
        expiresAt: record.expiresAt.toISOString(),
      };
    },
  );

  app.get(
    '/v1/reconciliation-items',
    {
      schema: {
        summary: 'Calls that left something for a person to decide, newest first',
        description:
          'unknown_outcome: a lost attempt of a call that is never retried automatically, or an irreversible step that started and never recorded how it went. abandoned_with_effects: the task failed or was cancelled after an irreversible step took effect.',
        tags: ['reconciliation'],
        security,
        querystring: Type.Object(
          {
            state: Type.Optional(
              Type.Union([Type.Literal('open'), Type.Literal('resolved'), Type.Literal('all')], { default: 'open' }),
            ),
            limit: Type.Optional(
              Type.String({
                pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$',
                description: 'page size: a decimal integer from 1 to 500 (default 100)',
              }),
            ),
            before: Type.Optional(
              Type.String({ pattern: ID_PATTERN, description: 'the id the previous page ended at' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            items: Type.Array(ItemSchema),
            next: Type.Union([Type.String(), Type.Null()], { description: 'pass as `before` for the next page' }),
          }),
          ...problemResponses(400, 401),
        },
      },
    },
    async (request) => {
      const query = request.query as { state?: ReconciliationFilter; limit?: string; before?: string };
      const limit = query.limit === undefined ? 100 : Number.parseInt(query.limit, 10);
      // The pattern allows 19 digits; past 2^63 - 1 no item can have the id.
      if (query.before !== undefined && !isReconciliationItemId(query.before)) {
        throw new TaskgateError('TG_REQUEST_INVALID', 'querystring/before must be the id of an item (below 2^63)');
      }
      const items = await ledger.reconciliationItems(tenantOf(request), {
        filter: query.state ?? 'open',
        limit,
        before: query.before,
      });
      return { items: items.map(itemJson), next: items.length === limit ? (items.at(-1)?.id ?? null) : null };
    },
  );

  app.get(
    '/v1/reconciliation-items/:id',
    {
      schema: {
        summary: 'One reconciliation item, with what is known: the ending, the last progress, the steps',
        tags: ['reconciliation'],
        security,
        params: Type.Object({ id: Type.String({ maxLength: 40 }) }),
        response: { 200: ItemSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) =>
      itemJson(await ledger.reconciliationItem(tenantOf(request), (request.params as { id: string }).id)),
  );

  app.post(
    '/v1/reconciliation-items/:id/resolve',
    {
      schema: {
        summary: 'Resolves an item with a note saying what was found and done, and who decided',
        tags: ['reconciliation'],
        security,
        params: Type.Object({ id: Type.String({ maxLength: 40 }) }),
        body: Type.Object(
          {
            resolution: Type.String({ minLength: 1, maxLength: 4000, description: 'what was found and done' }),
            resolvedBy: Type.String({ minLength: 1, maxLength: 200, description: 'who decided' }),
          },
          { additionalProperties: false },
        ),
        response: { 200: ItemSchema, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request) => {
      const body = request.body as { resolution: string; resolvedBy: string };
      const resolution = body.resolution.trim();
      const resolvedBy = body.resolvedBy.trim();
      if (resolution === '' || resolvedBy === '') {
        throw new TaskgateError(
          'TG_REQUEST_INVALID',
          'resolution and resolvedBy must say something besides white space',
        );
      }
      const item = await ledger.resolve(tenantOf(request), (request.params as { id: string }).id, {
        resolution,
        resolvedBy,
      });
      return itemJson(item);
    },
  );
}

/** Whole numbers, as item ids are (a bigint identity). */
const ID_PATTERN = '^[1-9][0-9]{0,18}$';

const ItemSchema = Type.Object({
  id: Type.String(),
  taskId: Type.String(),
  tool: Type.String(),
  idempotencyKey: Type.Union([Type.String(), Type.Null()]),
  kind: Type.Union([Type.Literal('unknown_outcome'), Type.Literal('abandoned_with_effects')]),
  reason: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown(), {
    description: 'what was known when it opened: status, statusMessage, attempt, cancelReason, lastProgress, steps',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  resolvedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  resolution: Type.Union([Type.String(), Type.Null()]),
  resolvedBy: Type.Union([Type.String(), Type.Null()]),
});

function itemJson(item: ReconciliationItem) {
  return {
    id: item.id,
    taskId: item.taskId,
    tool: item.tool,
    idempotencyKey: item.idempotencyKey,
    kind: item.kind,
    reason: item.reason,
    details: item.details,
    createdAt: item.createdAt.toISOString(),
    resolvedAt: item.resolvedAt?.toISOString() ?? null,
    resolution: item.resolution,
    resolvedBy: item.resolvedBy,
  };
}
