import type pg from 'pg';
import type { ClientRecord } from './client-record.ts';
import { INVARIANTS, type InvariantResult, TERMINAL_SQL, verdict } from './invariant.ts';

const OUTAGE_MESSAGES =
  'too many clients|Connection terminated|ECONNREFUSED|ECONNRESET|terminating connection|the database system is|' +
  'not queryable|timeout exceeded when trying to connect|Connection ended unexpectedly';

interface OpenTask {
  id: string;
  tenant_id: string;
  tool: string;
  mode: string;
  status: string;
  attempt: number;
  worker_id: string | null;
  label: string | null;
  created_at: Date;
  started_at: Date | null;
  heartbeat_at: Date | null;
  cancel_requested_at: Date | null;
  history: string | null;
}

/** Non-terminal tasks with their history, for the evidence. */
export async function openTasks(db: pg.Client): Promise<OpenTask[]> {
  const { rows } = await db.query<OpenTask>(`
    SELECT t.id, t.tenant_id, t.tool, t.mode, t.status, t.attempt, t.worker_id, t.arguments->>'label' AS label,
           t.created_at, t.started_at, t.heartbeat_at, t.cancel_requested_at,
           (SELECT string_agg(e.type || coalesce('#' || e.attempt, '') || coalesce('(' || e.reason || ')', '')
                              || '@' || to_char(e.created_at, 'HH24:MI:SS.MS'), ' → ' ORDER BY e.id)
              FROM task_events e WHERE e.task_id = t.id) AS history
    FROM tasks t WHERE t.status NOT IN ${TERMINAL_SQL} ORDER BY t.created_at`);
  return rows;
}

export function describeTask(task: OpenTask): string {
  return (
    `${task.id} ${task.tenant_id} ${task.tool}${task.label ? ` [${task.label}]` : ''} mode=${task.mode} ` +
    `status=${task.status} attempt=${task.attempt} worker=${task.worker_id ?? '-'} ` +
    `created=${iso(task.created_at)} started=${iso(task.started_at)} heartbeat=${iso(task.heartbeat_at)}` +
    `${task.cancel_requested_at ? ` cancel_requested=${iso(task.cancel_requested_at)}` : ''}; history: ${task.history ?? '(none)'}`
  );
}

function iso(date: Date | null): string {
  return date ? date.toISOString().slice(11, 23) : '-';
}

export interface TaskCounts {
  tasks: number;
  nonTerminal: number;
  /** Task ids given to a client that are not in the database. */
  lostTasks: number;
}

/** When Postgres was down past slow_compute's idle clock (FaultStats.outageWindows). */
export interface OutageWindow {
  readonly from: Date;
  readonly to: Date;
}

/**
 * slow_compute reports progress every 50 ms while its handler runs, and progress resets the idle
 * clock whether or not its write lands: the idle clock can fail it only once the handler has
 * returned (the defect this checks) or when its worker's event loop stalls for 5 s. Its counts: the
 * slow_compute tasks whose handler returned while Postgres was down, so that their completion
 * waited out the outage while their clocks ran out, and how those ended.
 */
async function returnedDuringOutages(db: pg.Client, outages: readonly OutageWindow[]): Promise<InvariantResult> {
  const { rows: timedOut } = await db.query<{
    id: string;
    label: string | null;
    attempt: number;
    message: string;
    progress: string | null;
    finished_at: Date;
  }>(
    `SELECT id, arguments->>'label' AS label, attempt, error->>'message' AS message,
            progress_value || '/' || progress_total AS progress, finished_at
     FROM tasks WHERE tool = 'slow_compute' AND status = 'failed' AND error->'data'->>'clock' = 'idle'
     ORDER BY finished_at`,
  );
  // Running when Postgres stopped (started before, ended after it was back), and of those the
  // ones whose handler was due to return before it was back (a first attempt's start + seconds).
  const { rows: waited } = await db.query<{ status: string; running: string; returned: string }>(
    `SELECT t.status, count(*) AS running,
            count(*) FILTER (WHERE t.attempt = 1
              AND t.started_at + (t.arguments->>'seconds')::float8 * interval '1 second' < o.to_at) AS returned
     FROM tasks t
     JOIN jsonb_to_recordset($1::jsonb) AS o(from_at timestamptz, to_at timestamptz)
       ON t.started_at < o.from_at AND t.finished_at > o.to_at
     WHERE t.tool = 'slow_compute'
     GROUP BY t.status ORDER BY t.status`,
    [JSON.stringify(outages.map((outage) => ({ from_at: outage.from, to_at: outage.to })))],
  );
  const outcomes =
    waited.map((row) => `${row.returned} ${row.status} (of ${row.running} running at the stop)`).join(', ') ||
    'none was running';
  return verdict(
    INVARIANTS.returnedNotTimedOut,
    timedOut.map(
      (task) =>
        `${task.id} slow_compute${task.label ? ` [${task.label}]` : ''} attempt ${task.attempt} failed at ` +
        `${task.finished_at.toISOString()} showing ${task.progress ?? 'no progress'}: ${task.message}`,
    ),
    `${timedOut.length} slow_compute task(s) failed by the idle clock; over ${outages.length} outage(s) past ` +
      `that clock, the tasks whose handler returned while Postgres was down ended: ${outcomes}`,
  );
}

