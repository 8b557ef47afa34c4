/**
 * The charge/inventory ledger, a tool module: two mutations that commit their effects, their
 * outbox events and their stored idempotent results with the task; its own tables (migrations/),
 * its REST routes and its error codes.
 */
import { chargeAccount, reserveInventory } from './ledger-tools.ts';

export const name = 'ledger';
export const tools = [chargeAccount, reserveInventory];
export const migrations = new URL('./migrations/', import.meta.url);
export { routes } from './ledger-routes.ts';
/** The codes its routes answer with (problem+json), besides Taskgate's own. */
export const errors = {
  LEDGER_SKU_NOT_FOUND: { title: 'SKU not found', httpStatus: 404 },
};
export { chargeAccount, reserveInventory };
