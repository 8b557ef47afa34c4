/**
 * The charge/inventory ledger: two mutations that commit their effects, their outbox events and
 * their stored idempotent results with the task.
 */
import { chargeAccount, reserveInventory } from './ledger-tools.ts';

export const name = 'ledger';
export const tools = [chargeAccount, reserveInventory];
export { chargeAccount, reserveInventory };
