import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/free-port.ts';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { Canary } from './canary.ts';
import type { Cleanup } from './cleanup.ts';
import { ClientRecord } from './client-record.ts';
import { FaultInjector } from './fault-injector.ts';
import { Fleet } from './fleet.ts';
import { HttpClient } from './http-client.ts';
import { databaseInvariants, processInvariants } from './invariants.ts';
import type { ChaosOptions } from './options.ts';
import { drainOutbox, quiesce } from './quiescence.ts';
import type { ChaosResult } from './report.ts';
import { Rng } from './rng.ts';
import { buildSchedule } from './schedule.ts';
import { REPO_ROOT } from './taskgate-process.ts';
import { formatOffset, Timeline } from './timeline.ts';
import { Workload } from './workload.ts';
import type { Tenant } from './workload-context.ts';

const run = promisify(execFile);
const RELAY_SECRET = 'chaos-relay-secret-0123456789';
/** Every process's pools fit several times over, and the full-server phase has room to fill. */
const MAX_CONNECTIONS = 300;
const STOCK = { hot: 600, 'sku-a': 400, 'sku-low': 25 };
const TENANTS: readonly Tenant[] = [
  { name: 'alpha', token: 'chaos-token-alpha-0123456789', stock: STOCK },
  { name: 'bravo', token: 'chaos-token-bravo-0123456789', stock: STOCK },
];

/**
 * One chaos run: its own Postgres, migrated; 2 APIs, 3 workers and 2 relays; a webhook receiver;
 * the mixed workload; the seeded fault schedule; then quiescence, the outbox drain and the
 * invariants. Everything it starts is registered with `cleanup` before it starts.
 */
