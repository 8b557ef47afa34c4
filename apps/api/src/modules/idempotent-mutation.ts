import {
  addOutboxEvents,
  claimCompletedKeys,
  type Database,
  executeOnce,
  type KeyRecord,
  keyFingerprint,
  type LedgerOutcome,
  rawQuery,
  type OutboxEvent as StoredOutboxEvent,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { Batcher } from '@taskgate/reliability';
import type { OutboxEvent, QueryResult } from '@taskgate/sdk';
import type { Kysely, Transaction } from 'kysely';
import { keyInProgress, keyMismatch } from '../ledger/key-errors.ts';

/** One call of a mutation: who, under which key, with what input. */
export interface MutationCall<Input> {
  readonly tenantId: string;
  readonly key: string;
  readonly input: Input;
}

/** The transaction a route's mutation writes its effects in, with the claims of its keys. */
export interface MutationTransaction<DB> {
  readonly db: Transaction<DB>;
  query<Row = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Events that commit with the effects; each names the tenant whose call made it. */
  readonly outbox: { add(tenantId: string, event: OutboxEvent): void };
}

export interface MutationDefinition<Input, DB> {
  /** The operation the keys are recorded under: a tool's name, when the tool does the same thing. */
  readonly operation: string;
  /**
   * The effects of a batch of calls, in that transaction: one result (JSON) per call, in order.
   * Written set-based, a batch costs one statement however many calls it carries. They run before
   * the keys are recorded, and are rolled back and run again without a call whose key turned out
   * to exist: they may only change the database (in `tx`), nothing outside it.
   */
  readonly effects: (tx: MutationTransaction<DB>, calls: readonly MutationCall<Input>[]) => Promise<unknown[]>;
}

export interface MutationOutcome {
  /** The stored result, re-read from JSON (a fresh copy every time). */
  readonly result: unknown;
  readonly replayed: boolean;
}

/**
 * A mutation a route commits itself, once per Idempotency-Key: the key claim, the effects, their
 * outbox events and the stored result commit in one transaction. Concurrent calls share one
 * transaction while a batch is in flight (group commit; idle, a call goes at once), and a key
 * that already existed — a retry, a concurrent twin, a key a task holds, a stale one — takes the
 * general path (executeOnce), which replays, refuses or takes over. Batching changes the number of
 * commits, not what commits with what.
 */
export class IdempotentMutation<Input, DB> {
  readonly #db: Kysely<Database>;
  readonly #definition: MutationDefinition<Input, DB>;
  readonly #retentionMs: number;
  readonly #batcher: Batcher<MutationCall<Input>, LedgerOutcome | null>;

  constructor(db: Kysely<Database>, definition: MutationDefinition<Input, DB>, options: { retentionMs: number }) {
    this.#db = db;
    this.#definition = definition;
    this.#retentionMs = options.retentionMs;
    this.#batcher = new Batcher((calls) => this.#runBatch(calls), {
      maxBatch: 64,
      // Two transactions at once, so Postgres and Node work on both cores instead of one batch at a time.
      lanes: 2,
      // Keys are claimed in one order by every batch, so two batches in flight (the two lanes, or
      // two API processes) cannot deadlock on each other's uncommitted keys.
      order: (a, b) => compare(a.tenantId, b.tenantId) || compare(a.key, b.key),
    });
  }

  /** Runs the call once per key, or replays; a mismatch is 422 and a key still held is 409. */
  async run(call: MutationCall<Input>): Promise<MutationOutcome> {
    const outcome = (await this.#batcher.submit(call)) ?? (await this.#single(call));
    switch (outcome.kind) {
      case 'executed':
        return { result: outcome.result, replayed: false };
      case 'replayed':
        return { result: outcome.result, replayed: true };
      case 'mismatch':
        throw keyMismatch(call.key, outcome.record.operation);
      case 'in-progress':
        throw keyInProgress(call.key, outcome.record.taskId, 1);
    }
  }

  #claim(call: MutationCall<Input>) {
    return {
      tenantId: call.tenantId,
      key: call.key,
      operation: this.#definition.operation,
      fingerprint: keyFingerprint(this.#definition.operation, call.input),
      retentionMs: this.#retentionMs,
    };
  }

  /**
   * One transaction for a batch: the effects run first, then one statement records every key as
   * completed with its result and adds the outbox events. If a key already existed, the
   * transaction rolls back (nothing of it happened) and the batch runs again without that call,
   * which takes the general path; keys rarely exist already (a retry of a lost response), so a
   * batch costs four round trips: BEGIN, the effects, keys and events, COMMIT.
   */
  async #runBatch(calls: readonly MutationCall<Input>[]): Promise<(LedgerOutcome | null)[]> {
    // A key repeated within the batch: only its first call runs here; the others wait for the
    // general path, which replays it (or refuses other arguments).
    const seen = new Set<string>();
    const first = calls.map((call) => {
      const id = idOf(call);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    let pending = calls.filter((_, index) => first[index]);
    const executed = new Map<string, LedgerOutcome>();
    // Each round either commits or removes at least one call, so it ends; under heavy contention
    // on one key the last rounds leave the rest to the general path.
    for (let round = 0; round < 3 && pending.length > 0; round++) {
      const conflicted = await this.#db
        .transaction()
        .execute(async (trx) => {
          const events: StoredOutboxEvent[] = [];
          const results = await this.#effects(trx, pending, events);
          const records = await claimCompletedKeys(
            trx,
            pending.map((call, index) => ({ ...this.#claim(call), result: results[index] })),
            events,
          );
          const taken = pending.filter((_, index) => records[index] === null);
          if (taken.length > 0) throw new KeysTaken(taken.map(idOf));
          pending.forEach((call, index) => {
            const record = records[index] as KeyRecord;
            executed.set(idOf(call), { kind: 'executed', result: record.result, record });
          });
          return new Set<string>();
        })
        .catch((error: unknown) => {
          if (error instanceof KeysTaken) return error.ids;
          throw error;
        });
      if (conflicted.size === 0) break;
      pending = pending.filter((call) => !conflicted.has(idOf(call)));
    }
    return calls.map((call, index) => (first[index] ? (executed.get(idOf(call)) ?? null) : null));
  }

  /** The general ledger path for one call: replay, mismatch, in progress, or a stale key taken over. */
  #single(call: MutationCall<Input>): Promise<LedgerOutcome> {
    return executeOnce(this.#db, this.#claim(call), async (trx) => {
      const events: StoredOutboxEvent[] = [];
      const [result] = await this.#effects(trx, [call], events);
      await addOutboxEvents(trx, events);
      return result;
    });
  }

  async #effects(
    trx: Transaction<Database>,
    calls: readonly MutationCall<Input>[],
    events: StoredOutboxEvent[],
  ): Promise<unknown[]> {
    const results = await this.#definition.effects(
      {
        db: trx as unknown as Transaction<DB>,
        query: rawQuery(trx as unknown as Kysely<unknown>),
        outbox: {
          add: (tenantId, event) => {
            events.push({
              tenantId,
              aggregateType: event.aggregateType,
              aggregateId: event.aggregateId,
              eventType: event.eventType,
              payload: event.payload,
            });
          },
        },
      },
      calls,
    );
    if (!Array.isArray(results) || results.length !== calls.length) {
      throw new TaskgateError(
        'TG_INTERNAL',
        `the effects of ${this.#definition.operation} returned ${Array.isArray(results) ? results.length : 'no'} results for ${calls.length} calls`,
      );
    }
    return results;
  }
}

/** Rolls a batch back: these keys existed already, so their calls take the general path. */
class KeysTaken extends Error {
  readonly ids: Set<string>;
  constructor(ids: readonly string[]) {
    super(`${ids.length} idempotency key(s) existed already`);
    this.ids = new Set(ids);
  }
}

function idOf(call: { tenantId: string; key: string }): string {
  return `${call.tenantId}\u0000${call.key}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
