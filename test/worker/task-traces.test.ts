import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTaskTracing, setProcessTracing, type TaskTracing } from '@taskgate/metrics';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// OpenTelemetry: one span per task attempt, linked to the request that created the task, sent
// over OTLP/HTTP to a collector (here a receiver that keeps what it is sent).
const database = useTestDatabase();

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly links?: { readonly traceId: string; readonly spanId: string }[];
  readonly attributes?: { readonly key: string; readonly value: Record<string, unknown> }[];
  readonly events?: { readonly name: string }[];
  readonly status?: { readonly code?: number };
}
const spans: OtlpSpan[] = [];
const collector = http.createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => {
    body += chunk;
  });
  request.on('end', () => {
    const sent = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
    for (const resource of sent.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

const echo = defineTool<{ text: string }>({
  name: 'echo_traced',
  description: 'says it back',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  retry: 'safe',
  async handler({ text }) {
    return { content: [{ type: 'text', text }] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let tracing: TaskTracing;
beforeAll(async () => {
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const port = (collector.address() as AddressInfo).port;
  tracing = await createTaskTracing({
    url: `http://127.0.0.1:${port}/v1/traces`,
    serviceName: 'taskgate-test',
    scheduledDelayMillis: 20,
  });
  setProcessTracing(tracing);
  platform = await startPlatform(database.url, { tools: [echo] as never });
  await platform.startWorker();
  api = await startApi(platform, database.url);
  // On a socket too: an HTTP server span is made for what arrives over one, not for inject().
  await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
  await tracing?.shutdown();
  setProcessTracing(null);
  collector.closeAllConnections();
  await new Promise((resolve) => collector.close(resolve));
});

const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((entry) => entry.key === key)?.value;
const attemptOf = (taskId: string) =>
  waitForTask(
    async () =>
      spans.find(
        (span) => span.name === 'taskgate.task.attempt' && attribute(span, 'taskgate.task.id')?.stringValue === taskId,
      ),
    (span) => span !== undefined,
  ) as Promise<OtlpSpan>;
const completed = (id: string) =>
  waitForTask(
    () => platform.service.get('default', id),
    (task) => task.status === 'completed',
  );

/** OTLP's SpanKind: INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5. */
const SERVER = 2;
const CLIENT = 3;
const spanWhere = (what: (span: OtlpSpan) => boolean) =>
  waitForTask(
    async () => spans.find(what),
    (found) => found !== undefined,
  ) as Promise<OtlpSpan>;
const isPostgres = (span: OtlpSpan) =>
  span.kind === CLIENT &&
  ['db.system', 'db.system.name'].some((key) => attribute(span, key)?.stringValue === 'postgresql');

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('task traces', () => {
  it("link a REST task's attempt to the caller's traceparent header", async () => {
    const created = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { traceparent: `00-${TRACE}-${PARENT}-01` },
      payload: { tool: 'echo_traced', arguments: { text: 'hi' } },
    });
    expect(created.statusCode).toBe(201);
    const task = await completed(created.json().id);
    expect(task.traceParent).toBe(`00-${TRACE}-${PARENT}-01`);
    const span = await attemptOf(task.id);
    expect(span.links).toEqual([expect.objectContaining({ traceId: TRACE, spanId: PARENT })]);
    // A span of its own trace: linked, not parented (an attempt may run much later, or again).
    expect(span.traceId).not.toBe(TRACE);
    expect(attribute(span, 'taskgate.tool')).toEqual({ stringValue: 'echo_traced' });
    expect(attribute(span, 'taskgate.attempt')).toEqual({ intValue: 1 });
    expect(attribute(span, 'taskgate.task.status')).toEqual({ stringValue: 'completed' });
    expect(span.status?.code).toBe(1);
  });

  it("link an MCP call's task to its _meta.traceparent", async () => {
    const trace = '0af7651916cd43dd8448eb211c80319c';
    const { headers, body } = perRequestMessage(
      'tools/call',
      { name: 'echo_traced', arguments: { text: 'over mcp' } },
      { meta: { traceparent: `00-${trace}-${PARENT}-01` } },
    );
    const response = await api.app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
    expect(response.statusCode).toBe(200);
    const span = await waitForTask(
      async () => spans.find((entry) => entry.links?.some((link) => link.traceId === trace)),
      (found) => found !== undefined,
    );
    expect(span?.name).toBe('taskgate.task.attempt');
  });

  it('link to a creation span of their own when the caller sent none, or an invalid one', async () => {
    for (const traceparent of [undefined, '00-zzzz-not-a-traceparent', `00-${'0'.repeat(32)}-${PARENT}-01`]) {
      const created = await api.app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: traceparent === undefined ? {} : { traceparent },
        payload: { tool: 'echo_traced', arguments: { text: 'untraced' } },
      });
      const task = await completed(created.json().id);
      expect(task.traceParent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const span = await attemptOf(task.id);
      const creation = await waitForTask(
        async () =>
          spans.find((entry) => entry.name === 'taskgate.task.create' && entry.spanId === span.links?.[0]?.spanId),
        (found) => found !== undefined,
      );
      expect(creation?.traceId).toBe(task.traceParent?.split('-')[1]);
    }
  });

  it('nest the creation under the HTTP server span, and Postgres spans under the creation and the attempt', async () => {
    const trace = 'a3ce929d0e0e47364bf92f3577b34da6';
    const { port } = api.app.server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${trace}-${PARENT}-01` },
      body: JSON.stringify({ tool: 'echo_traced', arguments: { text: 'nested' } }),
    });
    expect(response.status).toBe(201);
    const task = await completed(((await response.json()) as { id: string }).id);

    // instrumentation-http's span, a child of the caller's, holds the creation's.
    const server = await spanWhere((span) => span.traceId === trace && span.parentSpanId === PARENT);
    expect(server.kind).toBe(SERVER);
    expect(server.name).toBe('POST /v1/tasks');
    expect(attribute(server, 'http.route')).toEqual({ stringValue: '/v1/tasks' });
    expect(attribute(server, 'http.request.method') ?? attribute(server, 'http.method')).toEqual({
      stringValue: 'POST',
    });
    const creation = await spanWhere(
      (span) => span.name === 'taskgate.task.create' && span.parentSpanId === server.spanId,
    );
    expect(creation.traceId).toBe(trace);
    // instrumentation-pg's spans of the INSERT are the creation's children.
    await spanWhere((span) => span.parentSpanId === creation.spanId && isPostgres(span));

    // The attempt: linked to the caller, and the parent of its run's Postgres spans.
    const attempt = await attemptOf(task.id);
    expect(attempt.links).toEqual([expect.objectContaining({ traceId: trace, spanId: PARENT })]);
    const queries = await waitForTask(
      async () => spans.filter((span) => span.parentSpanId === attempt.spanId && isPostgres(span)),
      (found) => found.length > 0,
    );
    expect(queries.every((span) => span.traceId === attempt.traceId)).toBe(true);
  });
});
