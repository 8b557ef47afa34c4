import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, RunningProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { PtyProcess } from '../support/pty.ts';

// Logs are for whoever reads them: a person at a terminal gets a line each, one per HTTP request;
// a pipe (a container's log collector) gets JSON lines; LOG_FORMAT says which when it matters.
const PROJECT_NODE = process.execPath;
let database: TestDatabase;
const ptys: PtyProcess[] = [];
const processes: RunningProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});
afterEach(() => {
  for (const pty of ptys.splice(0)) pty.kill();
  for (const process of processes.splice(0)) process.kill();
});

function apiOnly(extra: Record<string, string> = {}): Record<string, string> {
  return cleanEnv({ DATABASE_URL: database.url, PORT: '0', ...extra });
}

function inTerminal(env: Record<string, string>): PtyProcess {
  const pty = new PtyProcess(PROJECT_NODE, [CLI, 'start', '--role', 'api', '--no-migrate'], env);
  ptys.push(pty);
  return pty;
}

describe('taskgate start in a terminal', () => {
  it('writes a line for a person per record, one per request, in colour; Ctrl-C stops it', async () => {
    const pty = inTerminal(apiOnly());
    const started = await pty.waitForLine(/taskgate started/);
    expect(started).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}taskgate started .*url=http:\/\/127\.0\.0\.1:\d+/);
    const url = /url=(\S+)/.exec(started)?.[1] as string;
    // Not /healthz: probes log only at warn, as a probe every few seconds is noise.
    expect((await fetch(`${url}/openapi.json`)).status).toBe(200);
    expect((await fetch(`${url}/v1/no-such-route?x=1`)).status).toBe(404);
    await pty.waitForLine(/GET \/v1\/no-such-route\?x=1 404/);

    const requests = pty.lines.filter((line) => / (GET|POST) \//.test(line));
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}GET \/openapi\.json 200 \d+(\.\d)? ms role=api reqId=req-\d+$/,
    );
    expect(pty.lines.filter((line) => line.startsWith('{'))).toEqual([]);
    // Colour on a terminal: the level is painted.
    expect(pty.raw).toContain('\u001b[32mINFO \u001b[0m');

    pty.type('\u0003');
    await pty.waitForLine(/taskgate stopped/);
    expect(await pty.closed).toBe(0);
  });

  it('writes JSON lines with LOG_FORMAT=json, and no colour with NO_COLOR', async () => {
    const json = inTerminal(apiOnly({ LOG_FORMAT: 'json' }));
    const line = await json.waitForLine(/"msg":"taskgate started"/);
    const { url } = JSON.parse(line) as { url: string };
    await fetch(`${url}/openapi.json`);
    const request = await json.waitForLine(/"msg":"request"/);
    expect(JSON.parse(request)).toMatchObject({
      level: 'info',
      http: { method: 'GET', url: '/openapi.json', status: 200 },
    });

    const plain = inTerminal(apiOnly({ NO_COLOR: '1' }));
    await plain.waitForLine(/taskgate started/);
    expect(plain.raw).not.toContain('\u001b[');
  });
});

describe('taskgate start without a terminal', () => {
  it('writes JSON lines, one per request with its outcome, and pretty ones only when asked', async () => {
    const piped = new RunningProcess(PROJECT_NODE, [CLI, 'start', '--role', 'api', '--no-migrate'], apiOnly());
    processes.push(piped);
    const { url } = (await piped.waitForLog((line) => line.msg === 'taskgate started')) as unknown as { url: string };
    await fetch(`${url}/openapi.json`);
    await fetch(`${url}/openapi.json`);
    await piped.waitForLog(
      (line) => line.msg === 'request' && piped.logs.filter((l) => l.msg === 'request').length === 2,
    );
    const requests = piped.logs.filter((line) => line.msg === 'request');
    expect(requests.map((line) => line.http)).toEqual([
      { method: 'GET', url: '/openapi.json', status: 200, ms: expect.any(Number) },
      { method: 'GET', url: '/openapi.json', status: 200, ms: expect.any(Number) },
    ]);
    // Fastify's own two lines per request are gone.
    expect(piped.logs.filter((line) => line.msg === 'incoming request' || line.msg === 'request completed')).toEqual(
      [],
    );

    const pretty = new RunningProcess(
      PROJECT_NODE,
      [path.relative(process.cwd(), CLI), 'start', '--role', 'api', '--no-migrate'],
      apiOnly({ LOG_FORMAT: 'pretty' }),
    );
    processes.push(pretty);
    const lines: string[] = [];
    await new Promise<void>((resolve) => {
      pretty.child.stdout?.on('data', (chunk: Buffer) => {
        lines.push(...chunk.toString().split('\n'));
        if (lines.some((line) => line.includes('taskgate started'))) resolve();
      });
    });
    // Asked for on a pipe: pretty, but no colour codes for a file to keep.
    expect(lines.find((line) => line.includes('taskgate started'))).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}taskgate/,
    );
    expect(lines.join('\n')).not.toContain('\u001b[');
  });

  it('refuses a LOG_FORMAT it does not know, naming the ones it does', async () => {
    const run = new RunningProcess(PROJECT_NODE, [CLI, 'start', '--role', 'api'], apiOnly({ LOG_FORMAT: 'xml' }));
    processes.push(run);
    expect(await run.closed).toBe(78);
    expect(run.stderr).toContain('LOG_FORMAT must be one of auto, json, pretty (got "xml")');
  });
});