export async function runChaos(options: ChaosOptions, cleanup: Cleanup): Promise<ChaosResult> {
  const timeline = new Timeline(options.verbose);
  const startedAt = new Date().toISOString();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskgate-chaos-'));
  cleanup.add('temp dir', () => fs.rmSync(root, { recursive: true, force: true }));
  const logDir = path.join(root, 'logs');
  fs.mkdirSync(logDir);
  if (options.keepLogsDir) cleanup.add('keep logs', () => keepLogs(root, logDir, options.keepLogsDir as string));

  const cluster = new PostgresCluster(root, MAX_CONNECTIONS);
  await cluster.init();
  cleanup.add('postgres', () => cluster.stopNowSync());
  await cluster.start();
  await cluster.createDatabase('taskgate');
  await migrate(cluster.url());
  await seedStock(cluster);
  timeline.record(`Postgres 15 on port ${cluster.port} (max_connections ${MAX_CONNECTIONS}), migrated`);

  const sinkRng = new Rng(options.seed ^ 0x5bd1e995);
  // A sink that fails now and then, so deliveries are retried and some rows wait out backoff.
  const receiver = await new WebhookReceiver(RELAY_SECRET, () =>
    sinkRng.chance(0.03) ? { status: 500, body: 'chaos sink refused' } : { status: 200 },
  ).start();
  cleanup.add('webhook receiver', () => void receiver.stop());

  const fleet = new Fleet(
    {
      databaseUrl: cluster.url(),
      tokens: TENANTS.map((tenant) => `${tenant.token}:${tenant.name}`).join(','),
      apiPorts: [await freePort(), await freePort()],
      sinkUrl: receiver.url,
      relaySecret: RELAY_SECRET,
      maxCallMs: options.maxCallMs,
      logDir,
    },
    timeline,
  );
  cleanup.add('taskgate processes', () => fleet.killAllSync());
  await fleet.startAll();
  timeline.record(`7 processes up; APIs at ${fleet.apiUrls.join(', ')}`);

  const http = new HttpClient(() => timeline.now());
  const record = new ClientRecord();
  const canary = new Canary(http, record, fleet.apiUrls, TENANTS[0] as Tenant, () => timeline.now());
  const injector = new FaultInjector(cluster, fleet, canary, timeline);
  const schedule = buildSchedule(new Rng(options.seed), options.durationMs, options.intensity);
  timeline.record(`schedule: ${schedule.length} fault(s) from seed ${options.seed}`);

  const workload = new Workload({
    http,
    record,
    apiUrls: fleet.apiUrls,
    tenants: TENANTS,
    waitBoundMs: options.maxCallMs + 30_000,
    maxCallMs: options.maxCallMs,
    now: () => timeline.now(),
  });
  workload.start(options.clients, new Rng(options.seed ^ 0x9e3779b9));
  // Without --verbose a long run would be silent for minutes: one line every 30 s.
  const progress = options.verbose
    ? undefined
    : setInterval(() => {
        const { faultsRun, postgresRestarts } = injector.stats;
        process.stdout.write(
          `${formatOffset(timeline.now())} ${faultsRun}/${schedule.length} faults, ` +
            `${fleet.kills.SIGKILL + fleet.kills.SIGTERM} kills, ${postgresRestarts} Postgres restarts, ` +
            `${record.givenTasks.size} task ids given, ${fleet.crashes().length} crashes\n`,
        );
      }, 30_000);
  await injector.run(schedule, options.durationMs);
  clearInterval(progress);
  timeline.record('fault phase over: no more faults');
  await injector.releaseHogs();
  if (!(await fleet.waitAllRunning(60_000))) timeline.record('not every process is up 60 s after the fault phase');

  const quiescenceMs = await quiesce(cluster, workload, options.quiesceBoundMs, timeline);
  await workload.stop();
  const drainMs = await drainOutbox(cluster, options.drainBoundMs, timeline);

  const admin = cluster.client();
  await admin.connect();
  const checks = await databaseInvariants(admin, record, TENANTS, receiver, injector.stats.outageWindows);
  const { rows: statuses } = await admin.query<{ status: string; count: string }>(
    'SELECT status, count(*) FROM tasks GROUP BY status ORDER BY status',
  );
  // Each workload operation tags its calls (label or name "<origin>-<n>"): outcomes per origin.
  const { rows: origins } = await admin.query<{ origin: string; status: string; count: string }>(
    `SELECT coalesce(substring(coalesce(arguments->>'label', arguments->>'name') from '^(.*)-[0-9]+$') || ' ' || tool, tool)
              AS origin, status, count(*)
     FROM tasks GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  const { rows: failures } = await admin.query<{ origin: string; reason: string; count: string; ids: string[] }>(
    `SELECT tool AS origin, coalesce(error->>'message', status_message, '(no error)') AS reason, count(*),
            (array_agg(id::text ORDER BY created_at))[1:2] AS ids
     FROM tasks WHERE status = 'failed' GROUP BY 1, 2 ORDER BY 3 DESC`,
  );
  await admin.end();
  const outcomes: Record<string, Record<string, number>> = {};
  for (const row of origins) outcomes[row.origin] = { ...outcomes[row.origin], [row.status]: Number(row.count) };

  await fleet.stopAll();
  timeline.record('every process stopped (SIGTERM)');
  const invariants = [...checks.results, ...processInvariants(fleet.crashes(), http.unexpected5xx, record)];
  await receiver.stop();
  await cluster.fastStop();

  return {
    seed: options.seed,
    durationMs: options.durationMs,
    intensity: options.intensity,
    clients: options.clients,
    maxCallMs: options.maxCallMs,
    startedAt,
    tasks: checks.counts.tasks,
    tasksByStatus: Object.fromEntries(statuses.map((row) => [row.status, Number(row.count)])),
    outcomesByOrigin: outcomes,
    failureReasons: failures.map((row) => `${row.count} × ${row.origin}: ${row.reason} (e.g. ${row.ids.join(', ')})`),
    kills: { ...fleet.kills },
    rollingRestarts: fleet.rollingRestarts,
    postgresRestarts: injector.stats.postgresRestarts,
    postgresOutages: injector.stats.postgresOutages,
    backendStorms: injector.stats.backendStorms,
    backendsTerminated: injector.stats.backendsTerminated,
    poolExhaustions: injector.stats.poolExhaustions,
    rowLocks: injector.stats.rowLocks,
    startRefusals: fleet.startRefusals(),
    uncleanStops: fleet
      .uncleanStops()
      .map(
        (exit) =>
          `${exit.process} pid ${exit.pid} exited ${exit.code} after SIGTERM at ${exit.atMs} ms: ${exit.lastLines.at(-2) ?? ''}`,
      ),
    lost: checks.counts.lostTasks + checks.counts.lost,
    duplicated: checks.counts.duplicated,
    nonTerminal: checks.counts.nonTerminal,
    outboxDead: checks.counts.outboxDead,
    quiescenceMs,
    drainMs,
    recoveryMs: injector.stats.recoveryMs,
    recoveryTimeouts: injector.stats.recoveryTimeouts,
    clientCounts: Object.fromEntries([...record.counts].sort()),
    httpStatuses: Object.fromEntries([...http.statusCounts].sort()),
    invariants,
    timeline: timeline.entries,
    passed: invariants.every((invariant) => invariant.pass),
  };
}

async function migrate(databaseUrl: string): Promise<void> {
  try {
    await run(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/taskgate.js'), 'migrate', 'up'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
      timeout: 120_000,
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`taskgate migrate up failed: ${stderr || stdout || String(error)}`);
  }
}

/** The stock the conservation invariant starts from; set once, never restocked during the run. */
async function seedStock(cluster: PostgresCluster): Promise<void> {
  const client = cluster.client();
  await client.connect();
  try {
    for (const tenant of TENANTS) {
      for (const [sku, available] of Object.entries(tenant.stock)) {
        await client.query('INSERT INTO inventory (tenant_id, sku, available) VALUES ($1, $2, $3)', [
          tenant.name,
          sku,
          available,
        ]);
      }
    }
  } finally {
    await client.end();
  }
}

function keepLogs(root: string, logDir: string, target: string): void {
  fs.mkdirSync(target, { recursive: true });
  for (const file of fs.readdirSync(logDir)) fs.copyFileSync(path.join(logDir, file), path.join(target, file));
  const pgLog = path.join(root, 'postgres.log');
  if (fs.existsSync(pgLog)) fs.copyFileSync(pgLog, path.join(target, 'postgres.log'));
}
