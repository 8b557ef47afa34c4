import type { MutationDefinition, RouteServices } from '@taskgate/api';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { LedgerDatabase } from './ledger-schema.ts';
import { chargedEvent, chargeToolResult, findInventory, insertCharges, setStock } from './ledger-store.ts';

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
const IdempotencyKey = Type.String({ minLength: 1, maxLength: 255, description: 'names one business intent' });
const IdempotencyHeaders = Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) });
/** A charge runs only under a key (a missing one is answered TG_IDEMPOTENCY_KEY_MISSING, not a schema error). */
const RequiredIdempotencyHeaders = Type.Object({ 'idempotency-key': IdempotencyKey });

/**
 * charge_account as a REST mutation: concurrent charges commit together (one transaction per
 * batch, a few statements however many it carries), under the same keys and with the same stored
 * result as the tool.
 */
export const chargeMutation: MutationDefinition<{ account: string; cents: number }, LedgerDatabase> = {
  operation: 'charge_account',
  effects: async (tx, calls) => {
    const made = await insertCharges(
      tx.db,
      calls.map((call) => ({ tenantId: call.tenantId, ...call.input, idempotencyKey: call.key, taskId: null })),
    );
    return made.map((charge, index) => {
      tx.outbox.add((calls[index] as { tenantId: string }).tenantId, chargedEvent(charge));
      return chargeToolResult(charge);
    });
  },
};

/**
 * The ledger as REST operations: a charge runs synchronously under its Idempotency-Key (the same
 * key space and result as the charge_account tool); a reservation is a task of reserve_inventory;
 * and the inventory as it is now, which a client refetches before deciding anything after a lost
 * response, and the operator's restock.
 */
export async function routes(app: FastifyInstance, services: RouteServices<LedgerDatabase>): Promise<void> {
  const security = [{ bearer: [] }];
  const charges = services.mutation(chargeMutation);

  app.post(
    '/v1/accounts/:account/charges',
    {
      schema: {
        summary:
          'Charge an account, once per Idempotency-Key (synchronous; the same ledger as the charge_account tool)',
        description:
          'The key claim, the charge, its outbox event and the stored result commit in one transaction. ' +
          '201 with the charge; a retry with the same key and body is 200 with the stored charge and ' +
          'Idempotent-Replayed: true; another body under the key is 422; a key still held by a running task is 409.',
        tags: ['ledger'],
        security,
        headers: RequiredIdempotencyHeaders,
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
      try {
        const { result, replayed } = await charges.run(request, { account, cents });
        const charge = (result as { structuredContent: { charge: unknown } }).structuredContent.charge;
        if (replayed) reply.header('idempotent-replayed', 'true');
        return reply.code(replayed ? 200 : 201).send(charge);
      } catch (error) {
        if ((error as { code?: unknown }).code === 'TG_IDEMPOTENCY_KEY_IN_PROGRESS') reply.header('retry-after', '1');
        throw error;
      }
    },
  );

  app.post(
    '/v1/inventory/:sku/reservations',
    {
      schema: {
        summary: 'Reserve stock (the reserve_inventory tool); with Idempotency-Key it is once-only and retryable',
        tags: ['ledger'],
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
      return services.submitTask(request, reply, { tool: 'reserve_inventory', arguments: { sku, quantity } });
    },
  );

  const inventory = async (tenantId: string, sku: string) => {
    const record = await findInventory(services.db, tenantId, sku);
    if (!record) throw services.problem('LEDGER_SKU_NOT_FOUND', `there is no SKU ${JSON.stringify(sku)}`);
    return record;
  };

  app.get(
    '/v1/inventory/:sku',
    {
      schema: {
        summary: 'The SKU as it is now (refetch after a lost stream before deciding anything)',
        tags: ['ledger'],
        security,
        params: Type.Object({ sku: Sku }),
        response: { 200: InventorySchema, ...problems(401, 404) },
      },
    },
    async (request) => inventory(services.tenantOf(request), (request.params as { sku: string }).sku),
  );

  app.put(
    '/v1/inventory/:sku',
    {
      schema: {
        summary: 'Set the available stock of a SKU (creating it)',
        tags: ['ledger'],
        security,
        params: Type.Object({ sku: Sku }),
        body: Type.Object(
          { available: Type.Integer({ minimum: 0, maximum: 2_000_000_000 }) },
          { additionalProperties: false },
        ),
        response: { 200: InventorySchema, ...problems(400, 401, 415) },
      },
    },
    async (request) => {
      const tenantId = services.tenantOf(request);
      const { sku } = request.params as { sku: string };
      await setStock(services.db, tenantId, sku, (request.body as { available: number }).available);
      return inventory(tenantId, sku);
    },
  );
}
