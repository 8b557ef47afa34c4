import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, runCli, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type HttpDownstreamFixture, startHttpDownstream } from '../support/http-downstream.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { waitForTask } from '../support/task-platform.ts';

// A tool module that declares a gateway, as a user writes one: `taskgate start` spawns the
// downstream MCP server for its worker, publishes its tools, and an MCP client calls them.
const database = useTestDatabase();
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
const running: RunningProcess[] = [];
const servers: HttpDownstreamFixture[] = [];
afterAll(async () => {
  for (const process of running) process.kill();
  await Promise.all(servers.map((server) => server.kill()));
});

async function moduleWith(command: string): Promise<{ file: string; log: string }> {
  const root = await mkdtemp(path.join(tmpdir(), 'taskgate-gateway-module-'));
  await mkdir(path.join(root, 'node_modules', '@taskgate'), { recursive: true });
  await symlink(path.join(REPO_ROOT, 'packages/sdk'), path.join(root, 'node_modules/@taskgate/sdk'), 'dir');
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  const log = path.join(root, 'downstream.log');
  await writeFile(log, '');
  const file = path.join(root, 'gateway.ts');
  await writeFile(
    file,
    [
      "import { defineGateway } from '@taskgate/sdk';",
      '',
      "export const name = 'fixture-gateway';",
      'export const gateways = [',
      '  defineGateway({',
      "    name: 'fixture',",
      "    prefix: 'fx_',",
      `    stdio: { command: ${JSON.stringify(command)}, args: [${JSON.stringify(FIXTURE)}], env: { DOWNSTREAM_LOG: ${JSON.stringify(log)} } },`,
      "    defaults: { retry: 'safe' },",
      '  }),',
      '];',
      '',
    ].join('\n'),
  );
  return { file, log };
}

