import http from 'node:http';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, startApi, startPlatform } from '../support/task-platform.ts';

const database = useTestDatabase();
const quietStarted = barrier();
const quietRelease = barrier();
/** Silent for as long as the test wants: the stream has nothing to say but keepalives. */
const quiet = defineTool({
  name: 'quiet',
  description: 'waits for the test without progress',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    quietStarted.resolve();
    await quietRelease.promise;
    return { content: [{ type: 'text', text: 'finally' }] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let base: string;

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [quiet] as never });
  await platform.startWorker({ progressWriteIntervalMs: 20 });
  api = await startApi(platform, database.url, { events: { keepaliveMs: 100, pollMs: 5_000 } });
  base = await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

interface Received {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: { event: string; data: { status: string; progress: { value: number } | null } }[];
  comments: number;
  ended: boolean;
}

/** Reads an SSE response over a real socket until it ends, or until `until` says enough. */
function watch(path: string, until: (received: Received) => boolean = () => false): Promise<Received> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${base}${path}`, (response) => {
      const received: Received = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        events: [],
        comments: 0,
        ended: false,
      };
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let boundary = buffer.indexOf('\n\n');
        while (boundary !== -1) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          if (block.startsWith(':')) received.comments++;
          else {
            const event = /^event: (.+)$/m.exec(block)?.[1] ?? 'message';
            const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null');
            received.events.push({ event, data });
          }
          boundary = buffer.indexOf('\n\n');
        }
        if (until(received)) {
          request.destroy();
          resolve(received);
        }
      });
      response.on('end', () => {
        received.ended = true;
        resolve(received);
      });
    });
    request.on('error', reject);
  });
}

async function create(tool: string, args: Record<string, unknown>): Promise<string> {
  return (await platform.service.create('default', { tool, arguments: args })).id;
}

describe('GET /v1/tasks/:id/events', () => {
  it('streams status and progress with proxy-safe headers and ends after the terminal status', async () => {
    const id = await create('slow_compute', { seconds: 0.5 });
    const received = await watch(`/v1/tasks/${id}/events`);
    expect(received.status).toBe(200);
    expect(received.headers['content-type']).toBe('text/event-stream');
    expect(received.headers['cache-control']).toBe('no-cache');
    expect(received.headers['x-accel-buffering']).toBe('no');
    expect(received.ended).toBe(true);
    expect(received.events[0]).toMatchObject({ event: 'status', data: { status: 'working' } });
    expect(received.events.at(-1)).toMatchObject({ event: 'status', data: { status: 'completed' } });
    const progress = received.events.filter((e) => e.event === 'progress').map((e) => e.data.progress?.value ?? 0);
    expect(progress.length).toBeGreaterThan(0);
    // Values a client sees only ever go up.
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress).size).toBe(progress.length);
  });

  it('sends : keepalive comments on a quiet stream, and they are not events', async () => {
    const id = await create('quiet', {});
    await quietStarted.promise;
    const received = await watch(`/v1/tasks/${id}/events`, (r) => r.comments >= 2);
    expect(received.events.map((e) => e.event)).toEqual(['status']);
    expect(received.comments).toBeGreaterThanOrEqual(2);
    quietRelease.resolve();
  });

  it('ends at once with the final status for a task that already ended', async () => {
    const id = await create('greet', { name: 'Done' });
    await watch(`/v1/tasks/${id}/events`);
    const again = await watch(`/v1/tasks/${id}/events`);
    expect(again.events).toEqual([
      expect.objectContaining({ event: 'status', data: expect.objectContaining({ status: 'completed' }) }),
    ]);
    expect(again.ended).toBe(true);
  });

  it('answers 404 as a problem, not a stream, for an unknown task', async () => {
    const response = await fetch(`${base}/v1/tasks/00000000-0000-4000-8000-000000000000/events`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  });
});
