import { listTaskEvents } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
let platform: Platform;
let api: RunningProcess | null = null;

beforeAll(async () => {
  // The worker (with its sweeper, at the default heartbeat, loss bound and sweep interval) runs
  // here; the API that takes the call is a process of its own, to be SIGKILLed.
  platform = await startPlatform(database.url);
  await platform.startWorker();
});
afterAll(async () => {
  api?.child.kill('SIGKILL');
  await platform.stop();
});

describe('a request whose API instance dies', () => {
  it('is cancelled by the sweeper once the instance stops heartbeating, within the documented time', async () => {
    api = startCli(
      ['start', '--role', 'api', '--no-migrate'],
      cleanEnv({ DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info' }),
    );
    const url = (await api.waitForLog((line) => line.msg === 'taskgate started')).url as string;
    const { headers, body } = perRequestMessage('tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 120, label: 'orphan' },
    });
    // A client without the Tasks extension: the call is a request-mode task bound to that API.
    const call = fetch(`${url}/mcp`, { method: 'POST', headers, body }).then(
      (response) => response.text(),
      (error: Error) => error,
    );
    const found = await waitForTask(
      async () =>
        (
          await sql<{ id: string; api_instance_id: string; started_at: Date | null; mode: string }>`
            SELECT id, api_instance_id, started_at, mode FROM tasks WHERE arguments->>'label' = 'orphan'`.execute(
            platform.db,
          )
        ).rows[0],
      (row) => row?.started_at !== null && row?.started_at !== undefined,
    );
    const running = found as NonNullable<typeof found>;
    expect(running.mode).toBe('request');
    expect(running.api_instance_id).toMatch(/^api-/);

    api.child.kill('SIGKILL');
    const killedAt = performance.now();
    await api.closed;
    const ended = await waitForTask(
      () => platform.service.get('default', running.id),
      (task) => task.status !== 'working',
      30_000,
    );
    const detectionMs = performance.now() - killedAt;
    await call;

    expect(ended.status).toBe('cancelled');
    expect(ended.cancelReason).toBe("the request's API instance was lost");
    const events = await listTaskEvents(platform.db, 'default', running.id);
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['cancel_requested', 'cancel_observed', 'status_changed']),
    );
    // Heartbeats every 2 s, lost after 10 s of silence, sweeps every 2 s (±25 %): 8 to 12.5 s.
    console.log(`request-mode task of a SIGKILLed API cancelled ${Math.round(detectionMs)} ms after the kill`);
    expect(detectionMs).toBeGreaterThan(7_000);
    expect(detectionMs).toBeLessThan(15_000);
  }, 60_000);
});
