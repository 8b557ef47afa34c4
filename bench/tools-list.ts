// tools/list over HTTP /mcp with 200 tools in the catalog: p50 and p99, closed loop, one connection
// and then CONNECTIONS of them, SECONDS each. Taskgate's API as a split deployment runs it (an API
// process with no module loaded: it answers from its in-memory copy of the catalog, which a worker
// instance — here a heartbeat that publishes 200 definitions — keeps listed), next to the official
// SDK v1 server with the same 200 tools registered (stateless Streamable HTTP, a server and a
// transport per request as the SDK's stateless example does), driven by the same load generator in
// the same run. The load generator is a process of its own (bench/support/http-load.ts). A third
// row is the floor of this machine: a bare Fastify route sending the same bytes (no MCP, no
// catalog), so a p99 over the goal can be told apart from one the machine itself imposes. Every
// row's figure is from writing the request to reading the last byte of a complete answer (the
// load generator checks each one; see http-load.ts for why it does not build the body as text).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- tools-list
import { createKysely, createPool, InstanceHeartbeat, publishTools } from '@taskgate/db';
import { toolCatalogEntry } from '@taskgate/reliability';
import Fastify from 'fastify';
import { z } from 'zod';
import { silentLogger, startLoopbackApi } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { type LoadRequest, type LoadResult, loadFromChild } from './support/http-load.ts';
import { below, figure, printTable, reportGoals } from './support/report.ts';
import { startSdkAnchor } from './support/sdk-anchor.ts';

const TOOLS = Number(process.env.TOOLS ?? 200);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 8);
const SECONDS = Number(process.env.SECONDS ?? 5);
const rows: Record<string, string | number>[] = [];

/** A plausible tool: a title, a sentence of description, four typed arguments, annotations. */
function definition(index: number) {
  const name = `tool_${String(index).padStart(3, '0')}`;
  return {
    name,
    title: `Tool ${index}`,
    description: `Looks up record ${index} in the inventory and returns its fields; safe to call again.`,
    inputSchema: {
      type: 'object',
      properties: {
        sku: { type: 'string', maxLength: 64, description: 'the stock keeping unit' },
        quantity: { type: 'integer', minimum: 1, maximum: 1000 },
        warehouse: { type: 'string', enum: ['north', 'south', 'east', 'west'] },
        note: { type: 'string', maxLength: 500 },
      },
      required: ['sku'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, idempotentHint: true },
    retry: 'safe',
    timeouts: { maxMs: 30_000 },
  } as const;
}
const definitions = Array.from({ length: TOOLS }, (_, index) => definition(index));

/**
 * tools/list as a 2026-07-28 client sends it, or as a 2025-11-25 one does without a session
 * (`legacy`; the SDK v1 anchor is sent that, without MCP-Protocol-Version, which it defaults).
 */
const listRequest = (legacy: boolean, versionHeader = false): LoadRequest => ({
  expect: definitions.at(-1)?.name as string,
  headers: legacy
    ? {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(versionHeader ? { 'mcp-protocol-version': '2025-11-25' } : {}),
      }
    : {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: '{{id}}',
    method: 'tools/list',
    params: legacy
      ? {}
      : {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
  }),
});

const database = await benchDatabase();
try {
  // The worker side: an instance that publishes the definitions and heartbeats, as a worker does.
  const db = createKysely(createPool(database.url, { applicationName: 'bench-tools-list', max: 2 }));
  const entries = definitions.map((tool) => toolCatalogEntry({ ...tool, handler: async () => ({ content: [] }) }));
  const heartbeat = new InstanceHeartbeat({
    db,
    identity: { id: 'bench-worker', kind: 'worker', host: 'bench', pid: process.pid },
    logger: silentLogger,
    onRegistered: async () => {
      await publishTools(db, 'bench-worker', entries);
    },
  });
  await heartbeat.start();
  const api = await startLoopbackApi(database.url);
  const ours = new URL(api.url).origin;
  for (const connections of [1, CONNECTIONS]) {
    await load(ours, listRequest(false), connections, 2); // warm-up
    rows.push(
      row(
        `taskgate /mcp, catalog of ${TOOLS}, ${connections} conn.`,
        await load(ours, listRequest(false), connections),
      ),
    );
  }
  // The clients deployed today speak 2025-11-25: the same list in that revision's shape.
  await load(ours, listRequest(true, true), 1, 2);
  rows.push(
    row(`taskgate /mcp 2025-11-25 request, catalog of ${TOOLS}, 1 conn.`, await load(ours, listRequest(true, true), 1)),
  );
  // The same answer's bytes, for the floor below: a Buffer, the cheapest body Fastify sends.
  const answer = Buffer.from(
    await (await fetch(`${ours}/mcp`, { method: 'POST', ...listRequest(false) })).arrayBuffer(),
  );
  await api.stop();
  await heartbeat.stop();
  await db.destroy();

  const anchor = await startSdkAnchor(
    (mcp) => {
      for (const tool of definitions) {
        mcp.registerTool(
          tool.name,
          {
            title: tool.title,
            description: tool.description,
            inputSchema: {
              sku: z.string().max(64).describe('the stock keeping unit'),
              quantity: z.number().int().min(1).max(1000).optional(),
              warehouse: z.enum(['north', 'south', 'east', 'west']).optional(),
              note: z.string().max(500).optional(),
            },
            annotations: tool.annotations,
          },
          async () => ({ content: [] }),
        );
      }
    },
    { json: true },
  );
  const anchorUrl = anchor.url;
  for (const connections of [1, CONNECTIONS]) {
    await load(anchorUrl, listRequest(true), connections, 2);
    rows.push(
      row(
        `SDK v1 stateless server, ${TOOLS} tools registered, ${connections} conn.`,
        await load(anchorUrl, listRequest(true), connections),
      ),
    );
  }
  anchor.close();

  const floor = Fastify();
  floor.post('/mcp', async (_request, reply) => reply.type('application/json; charset=utf-8').send(answer));
  const floorUrl = await floor.listen({ host: '127.0.0.1', port: 0 });
  await load(floorUrl, listRequest(false), 1, 2);
  rows.push(
    row(
      `floor: a bare Fastify route sending the same ${Math.round(answer.length / 1024)} KB, 1 conn.`,
      await load(floorUrl, listRequest(false), 1),
    ),
  );
  await floor.close();
} finally {
  await database.drop();
}
printTable(`tools/list over HTTP with ${TOOLS} tools, closed loop, ${SECONDS} s each`, rows);
reportGoals({ TOOLS, CONNECTIONS, SECONDS }, [
  {
    metric: `MCP tools/list p99, ${TOOLS} tools in the catalog, 1 connection`,
    unit: 'ms',
    rule: below(5),
    ours: figure(rows, 'taskgate /mcp, catalog of', 'p99 ms'),
    anchor: { label: 'SDK v1 stateless server', value: figure(rows, 'SDK v1', 'p99 ms') },
  },
]);
process.exit(0);

function load(origin: string, request: LoadRequest, connections: number, seconds = SECONDS): Promise<LoadResult> {
  return loadFromChild(origin, request, { connections, seconds });
}

function row(path: string, result: LoadResult) {
  return {
    path,
    'calls/s': result.calls / result.seconds,
    errors: result.errors,
    'p50 ms': result.p50,
    'p99 ms': result.p99,
  };
}
