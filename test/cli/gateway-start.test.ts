import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, runCli, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { modernRequest } from '../support/mcp-http.ts';

// A tool module that declares a gateway, as a user writes one: `taskgate start` spawns the
// downstream MCP server for its worker, publishes its tools, and an MCP client calls them.
const database = useTestDatabase();
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
const running: RunningProcess[] = [];
afterAll(() => {
  for (const process of running) process.kill();
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
      const { headers, body } = modernRequest(method, params);
      return (await (await fetch(mcp, { method: 'POST', headers, body })).json()) as Record<string, unknown>;
    };
    const listed = await call('tools/list', {});
    expect((listed.result as { tools: { name: string }[] }).tools.map((tool) => tool.name).sort()).toEqual([
      'fx_crash',
      'fx_slow_echo',
    ]);
    const answered = await call('tools/call', { name: 'fx_slow_echo', arguments: { text: 'through', steps: 2 } });
    expect(answered.result).toMatchObject({ structuredContent: { echoed: 'through' } });
    expect(await readFile(log, 'utf8')).toMatch(/^started .+\ndone .+\n$/);
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
});
