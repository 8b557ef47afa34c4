import type pg from 'pg';
import type { WebhookReceiver } from '../support/webhook-receiver.ts';
import type { ClientRecord } from './client-record.ts';
import type { Unexpected5xx } from './http-client.ts';
import { INVARIANTS, type InvariantResult, verdict } from './invariant.ts';
import { type LedgerCounts, ledgerInvariants } from './ledger-invariants.ts';
import { type OutageWindow, type TaskCounts, taskInvariants } from './task-invariants.ts';
import type { ExitRecord } from './taskgate-process.ts';
import type { Tenant } from './workload-context.ts';

export interface DatabaseChecks {
  readonly results: InvariantResult[];
  readonly counts: LedgerCounts & TaskCounts & { outboxDead: number };
}

/** Everything decided from SQL, after quiescence and the outbox drain. */
export async function databaseInvariants(
  db: pg.Client,
  record: ClientRecord,
  tenants: readonly Tenant[],
  receiver: WebhookReceiver,
  outages: readonly OutageWindow[],
): Promise<DatabaseChecks> {
  const tasks = await taskInvariants(db, record, outages);
  const ledger = await ledgerInvariants(db, record, tenants);

  const { rows: pending } = await db.query<{
    id: string;
    aggregate: string;
    attempts: number;
    last_error: string | null;
    leased_by: string | null;
    leased_until: Date | null;
    available_at: Date;
  }>(
    `SELECT id, aggregate_type || '/' || aggregate_id || ' ' || event_type AS aggregate, attempts, last_error,
            leased_by, leased_until, available_at
     FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL ORDER BY id`,
  );
  const { rows: delivered } = await db.query<{ id: string }>('SELECT id FROM outbox WHERE delivered_at IS NOT NULL');
  const { rows: dead } = await db.query<{ count: string }>('SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL');
  const applied = new Set(receiver.applied);
  const unseen = delivered.filter((row) => !applied.has(String(row.id)));
  const badSignatures = receiver.received.filter((delivery) => !delivery.signatureValid);
  const outbox = verdict(
    INVARIANTS.outboxSettled,
    [
      ...pending.map(
        (row) =>
          `outbox ${row.id} ${row.aggregate}: pending, attempts=${row.attempts} leased_by=${row.leased_by ?? '-'} ` +
          `leased_until=${row.leased_until?.toISOString() ?? '-'} available_at=${row.available_at.toISOString()} ` +
          `last_error=${row.last_error ?? '-'}`,
      ),
      ...unseen.map((row) => `outbox ${row.id}: delivered_at set, but the webhook receiver never accepted it`),
      ...badSignatures.map((delivery) => `delivery of outbox ${delivery.id} had an invalid Taskgate-Signature`),
    ],
    `${delivered.length} delivered, ${dead[0]?.count} dead-lettered, ${pending.length} pending; ` +
      `${receiver.received.length} request(s) received, ${unseen.length} delivered id(s) unseen`,
  );

  // The transactional outbox: an effect and its event commit together, so each row has one event.
  const { rows: unannounced } = await db.query<{ kind: string; id: string; events: string }>(
    `SELECT 'charge' AS kind, c.id, (SELECT count(*) FROM outbox o
        WHERE o.event_type = 'account.charged' AND o.payload->>'chargeId' = c.id::text) AS events
     FROM account_charges c
     UNION ALL
     SELECT 'reservation', r.id, (SELECT count(*) FROM outbox o
        WHERE o.event_type = 'inventory.reserved' AND o.payload->>'reservationId' = r.id::text)
     FROM inventory_reservations r`,
  );
  const misannounced = unannounced.filter((row) => Number(row.events) !== 1);
  const announced = verdict(
    INVARIANTS.effectsAnnounced,
    misannounced.map((row) => `${row.kind} ${row.id}: ${row.events} outbox event(s)`),
    `${unannounced.length} effect row(s), ${misannounced.length} without exactly one event`,
  );

  return {
    results: [...tasks.results, ...ledger.results, announced, outbox],
    counts: { ...ledger.counts, ...tasks.counts, outboxDead: Number(dead[0]?.count ?? 0) },
  };
}

/** What is decided outside the database: the processes, the HTTP answers, the replays. */
export function processInvariants(
  crashes: readonly ExitRecord[],
  unexpected5xx: readonly Unexpected5xx[],
  record: ClientRecord,
): InvariantResult[] {
  return [
    verdict(
      INVARIANTS.noCrash,
      crashes.map(
        (exit) =>
          `${exit.process} pid ${exit.pid} exited on its own at ${exit.atMs} ms (code ${exit.code}, signal ${exit.signal}, ${exit.phase}); last lines:\n      ${exit.lastLines.slice(-8).join('\n      ')}`,
      ),
      `${crashes.length} unexpected exit(s)`,
    ),
    verdict(
      INVARIANTS.no5xx,
      unexpected5xx.map(
        (r) => `${r.atMs} ms ${r.method} ${r.url}${r.mcpMethod ? ` (${r.mcpMethod})` : ''} → ${r.status} ${r.body}`,
      ),
      `${unexpected5xx.length} response(s) with another 5xx${breakdown(unexpected5xx)}`,
    ),
    verdict(INVARIANTS.replaysAgree, record.replayMismatches, `${record.replayMismatches.length} mismatch(es)`),
  ];
}

/** "…: 12 POST /mcp tasks/get, 3 POST /v1/inventory/:id/reservations" */
function breakdown(responses: readonly Unexpected5xx[]): string {
  const counts = new Map<string, number>();
  for (const response of responses) {
    const route = new URL(response.url).pathname.replace(
      /\/(?:[0-9a-f-]{36}|acct-\d+|hot|sku-[a-z]+)(?=\/|$)/g,
      '/:id',
    );
    const key = `${response.status} ${response.method} ${route}${response.mcpMethod ? ` ${response.mcpMethod}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const parts = [...counts].sort((a, b) => b[1] - a[1]).map(([key, count]) => `${count} × ${key}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}
