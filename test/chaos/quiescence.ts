import type { PostgresCluster } from '../support/postgres-cluster.ts';
import type { Timeline } from './timeline.ts';
import type { Workload } from './workload.ts';
import { sleep } from './workload-context.ts';

async function count(cluster: PostgresCluster, sql: string): Promise<number | null> {
  const client = cluster.client();
  try {
    await client.connect();
    const { rows } = await client.query<{ count: string }>(sql);
    return Number(rows[0]?.count ?? 0);
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * After the fault phase: no new operations, the ones under way finish, and every task must reach
 * a terminal state. Resolves with how long that took, or null if the bound passed first (the
 * clients still waiting are then stopped).
 */
export async function quiesce(
  cluster: PostgresCluster,
  workload: Workload,
  boundMs: number,
  timeline: Timeline,
): Promise<number | null> {
  const started = performance.now();
  let clientsDone = false;
  void workload.wind(boundMs).then((done) => {
    clientsDone = done;
  });
  let last = -1;
  while (performance.now() - started < boundMs) {
    const open = await count(
      cluster,
      "SELECT count(*) FROM tasks WHERE status NOT IN ('completed', 'failed', 'cancelled')",
    );
    if (open !== last && open !== null) {
      timeline.record(`quiescence: ${open} task(s) not terminal${clientsDone ? '' : ', clients still finishing'}`);
      last = open;
    }
    if (open === 0 && clientsDone) {
      const ms = Math.round(performance.now() - started);
      timeline.record(`quiescent after ${ms} ms`);
      return ms;
    }
    await sleep(500);
  }
  timeline.record(`quiescence bound (${boundMs} ms) passed: ${last} task(s) still not terminal`);
  await workload.stop();
  return null;
}

/** Waits until no outbox row is pending (delivered or dead-lettered), or the bound passes. */
export async function drainOutbox(
  cluster: PostgresCluster,
  boundMs: number,
  timeline: Timeline,
): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < boundMs) {
    const pending = await count(cluster, 'SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL');
    if (pending === 0) {
      const ms = Math.round(performance.now() - started);
      timeline.record(`outbox drained after ${ms} ms`);
      return ms;
    }
    await sleep(500);
  }
  timeline.record(`outbox drain bound (${boundMs} ms) passed`);
  return null;
}
