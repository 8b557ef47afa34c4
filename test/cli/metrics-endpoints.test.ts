import { randomInt } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { countOf, parseScrape, sampleValue } from '../support/metrics.ts';
import { waitForTask } from '../support/task-platform.ts';

// /metrics on every role, as an operator deploys them: the API on its own port, a worker and a
// relay running alone on TASKGATE_HEALTH_PORT. Each scrape is parsed by a Prometheus text parser.
const database = useTestDatabase();
const running: RunningProcess[] = [];
afterAll(() => {
  for (const process of running) process.kill();
});

function start(roles: string, env: Record<string, string> = {}): RunningProcess {
  const taskgate = startCli(['start', '--role', roles], cleanEnv({ DATABASE_URL: database.url, ...env }));
  running.push(taskgate);
  return taskgate;
}

async function urlOf(process: RunningProcess, message: string): Promise<string> {
  const line = await process.waitForLog((entry) => entry.msg === message);
  return line.url as string;
}

async function scrapeOf(base: string) {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseScrape(await response.text());
}

describe('/metrics', () => {
  it('is served by the API, and by a worker and a relay alone on their health port', async () => {
    const api = start('api', { PORT: '0' });
    const worker = start('worker', { TASKGATE_HEALTH_PORT: '0' });
    const relay = start('relay', { TASKGATE_HEALTH_PORT: '0' });
    const apiUrl = await urlOf(api, 'taskgate started');
    const workerUrl = await urlOf(worker, 'health probe listening');
    const relayUrl = await urlOf(relay, 'health probe listening');
    await worker.waitForLog((entry) => entry.msg === 'taskgate started');

    // A process tree, cancelled over REST once it runs.
    const seconds = randomInt(100, 599) + randomInt(1, 9_999) / 10_000;
    const created = await fetch(`${apiUrl}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'sleep_subprocess', arguments: { seconds } }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const task = async () => (await (await fetch(`${apiUrl}/v1/tasks/${id}`)).json()) as Record<string, unknown>;
    await waitForTask(task, (current) => current.progress !== null && current.progress !== undefined);
    // While it runs the database-wide gauges count it, on every process that reads them.
    const during = await scrapeOf(apiUrl);
    expect(sampleValue(during, 'taskgate_tasks', { state: 'working', tool: 'sleep_subprocess' })).toBe(1);
    expect(sampleValue(during, 'taskgate_metrics_database_up')).toBe(1);
    expect(sampleValue(await scrapeOf(relayUrl), 'taskgate_tasks', { tool: 'sleep_subprocess' })).toBe(1);

    const cancel = await fetch(`${apiUrl}/v1/tasks/${id}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cancel.status).toBe(202);
    await waitForTask(task, (current) => current.status === 'cancelled');

    // The worker's own figures: the attempt, its pickup, the cancel's latency by signal.
    const after = await waitForTask(
      () => scrapeOf(workerUrl),
      (current) => countOf(current, 'taskgate_cancel_latency_seconds', { tool: 'sleep_subprocess' }) === 1,
    );
    expect(countOf(after, 'taskgate_cancel_latency_seconds', { tool: 'sleep_subprocess', signal: 'rest_cancel' })).toBe(
      1,
    );
    expect(sampleValue(after, 'taskgate_task_attempts_total', { tool: 'sleep_subprocess' })).toBe(1);
    expect(countOf(after, 'taskgate_task_pickup_latency_seconds', { tool: 'sleep_subprocess' })).toBe(1);
    expect(sampleValue(after, 'taskgate_tasks_finished_total', { tool: 'sleep_subprocess', status: 'cancelled' })).toBe(
      1,
    );
    expect(sampleValue(after, 'taskgate_orphaned_work')).toBe(0);
    expect(sampleValue(after, 'taskgate_tasks', { tool: 'sleep_subprocess' })).toBe(0);
    // The API ran no handler: its histogram is empty, its process figures are there.
    const apiAfter = await scrapeOf(apiUrl);
    expect(countOf(apiAfter, 'taskgate_cancel_latency_seconds')).toBe(0);
    expect(sampleValue(apiAfter, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    // Answered to HEAD and refused to other methods, like the probe's other paths.
    expect((await fetch(`${workerUrl}/metrics`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${workerUrl}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});
