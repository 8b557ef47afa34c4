import { defineTool } from '@taskgate/sdk';
import type { LedgerDatabase } from './ledger-schema.ts';
import { chargedEvent, chargeToolResult, insertCharges, reservedEvent, reserveStock } from './ledger-store.ts';

/** The key an MCP call carries in its arguments (REST may send it as the Idempotency-Key header). */
const IDEMPOTENCY_KEY_ARGUMENT = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description: 'Names this business intent: a retry with the same key and arguments replays the first result',
} as const;

export const chargeAccount = defineTool<{ account: string; cents: number; idempotencyKey?: string }, LedgerDatabase>({
  name: 'charge_account',
  title: 'Charge account',
  description:
    'Charges an account once per idempotency key: the charge, its outbox event and the stored result commit together.',
  inputSchema: {
    type: 'object',
    properties: {
      account: { type: 'string', minLength: 1, maxLength: 128 },
      cents: { type: 'integer', minimum: 1, maximum: 100_000_000 },
      idempotencyKey: IDEMPOTENCY_KEY_ARGUMENT,
    },
    required: ['account', 'cents'],
    additionalProperties: false,
  },
  annotations: { title: 'Charge account', readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  retry: 'conditional',
  // Money: a call without a key is refused rather than run without a way to deduplicate it.
  idempotencyKey: 'required',
  // One transaction: a call still running after a minute is stuck, not slow (taskgate review).
  timeouts: { maxMs: 60_000 },
  async handler({ account, cents }, ctx) {
    await ctx.checkpoint();
    return ctx.commit(async ({ db, outbox }) => {
      const [charge] = await insertCharges(db, [
        { tenantId: ctx.tenant, account, cents, idempotencyKey: ctx.idempotencyKey, taskId: ctx.taskId },
      ]);
      if (!charge) throw new Error('the charge insert returned no row');
      outbox.add(chargedEvent(charge));
      return chargeToolResult(charge);
    });
  },
});

export const reserveInventory = defineTool<{ sku: string; quantity: number; idempotencyKey?: string }, LedgerDatabase>({
  name: 'reserve_inventory',
  title: 'Reserve inventory',
  description:
    'Reserves stock of a SKU once per idempotency key. Without a key the call runs, but is never retried automatically.',
  inputSchema: {
    type: 'object',
    properties: {
      sku: { type: 'string', minLength: 1, maxLength: 128 },
      quantity: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      idempotencyKey: IDEMPOTENCY_KEY_ARGUMENT,
    },
    required: ['sku', 'quantity'],
    additionalProperties: false,
  },
  annotations: { title: 'Reserve inventory', readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  retry: 'conditional',
  idempotencyKey: 'optional',
  timeouts: { maxMs: 60_000 },
  async handler({ sku, quantity }, ctx) {
    await ctx.checkpoint();
    return ctx.commit(async ({ db, outbox }) => {
      const outcome = await reserveStock(db, {
        tenantId: ctx.tenant,
        sku,
        quantity,
        idempotencyKey: ctx.idempotencyKey,
        taskId: ctx.taskId,
      });
      if (!outcome.ok) {
        // A business refusal is an outcome too: stored under the key, so a retry gets the same answer.
        const text =
          outcome.reason === 'unknown-sku'
            ? `there is no SKU ${sku}`
            : `cannot reserve ${quantity} of ${sku}: ${outcome.available} available`;
        return {
          content: [{ type: 'text', text }],
          structuredContent: { reason: outcome.reason, sku, quantity, available: outcome.available },
          isError: true,
        };
      }
      outbox.add(reservedEvent(outcome.reservation));
      return {
        content: [
          { type: 'text', text: `reserved ${quantity} of ${sku} (reservation ${outcome.reservation.reservationId})` },
        ],
        structuredContent: { reservation: outcome.reservation },
      };
    });
  },
});
