export type Terminal = 'completed' | 'failed' | 'cancelled';
export const TERMINAL: readonly string[] = ['completed', 'failed', 'cancelled'];

export interface KeyedCall {
  readonly tenant: string;
  readonly key: string;
  readonly kind: 'charge' | 'reservation';
  /**
   * pending: no definitive answer yet; succeeded: the effect's id was returned; refused: a committed
   * "no" stored under the key (insufficient stock); rejected: a 4xx for a call that was always the
   * same and valid (never expected); abandoned: the run ended before an answer.
   */
  state: 'pending' | 'succeeded' | 'refused' | 'rejected' | 'abandoned';
  /** chargeId or reservationId the client was given. */
  effectId: string | null;
  attempts: number;
  detail: string;
}

/**
 * What the clients were told, to hold against the database at the end: every task id handed to a
 * client, every terminal status a client saw, and every keyed mutation with its definitive answer.
 */
export class ClientRecord {
  /** task id → tenant and the operation that was given it. */
  readonly givenTasks = new Map<string, { tenant: string; source: string; atMs: number }>();
  /** task id → the terminal status a client saw, first sighting. */
  readonly seenTerminal = new Map<string, { status: string; source: string }>();
  /** A task seen ending twice with different statuses (terminal states never change). */
  readonly conflicts: string[] = [];
  readonly keyed = new Map<string, KeyedCall>();
  /** A replay under a key that answered something other than the first answer. */
  readonly replayMismatches: string[] = [];
  readonly counts = new Map<string, number>();

  given(taskId: string, tenant: string, source: string, atMs: number): void {
    if (!this.givenTasks.has(taskId)) this.givenTasks.set(taskId, { tenant, source, atMs });
  }

  sawTerminal(taskId: string, status: string, source: string): void {
    const first = this.seenTerminal.get(taskId);
    if (!first) this.seenTerminal.set(taskId, { status, source });
    else if (first.status !== status) {
      this.conflicts.push(`${taskId}: ${first.source} saw ${first.status}, ${source} saw ${status}`);
    }
  }

  keyedCall(tenant: string, key: string, kind: KeyedCall['kind']): KeyedCall {
    const call: KeyedCall = { tenant, key, kind, state: 'pending', effectId: null, attempts: 0, detail: '' };
    this.keyed.set(`${tenant}/${key}`, call);
    return call;
  }

  count(name: string, by = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }
}
