import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import type { LedgerService } from '../ledger/ledger-service.ts';

export interface ReconciliationRoutesOptions {
  readonly ledger: LedgerService;
}

const problems = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('Problem')]));
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
        response: { 200: KeyRecordSchema, ...problems(401, 404) },
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
        summary: 'Calls whose outcome is unknown and that were not retried automatically',
        tags: ['reconciliation'],
        security,
        response: {
          200: Type.Object({
            items: Type.Array(
              Type.Object({
                id: Type.String(),
                taskId: Type.String(),
                tool: Type.String(),
                idempotencyKey: Type.Union([Type.String(), Type.Null()]),
                reason: Type.String(),
                createdAt: Type.String({ format: 'date-time' }),
              }),
            ),
          }),
          ...problems(401),
        },
      },
    },
    async (request) => {
      const items = await ledger.reconciliationItems(tenantOf(request));
      return {
        items: items.map((item) => ({
          id: item.id,
          taskId: item.taskId,
          tool: item.tool,
          idempotencyKey: item.idempotencyKey,
          reason: item.reason,
          createdAt: item.createdAt.toISOString(),
        })),
      };
    },
  );
}
