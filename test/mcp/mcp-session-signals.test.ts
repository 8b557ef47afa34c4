import type { TaskRecord } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnosticTools } from '../../examples/conformance/diagnostic-fixtures.ts';
import { askingTools } from '../../examples/conformance/round-trip-fixtures.ts';
import { useTestDatabase } from '../support/databases.ts';
import { openSse } from '../support/sse-client.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// Behind a load balancer without sticky sessions, a 2025-11-25 client's POSTed
// notifications/cancelled, or its response to a request of the server's, may land on an instance
// that does not hold the request. It reaches the one that does (Postgres NOTIFY), which acts on it
// as if the POST had landed there. A resources/subscribe or unsubscribe is kept with the session
// in Postgres, so the instance holding the session's GET stream watches what any instance took.
const database = useTestDatabase();
type Api = { app: FastifyInstance; close(): Promise<void> };
let platform: Platform;
let holder: Api;
let other: Api;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [...diagnosticTools, ...askingTools] });
  await platform.startWorker();
  holder = await startApi(platform, database.url);
  other = await startApi(platform, database.url);
  for (const api of [holder, other]) await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await holder.close();
  await other.close();
  await platform.stop();
});

const url = (api: Api) => `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}/mcp`;

function post(api: Api, body: Record<string, unknown>, session?: string) {
  return fetch(url(api), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(session ? { 'mcp-session-id': session } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...body }),
  });
}

async function session(capabilities: Record<string, unknown> = {}): Promise<string> {
  const init = await post(holder, {
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'lb', version: '1' } },
  });
  return init.headers.get('mcp-session-id') as string;
}

describe('a session served by two instances', () => {
  it('a notifications/cancelled POSTed to the other instance cancels the call and its task', async () => {
    const id = await session();
    const running = post(
      holder,
      { id: 7, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 8.5 } } },
      id,
    );
    const taskId = await waitForTask(
      async () => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '8.5' AND attempt >= 1`.execute(
          platform.db,
        );
        return rows[0]?.id;
      },
      (found) => found !== undefined,
    );
    const cancel = await post(
      other,
      { method: 'notifications/cancelled', params: { requestId: 7, reason: 'gave up, via the other instance' } },
      id,
    );
    expect(cancel.status).toBe(202);
    // The holder ends the call without an answer: an empty 204, or an SSE stream that just ends.
    const answered = await running;
    expect(await answered.text()).not.toContain('"id":7');
    const ended = await waitForTask(
      () => platform.service.get('default', taskId as string),
      (task: TaskRecord) => task.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'gave up, via the other instance' });
  });

  it('a cancel for a session no instance knows changes nothing (tenants: legacy-sessions.test.ts)', async () => {
    const id = await session();
    const running = post(
      holder,
      { id: 8, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 1.25 } } },
      id,
    );
    await waitForTask(
      async () => {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '1.25'`.execute(
          platform.db,
        );
        return rows[0]?.n ?? 0;
      },
      (n) => n > 0,
    );
    // A made-up session: accepted (a notification gets no answer), and nothing is signalled.
    const stranger = await post(
      other,
      { method: 'notifications/cancelled', params: { requestId: 8 } },
      crypto.randomUUID(),
    );
    expect(stranger.status).toBe(202);
    // The call runs to its end, untouched.
    const answered = await running;
    expect(await answered.text()).toContain('"id":8');
  });

  it('a response POSTed to the other instance answers the holder’s request to the client', async () => {
    const id = await session({ elicitation: {} });
    const call = await post(
      holder,
      { id: 9, method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'Who?' } } },
      id,
    );
    expect(
      call.headers.get('content-type'),
      call.headers.get('content-type')?.includes('json') ? await call.text() : '',
    ).toContain('text/event-stream');
    const reader = (call.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const nextMessage = async (): Promise<Record<string, unknown>> => {
      for (;;) {
        const end = text.indexOf('\n\n');
        if (end >= 0) {
          const frame = text.slice(0, end);
          text = text.slice(end + 2);
          if (frame.startsWith('data: ')) return JSON.parse(frame.slice(6));
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        text += decoder.decode(value, { stream: true });
      }
    };
    const asked = await nextMessage();
    expect(asked).toMatchObject({ method: 'elicitation/create', id: expect.any(String) });
    const answer = await post(
      other,
      { id: asked.id, result: { action: 'accept', content: { username: 'ada', email: 'a@b' } } },
      id,
    );
    expect(answer.status).toBe(202);
    const response = await nextMessage();
    expect(response).toMatchObject({
      id: 9,
      result: { content: [{ text: 'User response: <action: accept, content: {"username":"ada","email":"a@b"}>' }] },
    });
    await reader.cancel();
  });

  it('a resources/subscribe and unsubscribe POSTed to the other instance act on the holder’s GET stream', async () => {
    const id = await session();
    const stream = openSse(new URL(url(holder)), {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': id },
    });
    expect(await stream.status).toBe(200);
    const start = () => platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const [kept, dropped, marker] = [await start(), await start(), await start()];
    const uri = (task: { id: string }) => `taskgate://tasks/${task.id}`;
    const updated = () =>
      stream.messages.filter((m) => m.method === 'notifications/resources/updated').map((m) => m.params);
    const send = async (requestId: number, method: string, task: { id: string }) => {
      const answer = await post(other, { id: requestId, method, params: { uri: uri(task) } }, id);
      expect(await answer.json()).toMatchObject({ id: requestId, result: {} });
    };
    await send(20, 'resources/subscribe', kept);
    await send(21, 'resources/subscribe', dropped);
    await send(22, 'resources/unsubscribe', dropped);
    await send(23, 'resources/subscribe', marker);
    // The holder is told at once (NOTIFY), but a change the instant after the answer may come
    // before it reads the session's URIs: a request of the session through it reads them too, so
    // after this ping's answer the holder watches the marker, and not the dropped task.
    const ping = await post(holder, { id: 24, method: 'ping' }, id);
    expect(await ping.json()).toMatchObject({ id: 24, result: {} });
    await platform.service.cancel('default', marker.id, 'marker');
    await stream.until(() => updated().length > 0);
    await platform.service.cancel('default', dropped.id, 'not watched');
    await waitForTask(
      () => platform.service.get('default', dropped.id),
      (task: TaskRecord) => task.status === 'cancelled',
    );
    await platform.service.cancel('default', kept.id, 'watched');
    await stream.until(() => updated().length > 1);
    expect(updated()).toEqual([{ uri: uri(marker) }, { uri: uri(kept) }]);
    stream.close();
  });
});