describe('taskgate start with a gateway module', () => {
  it("publishes the downstream's tools and runs their calls through it", async () => {
    const { file, log } = await moduleWith(process.execPath);
    const taskgate = startCli(
      ['start', '--role', 'api,worker', '--tools', file],
      cleanEnv({ DATABASE_URL: database.url, PORT: '0' }),
    );
    running.push(taskgate);
    const ready = await taskgate.waitForLog((line) => line.msg === 'taskgate started');
    expect(taskgate.logs.some((line) => line.msg === 'gateway tools ready')).toBe(true);
    const mcp = new URL(`${ready.url as string}/mcp`);
    const call = async (method: string, params: Record<string, unknown>) => {
      const { headers, body } = perRequestMessage(method, params);
      return (await (await fetch(mcp, { method: 'POST', headers, body })).json()) as Record<string, unknown>;
    };
    const listed = await call('tools/list', {});
    expect((listed.result as { tools: { name: string }[] }).tools.map((tool) => tool.name).sort()).toEqual([
      'fx_crash',
      'fx_grow',
      'fx_shrink',
      'fx_slow_echo',
    ]);
    const answered = await call('tools/call', { name: 'fx_slow_echo', arguments: { text: 'through', steps: 2 } });
    expect(answered.result).toMatchObject({ structuredContent: { echoed: 'through' } });
    expect(await readFile(log, 'utf8')).toMatch(/^started .+\ndone .+\n$/);
    // The downstream adds a tool and says so: the worker serves it and the catalog lists it.
    await call('tools/call', { name: 'fx_grow', arguments: {} });
    const names = async () =>
      ((await call('tools/list', {})).result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    await waitForTask(names, (listed) => listed.includes('fx_late_echo'), 15_000);
    const late = await call('tools/call', { name: 'fx_late_echo', arguments: {} });
    expect(late.result).toMatchObject({ content: [{ type: 'text', text: 'late' }] });
    // And takes it away again: it leaves the catalog.
    await call('tools/call', { name: 'fx_shrink', arguments: {} });
    await waitForTask(names, (listed) => !listed.includes('fx_late_echo'), 15_000);
    // A graceful stop ends the downstream with the worker.
    taskgate.child.kill('SIGTERM');
    expect(await taskgate.closed).toBe(0);
  });

  it('stops start-up, naming the gateway, when its server cannot start', async () => {
    const { file } = await moduleWith('/no/such/server');
    const result = await runCli(
      ['start', '--role', 'worker', '--tools', file],
      cleanEnv({ DATABASE_URL: database.url }),
    );
    expect(result.code).toBe(70);
    expect(result.stdout + result.stderr).toContain('gateway fixture of module fixture-gateway');
    expect(result.stdout + result.stderr).toContain('did not start (/no/such/server)');
  });

  it('serves a Streamable HTTP downstream declared in TASKGATE_GATEWAYS, its token from the environment', async () => {
    const server = await startHttpDownstream({ DOWNSTREAM_TOKEN: 'downstream-secret' });
    servers.push(server);
    const root = await mkdtemp(path.join(tmpdir(), 'taskgate-gateways-file-'));
    const file = path.join(root, 'gateways.json');
    await writeFile(
      file,
      JSON.stringify({
        gateways: [
          {
            name: 'remote',
            prefix: 'rm_',
            http: { url: server.url, bearerToken: { env: 'REMOTE_MCP_TOKEN' } },
            tools: { slow_echo: { retry: 'safe' } },
          },
        ],
      }),
    );
    const taskgate = startCli(
      ['start', '--role', 'api,worker'],
      cleanEnv({
        DATABASE_URL: database.url,
        PORT: '0',
        TASKGATE_TOOLS: 'none',
        TASKGATE_GATEWAYS: file,
        REMOTE_MCP_TOKEN: 'downstream-secret',
      }),
    );
    running.push(taskgate);
    const ready = await taskgate.waitForLog((line) => line.msg === 'taskgate started');
    const base = ready.url as string;
    const post = (method: string, params: Record<string, unknown>, signal?: AbortSignal) => {
      const { headers, body } = perRequestMessage(method, params);
      return fetch(`${base}/mcp`, { method: 'POST', headers, body, ...(signal ? { signal } : {}) });
    };
    const listed = (await (await post('tools/list', {})).json()) as { result: { tools: { name: string }[] } };
    // (The first test's worker's tools may still be in the catalog's window: only these are ours.)
    const ours = listed.result.tools.map((tool) => tool.name).filter((name) => name.startsWith('rm_'));
    expect(ours.sort()).toEqual(['rm_crash', 'rm_slow_echo']);
    const answered = (await (
      await post('tools/call', { name: 'rm_slow_echo', arguments: { text: 'far', steps: 1 } })
    ).json()) as {
      result: unknown;
    };
    expect(answered.result).toMatchObject({ structuredContent: { echoed: 'far' } });

    // The client closes its stream: the task is cancelled, and so is the downstream's request.
    const closed = new AbortController();
    const pending = post(
      'tools/call',
      { name: 'rm_slow_echo', arguments: { text: 'gone', steps: 400 } },
      closed.signal,
    );
    pending.catch(() => {});
    const started = () => server.lines().filter((line) => line.startsWith('started ')).length;
    await waitForTask(
      async () => started(),
      (count) => count === 2,
    );
    closed.abort();
    await waitForTask(
      async () => server.lines(),
      (lines) => lines.some((line) => line.startsWith('aborted ')),
    );
    expect(server.lines().filter((line) => line.startsWith('done ')).length).toBe(1);

    const families = parsePrometheusTextFormat(await (await fetch(`${base}/metrics`)).text());
    const family = (name: string) => families.find((entry) => entry.name === name);
    expect(family('taskgate_downstream_up')?.metrics).toEqual([{ labels: { server: 'remote' }, value: '1' }]);
    expect(family('taskgate_downstream_requests_in_flight')?.metrics).toEqual([
      { labels: { server: 'remote' }, value: '0' },
    ]);
    taskgate.child.kill('SIGTERM');
    expect(await taskgate.closed).toBe(0);
  });
});
