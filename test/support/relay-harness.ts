import { createKysely, createPool, type Database, type OutboxEvent } from '@taskgate/db';
import { type RelayRole, type RelayRoleOptions, startRelayRole } from '@taskgate/relay';
import type { Kysely } from 'kysely';

export const RELAY_SECRET = 'test-relay-secret-0123456789';

export interface LogEntry {
  readonly level: 'info' | 'warn';
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

/** A logger with the relay's interface that keeps what it was told. */
export function recordingLogger(): { logs: LogEntry[]; logger: RelayRoleOptions['logger'] } {
  const logs: LogEntry[] = [];
  return {
    logs,
    logger: {
      info: (fields, msg) => logs.push({ level: 'info', fields, msg }),
      warn: (fields, msg) => logs.push({ level: 'warn', fields, msg }),
    },
  };
}

/**
 * The relay role in this process, as `taskgate start --role relay` wires it, with retries fast
 * enough for a test (1 ms doubling to 8 ms) and LISTEN/NOTIFY on, as with a real Postgres.
 */
export function startTestRelay(
  url: string,
  sinks: readonly string[],
  overrides: Partial<RelayRoleOptions> = {},
): Promise<RelayRole> {
  return startRelayRole({
    connectionString: url,
    logger: recordingLogger().logger,
    listenNotify: true,
    sinks,
    secret: RELAY_SECRET,
    maxAttempts: 10,
    leaseMs: 30_000,
    concurrency: 16,
    graceMs: 1_000,
    backoff: { baseMs: 1, capMs: 8 },
    ...overrides,
  });
}

export function testDb(url: string): Kysely<Database> {
  return createKysely(createPool(url, { applicationName: 'taskgate-relay-test', max: 6 }));
}

export function events(aggregates: readonly string[], aggregateType = 'order'): OutboxEvent[] {
  return aggregates.map((aggregateId, index) => ({
    tenantId: 'acme',
    aggregateType,
    aggregateId,
    eventType: `${aggregateType}.changed`,
    payload: { aggregateId, index },
  }));
}

// Shared with the task tests: a re-read until a predicate holds, and a barrier that forces an order.
export { type Barrier, barrier, waitForTask as eventually } from './task-platform.ts';

/** Every outbox row, in id order, as the tests look at them. */
export function outboxRows(db: Kysely<Database>) {
  return db
    .selectFrom('outbox')
    .select(['id', 'aggregate_id', 'attempts', 'last_error', 'leased_by', 'delivered_at', 'dead_at'])
    .orderBy('id')
    .execute();
}