export async function taskInvariants(
  db: pg.Client,
  record: ClientRecord,
  outages: readonly OutageWindow[],
): Promise<{ results: InvariantResult[]; counts: TaskCounts }> {
  const open = await openTasks(db);
  const requests = open.filter((task) => task.mode === 'request');
  const { rows: total } = await db.query<{ count: string }>('SELECT count(*) FROM tasks');

  const ids = [...record.givenTasks.keys()];
  const { rows: found } = await db.query<{ id: string; status: string }>(
    'SELECT id, status FROM tasks WHERE id = ANY($1::uuid[])',
    [ids],
  );
  const status = new Map(found.map((row) => [row.id, row.status]));
  const lost = ids
    .filter((id) => !status.has(id))
    .map((id) => {
      const given = record.givenTasks.get(id);
      return `${id}: given to a ${given?.source} client of ${given?.tenant} at ${given?.atMs} ms, not in tasks`;
    });
  const unfinished = ids
    .filter((id) => status.has(id) && !['completed', 'failed', 'cancelled'].includes(status.get(id) as string))
    .map((id) => `${id}: given to a ${record.givenTasks.get(id)?.source} client, still ${status.get(id)}`);

  const disagreements = [...record.conflicts];
  for (const [id, seen] of record.seenTerminal) {
    const actual = status.get(id);
    if (actual !== undefined && actual !== seen.status) {
      disagreements.push(`${id}: ${seen.source} was told ${seen.status}, the database says ${actual}`);
    }
  }

  // What isDatabaseUnavailable (packages/db) calls an outage: a task that failed with one of these
  // turned a passing infrastructure error into its terminal state instead of being run again.
  const { rows: outageFailures } = await db.query<{
    id: string;
    tool: string;
    label: string | null;
    attempt: number;
    message: string;
    finished_at: Date;
  }>(
    `SELECT id, tool, arguments->>'label' AS label, attempt, error->>'message' AS message, finished_at
     FROM tasks WHERE status = 'failed' AND error->>'message' ~* $1 ORDER BY finished_at`,
    [OUTAGE_MESSAGES],
  );

  const counts = { tasks: Number(total[0]?.count ?? 0), nonTerminal: open.length, lostTasks: lost.length };
  const results = [
    verdict(
      INVARIANTS.allTerminal,
      open.map(describeTask),
      `${open.length} of ${total[0]?.count} task(s) not terminal`,
    ),
    verdict(
      INVARIANTS.requestModeTerminal,
      requests.map(describeTask),
      `${requests.length} request-mode task(s) not terminal`,
    ),
    verdict(
      INVARIANTS.noTaskLost,
      [...lost, ...unfinished],
      `${ids.length} task id(s) given to clients: ${lost.length} missing, ${unfinished.length} not terminal`,
    ),
    verdict(
      INVARIANTS.noOutageFailures,
      outageFailures.map(
        (task) =>
          `${task.id} ${task.tool}${task.label ? ` [${task.label}]` : ''} attempt ${task.attempt} failed at ` +
          `${task.finished_at.toISOString()}: ${task.message}`,
      ),
      `${outageFailures.length} task(s) failed with a connection error`,
    ),
    await returnedDuringOutages(db, outages),
    verdict(
      INVARIANTS.clientsAgree,
      disagreements,
      `${record.seenTerminal.size} terminal status(es) seen by clients, ${disagreements.length} disagree`,
    ),
  ];
  return { results, counts };
}
