import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../support/cli.ts';
import { type CliOnOwnPostgres, startCliOnOwnPostgres, stopCliOnOwnPostgres } from '../support/own-postgres-cli.ts';
import type { PostgresCluster } from '../support/postgres-cluster.ts';
import { openSse } from '../support/sse-client.ts';
import { waitForTask } from '../support/task-platform.ts';

// The console through a Postgres outage, on `taskgate start` against a Postgres of the test's own:
// a signed-in page's reads (the session is looked up in Postgres) answer 503, never 401 or 500,
// while the shell still loads; the list's live stream, open across the outage, carries on after.
const TOKEN = 'acme-outage-console-token-0123';
let running: CliOnOwnPostgres;
let server: PostgresCluster;
let taskgate: RunningProcess;
let base: string;

beforeAll(async () => {
  running = await startCliOnOwnPostgres('info', { TASKGATE_TOKENS: `${TOKEN}:acme` });
  ({ server, taskgate, base } = running);
}, 120_000);
afterAll(() => stopCliOnOwnPostgres(running));

describe('the console during a Postgres outage', () => {
  it('answers 503 for a session it cannot look up, keeps the shell, and its list stream lives on', async () => {
    const origin = new URL(base).origin;
    const signIn = await fetch(`${origin}/ui/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect(signIn.status).toBe(201);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const withCookie = (path: string) => fetch(`${origin}${path}`, { headers: { cookie } });
    expect((await withCookie('/v1/tasks')).status).toBe(200);

    const stream = openSse(new URL(`${origin}/v1/tasks/events`), { method: 'GET', headers: { cookie } });
    expect(await stream.status).toBe(200);
    await stream.until((messages) => messages.length >= 1);

    await server.fastStop();
    for (const path of ['/v1/tasks', '/ui/session']) {
      const answer = await withCookie(path);
      expect(answer.status, `${path}: ${await answer.clone().text()}`).toBe(503);
      expect(answer.headers.get('retry-after')).not.toBeNull();
    }
    // The shell and its files are in memory: the page loads and says what is wrong.
    expect((await withCookie('/ui')).status).toBe(200);
    expect((await withCookie('/ui/assets/app.js')).status).toBe(200);

    await server.start();
    await waitForTask(
      () => withCookie('/v1/tasks'),
      (answer) => answer.status === 200,
    );
    const created = await fetch(`${origin}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ tool: 'greet', arguments: { name: 'after the outage' } }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    // The stream opened before the outage hears of the task created after it.
    await stream.until((messages) => messages.some((message) => message.id === id), 20_000);
    stream.close();
    expect(taskgate.child.exitCode).toBeNull();
  }, 90_000);
});
