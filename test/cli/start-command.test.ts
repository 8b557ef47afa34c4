import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, RunningProcess, runCli, startCli } from '../support/cli.ts';
import { createTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const running: RunningProcess[] = [];
afterEach(() => {
  for (const process of running.splice(0)) process.kill();
});

function track(process: RunningProcess): RunningProcess {
  running.push(process);
  return process;
}

async function started(process: RunningProcess): Promise<string> {
  const line = await process.waitForLog((entry) => entry.msg === 'taskgate started');
  return line.url as string;
}

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('taskgate start with DATABASE_URL', () => {
  it('npm start migrates it, serves /healthz and /readyz, and stops cleanly on SIGTERM within 5 s', async () => {
    const database = await createTestDatabase({ empty: true });
    try {
      const taskgate = track(new RunningProcess('npm', ['start'], cleanEnv({ DATABASE_URL: database.url, PORT: '0' })));
      const url = await started(taskgate);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await getJson(`${url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
      expect(await getJson(`${url}/readyz`)).toEqual({
        status: 200,
        body: {
          status: 'ready',
          checks: { api: 'ok', worker: 'ok', relay: 'ok', database: 'ok', catalog: 'ok', notifications: 'ok' },
        },
      });
      // The same command used the database it was given.
      const client = testClient({ connectionString: database.url });
      await client.connect();
      const applied = await client.query('SELECT count(*)::int AS n FROM taskgate_migrations');
      await client.end();
      expect(applied.rows[0].n).toBeGreaterThan(0);

      const { code, ms } = await taskgate.stop('SIGTERM');
      expect(code).toBe(0);
      expect(ms).toBeLessThan(5_000);
      expect(taskgate.logs.map((line) => line.msg)).toEqual(
        expect.arrayContaining(['shutting down', 'worker stopped', 'relay stopped', 'taskgate stopped']),
      );
      expect(taskgate.logs.find((line) => line.msg === 'taskgate stopped')?.problems).toEqual([]);
    } finally {
      await database.drop();
    }
  });

  it('runs only the roles asked for, and SIGINT stops it too', async () => {
    const database = await createTestDatabase();
    try {
      const taskgate = track(startCli(['start', '--role', 'api'], cleanEnv({ DATABASE_URL: database.url, PORT: '0' })));
      const url = await started(taskgate);
      expect((await getJson(`${url}/readyz`)).body.checks).toEqual({
        api: 'ok',
        database: 'ok',
        catalog: 'ok',
        notifications: 'ok',
      });
      expect(taskgate.logs.some((line) => line.msg === 'worker started')).toBe(false);
      expect((await taskgate.stop('SIGINT')).code).toBe(0);
    } finally {
      await database.drop();
    }
  });

  it('--no-migrate refuses a database whose schema is behind, with one line', async () => {
    const database = await createTestDatabase({ empty: true });
    try {
      const result = await runCli(['start', '--no-migrate'], cleanEnv({ DATABASE_URL: database.url, PORT: '0' }));
      expect(result.code).toBe(65);
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(
        /schema is behind this code .*run taskgate migrate up first \[TG_MIGRATION_PENDING\]/,
      );
    } finally {
      await database.drop();
    }
  });

  it('a port already in use fails start-up with one line and releases everything it opened', async () => {
    const database = await createTestDatabase();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const result = await runCli(['start'], cleanEnv({ DATABASE_URL: database.url, PORT: String(port) }));
      expect(result.code).toBe(70);
      expect(result.stderr).toMatch(
        new RegExp(`the API could not listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*\\[TG_STARTUP_FAILED\\]`),
      );
      // The worker had started when the API failed to listen: everything stops once, cleanly, and
      // says so in the instance rows (a second stop of the API's services used to warn that it
      // "could not mark the instance stopped": its pool was destroyed by the first).
      const logs = result.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(logs.map((line) => line.msg)).toContain('worker stopped');
      expect(logs.filter((line) => line.level !== 'info' && line.level !== 'debug')).toEqual([]);
      const client = testClient({ connectionString: database.url });
      await client.connect();
      try {
        const { rows } = await client.query(
          'SELECT kind, stopped_at IS NOT NULL AS stopped FROM instances ORDER BY kind',
        );
        expect(rows).toEqual([
          { kind: 'api', stopped: true },
          { kind: 'worker', stopped: true },
        ]);
      } finally {
        await client.end();
      }
    } finally {
      blocker.close();
      await database.drop();
    }
  });
});

describe('taskgate start with a module whose routes do not register', () => {
  it('stops with one line naming the module before the worker has started, with nothing left open', async () => {
    const database = await createTestDatabase();
    const folder = await mkdtemp(path.join(tmpdir(), 'taskgate-bad-routes-'));
    const file = path.join(folder, 'bad-routes.mjs');
    // Plain objects: a module need not import @taskgate/sdk (defineTool's checks run on load anyway).
    await writeFile(
      file,
      [
        "export const tools = [{ name: 'bad_routes_ping', description: 'answers', inputSchema: { type: 'object' },",
        "  retry: 'safe', handler: async () => ({ content: [] }) }];",
        "export async function routes() { throw new Error('boom'); }",
        '',
      ].join('\n'),
    );
    try {
      const result = await runCli(['start', '--tools', file], cleanEnv({ DATABASE_URL: database.url, PORT: '0' }));
      expect(result.code).toBe(78);
      expect(result.stderr.trimEnd().split('\n')).toEqual([
        expect.stringContaining(`tool module ${file}: its routes did not register: boom [TG_TOOL_MODULE_INVALID]`),
      ]);
      const messages = result.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line).msg);
      expect(messages).toContain('tool module loaded');
      expect(messages).not.toContain('worker started');
      const client = testClient({ connectionString: database.url });
      await client.connect();
      try {
        // No worker instance registered, no tool published: no task could have been claimed.
        const { rows } = await client.query(
          `SELECT (SELECT count(*) FROM instances WHERE kind = 'worker')::int AS workers,
                  (SELECT count(*) FROM tool_catalog)::int AS tools`,
        );
        expect(rows[0]).toEqual({ workers: 0, tools: 0 });
      } finally {
        await client.end();
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
      await database.drop();
    }
  });
});

// The default address, 127.0.0.1:8080, is checked where it is decided (apps/cli/src/config.test.ts):
// binding 8080 here would collide with anything else on a shared machine, another checkout's tests included.
describe('npm start on the embedded default', () => {
  it('serves within 30 s with no DATABASE_URL, stops within 5 s, and starts again on the same data', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-start-'));
    const env = cleanEnv({ TASKGATE_DATA_DIR: dataDir, PORT: '0' });

    for (const round of ['first start', 'restart']) {
      const began = performance.now();
      const taskgate = track(new RunningProcess('npm', ['start'], env));
      const url = await started(taskgate);
      expect(url, round).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(performance.now() - began).toBeLessThan(30_000);
      expect((await getJson(`${url}/healthz`)).status).toBe(200);
      expect(await getJson(`${url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
      expect(taskgate.logs.some((line) => line.msg.startsWith('embedded single-machine mode'))).toBe(true);
      // Migrations ran on the first start only: the restart found its data.
      expect(taskgate.logs.some((line) => line.msg === 'migration up')).toBe(round === 'first start');

      // npm forwards SIGTERM to the process it runs ("exec taskgate start"); `closed` waits for
      // every writer of the pipes, so it includes Taskgate's own exit.
      const { ms } = await taskgate.stop('SIGTERM');
      expect(ms).toBeLessThan(5_000);
      expect(taskgate.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    }
    await rm(dataDir, { recursive: true, force: true });
  }, 90_000);
});
