import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// `taskgate mcp-stdio` answers initialize and server/discover while it is still starting (a
// client's first-message timeout may be one second; the embedded database alone takes longer),
// then hands every line to the real server, which answers the rest, each request exactly once.
// "Before it is ready" is judged by order: the answer precedes the `mcp-stdio ready` log line.
const database = useTestDatabase();
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url); // migrated, so the child's start is the usual one
});
afterAll(async () => {
  await platform.stop();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** The child with every stdout message and stderr log line in one ordered list. */
function launch(env: Record<string, string>) {
  const child = spawn(process.execPath, [CLI, 'mcp-stdio'], {
    cwd: REPO_ROOT,
    env: cleanEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: ({ out: Record<string, unknown> } | { log: Record<string, unknown> })[] = [];
  const collect = (into: 'out' | 'log') => {
    let partial = '';
    return (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        if (into === 'out') events.push({ out: JSON.parse(line) as Record<string, unknown> });
        else events.push({ log: parseLog(line) });
      }
    };
  };
  child.stdout.on('data', collect('out'));
  child.stderr.on('data', collect('log'));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  const indexOf = (predicate: (event: (typeof events)[number]) => boolean) => events.findIndex(predicate);
  const answerIndex = (id: string | number) => indexOf((event) => 'out' in event && event.out.id === id);
  const answers = (id: string | number) => events.filter((event) => 'out' in event && event.out.id === id);
  const until = (predicate: () => boolean) => waitForTask(async () => predicate(), Boolean, 30_000);
  return { child, events, exited, send, answerIndex, answers, until, indexOf };
}

/** A log line (JSON), or the plain line a failed start ends with. */
function parseLog(line: string): Record<string, unknown> {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { text: line };
  }
}

describe('taskgate mcp-stdio before it is ready', () => {
  it('answers initialize and server/discover at once, and the rest once started, each request once', async () => {
    const pipe = launch({ DATABASE_URL: database.url });
    // Before initialize, a request without per-request fields is judged by 2026-07-28's rules:
    // the front leaves it to the server, which refuses it.
    pipe.send({ jsonrpc: '2.0', id: 'bad', method: 'server/discover', params: { _meta: {} } });
    pipe.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'early', version: '1' } },
    });
    pipe.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    pipe.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    pipe.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
    pipe.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'greet', arguments: { name: 'Ada' } } });
    pipe.send({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: META } });
    await pipe.until(() => pipe.answerIndex(4) >= 0 && pipe.answerIndex('bad') >= 0);
    const ready = pipe.indexOf((event) => 'log' in event && event.log.msg === 'mcp-stdio ready');
    expect(ready, JSON.stringify(pipe.events)).toBeGreaterThan(0);
    for (const early of [1, 2, 'd']) expect(pipe.answerIndex(early), JSON.stringify(pipe.events)).toBeLessThan(ready);
    for (const late of [3, 4, 'bad']) expect(pipe.answerIndex(late)).toBeGreaterThan(ready);
    for (const id of [1, 2, 3, 4, 'd', 'bad']) expect(pipe.answers(id)).toHaveLength(1);
    const out = (id: string | number) => (pipe.answers(id)[0] as { out: Record<string, unknown> }).out;
    expect(out(1)).toMatchObject({ result: { protocolVersion: '2025-11-25', serverInfo: { name: 'taskgate' } } });
    expect(out(2)).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    expect(out('d')).toMatchObject({
      result: { supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] },
    });
    expect(out('bad')).toMatchObject({ error: { code: -32602 } }); // refused by the server, not the front
    expect(out(3)).toMatchObject({
      result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'greet' })]) },
    });
    expect(out(4)).toMatchObject({ result: { content: [{ type: 'text', text: expect.stringContaining('Ada') }] } });
    // The pipe was set up by the held initialize: it still speaks 2025-11-25.
    pipe.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
    await pipe.until(() => pipe.answerIndex(5) >= 0);
    pipe.child.stdin.end();
    expect(await pipe.exited).toBe(0);
  });

  it('answers what it held with an error when start-up fails, and exits', async () => {
    // Nothing listens on port 1: the database is unreachable, after initialize was answered.
    const pipe = launch({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    pipe.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'early', version: '1' } },
    });
    pipe.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const code = await pipe.exited;
    expect(code).not.toBe(0);
    expect(pipe.answers(1)).toHaveLength(1);
    expect(pipe.answers(2)).toEqual([
      {
        out: expect.objectContaining({
          error: expect.objectContaining({
            code: -32603,
            message: expect.stringContaining('failed to start'),
            // The failure's code, so a client can say the database is unreachable, not "internal error".
            data: { code: 'TG_DB_UNREACHABLE' },
          }),
        }),
      },
    ]);
  });
});
