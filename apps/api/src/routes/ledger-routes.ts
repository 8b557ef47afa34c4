import { isTaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import type { LedgerService } from '../ledger/ledger-service.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { IdempotencyHeaders, idempotencyKeyOf, sendSubmission, submitWithKey } from './idempotent-submit.ts';

export interface LedgerRoutesOptions {
  readonly service: TaskService;
  readonly ledger: LedgerService;
}

const problems = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('Problem')]));
const Sku = Type.String({ minLength: 1, maxLength: 128 });
const InventorySchema = Type.Object({
  sku: Type.String(),
  available: Type.Integer(),
  reserved: Type.Integer(),
  reservations: Type.Integer(),
  updatedAt: Type.String({ format: 'date-time' }),
});
const ChargeSchema = Type.Object({
  chargeId: Type.String({ format: 'uuid' }),
  account: Type.String(),
  cents: Type.Integer(),
  createdAt: Type.String({ format: 'date-time' }),
});
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
 * The two example mutations as REST operations — a charge runs synchronously on the ledger (one
 * statement); a reservation is a task of reserve_inventory under the caller's Idempotency-Key —
 * and the reads that reconcile after a lost response: the key's ledger record,
 * the inventory as it is now, and the calls waiting for a decision.
 */
export function registerLedgerRoutes(app: FastifyInstance, options: LedgerRoutesOptions): void {
  const { service, ledger } = options;
  const security = [{ bearer: [] }];

  app.post(
    '/v1/accounts/:account/charges',
    {
      schema: {
        summary:
          'Charge an account, once per Idempotency-Key (synchronous; the same ledger as the charge_account tool)',
        description:
          'The key claim, the charge, its outbox event and the stored result commit in one statement. ' +
          '201 with the charge; a retry with the same key and body is 200 with the stored charge and ' +
          'Idempotent-Replayed: true; another body under the key is 422; a key still held by a running task is 409.',
        tags: ['mutations'],
        security,
        headers: IdempotencyHeaders,
        params: Type.Object({ account: Type.String({ minLength: 1, maxLength: 128 }) }),
        body: Type.Object(
          { cents: Type.Integer({ minimum: 1, maximum: 100_000_000 }) },
          { additionalProperties: false },
        ),
        response: { 200: ChargeSchema, 201: ChargeSchema, ...problems(400, 401, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { account } = request.params as { account: string };
      const { cents } = request.body as { cents: number };
      const key = idempotencyKeyOf(request);
      try {
        const { result, replayed } = await ledger.charge(tenantOf(request), key, {
          account,
          cents,
        });
        const charge = (result as { structuredContent: { charge: unknown } }).structuredContent.charge;
        if (replayed) reply.header('idempotent-replayed', 'true');
        return reply.code(replayed ? 200 : 201).send(charge);
      } catch (error) {
        if (isTaskgateError(error) && error.code === 'TG_IDEMPOTENCY_KEY_IN_PROGRESS') reply.header('retry-after', '1');
        throw error;
      }
    },
  );

  app.post(
    '/v1/inventory/:sku/reservations',
    {
      schema: {
        summary: 'Reserve stock (the reserve_inventory tool); with Idempotency-Key it is once-only and retryable',
        tags: ['mutations'],
        security,
        headers: IdempotencyHeaders,
        params: Type.Object({ sku: Sku }),
        body: Type.Object(
          { quantity: Type.Integer({ minimum: 1, maximum: 1_000_000 }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Ref('Task'), 201: Type.Ref('Task'), ...problems(400, 401, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { sku } = request.params as { sku: string };
      const { quantity } = request.body as { quantity: number };
      const submission = await submitWithKey(service, reply, tenantOf(request), request, {
        tool: 'reserve_inventory',
        arguments: { sku, quantity },
      });
      return sendSubmission(reply, submission);
    },
  );

  app.get(
    '/v1/inventory/:sku',
    {
      schema: {
        summary: 'The SKU as it is now (refetch after a lost stream before deciding anything)',
        tags: ['mutations'],
        security,
        params: Type.Object({ sku: Sku }),
        response: { 200: InventorySchema, ...problems(401, 404) },
      },
    },
    async (request) => ledger.inventory(tenantOf(request), (request.params as { sku: string }).sku),
  );

  app.put(
    '/v1/inventory/:sku',
    {
      schema: {
        summary: 'Set the available stock of a SKU (creating it)',
        tags: ['mutations'],
        security,
        params: Type.Object({ sku: Sku }),
        body: Type.Object(
          { available: Type.Integer({ minimum: 0, maximum: 2_000_000_000 }) },
          { additionalProperties: false },
        ),
        response: { 200: InventorySchema, ...problems(400, 401, 415) },
      },
    },
    async (request) =>
      ledger.restock(
        tenantOf(request),
        (request.params as { sku: string }).sku,
        (request.body as { available: number }).available,
      ),
  );

  app.get(
    '/v1/idempotency-keys/:key',
    {
      schema: {
        summary: "The ledger's record of a key: did the call that used it commit, and with what result?",
        tags: ['mutations'],
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
        tags: ['mutations'],
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
