import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findReconciliationItem } from '@taskgate/db';
import { DownstreamConnection, gatewayTools } from '@taskgate/gateway';
import { defineGateway } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// A downstream MCP server's tools published as Taskgate tools: each call a task on a worker that
// holds the downstream, with the task's cancel reaching the downstream handler's own signal.
const database = useTestDatabase();
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'tg-gateway-')), 'log');
writeFileSync(logFile, '');
const lines = () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
const gateway = defineGateway({
  name: 'fixture',
  prefix: 'fx_',
  stdio: { command: process.execPath, args: [FIXTURE], env: { DOWNSTREAM_LOG: logFile } },
  tools: { slow_echo: { retry: 'safe', timeouts: { maxMs: 30_000 } } },
});
// The same downstream under another prefix, its slow_echo with a short max clock, and its own
// slow_echo unsafe: the clock's stop, and the reconciliation of an unsafe call cut off.
const strict = defineGateway({
  name: 'fixture',
  prefix: 'fxs_',
  stdio: gateway.stdio,
  tools: { slow_echo: { retry: 'safe', timeouts: { maxMs: 400 } }, crash: { retry: 'unsafe' } },
});
const risky = defineGateway({ name: 'fixture', prefix: 'fxr_', stdio: gateway.stdio });
const quiet = { info: () => {}, warn: () => {} };
const connection = new DownstreamConnection({
  name: gateway.name,
  stdio: gateway.stdio,
  log: quiet,
  restart: { firstDelayMs: 50, maxDelayMs: 50 },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  const listed = await connection.start();
  const tools = [
    ...gatewayTools(gateway, connection, listed, () => {}),
    ...gatewayTools(strict, connection, listed, () => {}).filter((tool) => tool.name === 'fxs_slow_echo'),
    ...gatewayTools(risky, connection, listed, () => {}).filter((tool) => tool.name === 'fxr_slow_echo'),
  ];
  platform = await startPlatform(database.url, { tools: tools as never });
  await platform.startWorker({ checkpointReadIntervalMs: 10 });
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
  await connection.close();
});

const ended = (id: string) =>
  waitForTask(
    () => platform.service.get('default', id),
    (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
  );

describe('gateway tools', () => {
  it('are the downstream tools under the prefix, unsafe unless the gateway says otherwise', async () => {
    const { headers, body } = perRequestMessage('tools/list', {});
    const listed = (await api.app.inject({ method: 'POST', url: '/mcp', headers, payload: body })).json();
    const names = listed.result.tools
      .map((tool: { name: string }) => tool.name)
      .filter((name: string) => name.startsWith('fx_'))
      .sort();
    // `not a valid name!` cannot be a tool name: left out.
    expect(names).toEqual(['fx_crash', 'fx_grow', 'fx_shrink', 'fx_slow_echo']);
    expect(platform.tools.get('fx_slow_echo')?.retry).toBe('safe');
    expect(platform.tools.get('fx_crash')?.retry).toBe('unsafe');
  });

  it('run a call as a task, with the downstream progress relayed', async () => {
    const { headers, body } = perRequestMessage('tools/call', {
      name: 'fx_slow_echo',
      arguments: { text: 'hi', steps: 3 },
    });
    const answered = await api.app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
    expect(answered.body).toContain('echo: hi');
    const task = (await platform.service.list('default', { limit: 1 })).tasks[0];
    expect(task).toMatchObject({ tool: 'fx_slow_echo', status: 'completed', progress: { total: 3 } });
    expect(lines()).toContain(`started ${task?.id}`);
    expect(lines()).toContain(`done ${task?.id}`);
    expect(connection.inFlight).toEqual([]);
  });

  it("turn the task's cancel into the downstream's own: its handler is aborted", async () => {
    const { task } = await platform.service.submit('default', {
      tool: 'fx_slow_echo',
      arguments: { text: 'long', steps: 400 },
    });
    await waitForTask(
      () => platform.service.get('default', task.id),
      (current) => (current.progress?.value ?? 0) >= 1,
    );
    expect(connection.inFlight.map((entry) => entry.label)).toEqual([task.id]);
    await platform.service.cancel('default', task.id, 'not needed');
    expect(await ended(task.id)).toMatchObject({ status: 'cancelled' });
    await waitForTask(
      async () => lines(),
      (seen) => seen.includes(`aborted ${task.id}`),
    );
    expect(connection.inFlight).toEqual([]);
  });

  it('fail the task plainly when the downstream crashes, and work again once it restarted', async () => {
    const { task } = await platform.service.submit('default', { tool: 'fx_crash', arguments: {} });
    const failed = await ended(task.id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: -32603, data: { code: 'TG_DOWNSTREAM_GONE', server: 'fixture' } },
    });
    expect(failed.statusMessage).toContain('downstream fixture exited');
    expect(connection.inFlight).toEqual([]);
    // After its backoff (50 ms here) the next call starts it again.
    await new Promise((resolve) => setTimeout(resolve, 60));
    const { task: again } = await platform.service.submit('default', {
      tool: 'fx_slow_echo',
      arguments: { text: 'back', steps: 0 },
    });
    expect(await ended(again.id)).toMatchObject({
      status: 'completed',
      result: { structuredContent: { echoed: 'back' } },
    });
    expect(connection.inFlight).toEqual([]);
  });

  it("stop the downstream call when the task's clock runs out; the id map is empty after", async () => {
    const { task } = await platform.service.submit('default', {
      tool: 'fxs_slow_echo',
      arguments: { text: 'too long', steps: 400 },
    });
    expect(await ended(task.id)).toMatchObject({ status: 'failed' });
    await waitForTask(
      async () => lines(),
      (seen) => seen.includes(`aborted ${task.id}`),
    );
    expect(connection.inFlight).toEqual([]);
  });

  it('open a reconciliation item for an unsafe call cut off, and none for one that answered', async () => {
    const itemOf = async (taskId: string) => {
      const { rows } = await sql<{ id: string }>`
        SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${taskId}`.execute(platform.db);
      return rows[0] ? findReconciliationItem(platform.db, 'default', rows[0].id) : null;
    };
    const { task: answered } = await platform.service.submit('default', {
      tool: 'fxr_slow_echo',
      arguments: { text: 'fine', steps: 1 },
    });
    expect(await ended(answered.id)).toMatchObject({
      status: 'completed',
      result: { structuredContent: { echoed: 'fine' } },
    });
    expect(await itemOf(answered.id)).toBeNull();

    const { task: cut } = await platform.service.submit('default', {
      tool: 'fxr_slow_echo',
      arguments: { text: 'cut', steps: 400 },
    });
    await waitForTask(
      () => platform.service.get('default', cut.id),
      (current) => (current.progress?.value ?? 0) >= 1,
    );
    await platform.service.cancel('default', cut.id, 'changed my mind');
    expect(await ended(cut.id)).toMatchObject({ status: 'cancelled' });
    // The downstream may have acted before it saw the cancel: an operator decides.
    const item = await itemOf(cut.id);
    expect(item).toMatchObject({ kind: 'unknown_outcome', tool: 'fxr_slow_echo', resolvedAt: null });
    // What is known goes with it: the step that was under way, the last downstream progress.
    expect(JSON.stringify(item?.details)).toContain('downstream tools/call');
    expect(connection.inFlight).toEqual([]);
  });
});
