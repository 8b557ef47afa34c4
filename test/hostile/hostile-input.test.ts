import net from 'node:net';
import { type McpCore, TaskEventsHub } from '@taskgate/api';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerDatabase } from '../../examples/ledger/ledger-schema.ts';
import { setStock } from '../../examples/ledger/ledger-store.ts';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { type RowCounts, rowCounts } from '../support/row-counts.ts';
import { connectStdio, type StdioClient, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';
import { MCP_CASES, type McpCase, STDIO_CASES, type StdioCase } from './mcp-cases.ts';
import { REST_CASES, type RestCase, type SocketCase, TOKEN } from './rest-cases.ts';

// The hostile-input corpus: one table of requests over REST (inject and raw sockets), MCP over
// HTTP and MCP over stdio. Each case must get its documented status and stable code, none may get
// a 5xx, and none may write a row: the server under test is in the default mode (bound to loopback,
// here with a token) and every table a request could write to is counted after each case.
const database = useTestDatabase();
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let port: number;
let hub: TaskEventsHub;
let core: McpCore;
let stdio: StdioClient;
let baseline: RowCounts;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url, {
    tokens: new Map([[TOKEN, 'acme']]),
    mcp: { loopbackOnly: true },
    // Short, so the unfinished bodies are answered quickly; every other socket case arrives whole.
    requestTimeoutMs: 300,
  });
  port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
  stdio = connectStdio(core);
  // Stock exists so a refused restock is told apart from a first one; this is the baseline.
  await setStock(platform.db as unknown as Kysely<LedgerDatabase>, 'acme', 'sku-h', 3);
  baseline = await rowCounts(platform.db);
});
afterAll(async () => {
  stdio?.input.end();
  await stdio?.server.closed;
  await hub?.stop();
  await api?.close();
  await platform?.stop();
});

type Case = RestCase | SocketCase | McpCase | StdioCase;
const CORPUS: readonly Case[] = [...REST_CASES, ...MCP_CASES, ...STDIO_CASES];

describe('the hostile-input corpus', () => {
  it('has at least 300 cases with distinct names, over every transport', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(300);
    expect(new Set(CORPUS.map((entry) => `${entry.transport} ${entry.name}`)).size).toBe(CORPUS.length);
    for (const transport of ['rest', 'socket', 'mcp', 'stdio']) {
      expect(CORPUS.filter((entry) => entry.transport === transport).length, transport).toBeGreaterThan(5);
    }
  });

  it.each(CORPUS.map((entry) => [`${entry.transport}: ${entry.name}`, entry] as const))('%s', async (_name, entry) => {
    // Per case, so a case that writes fails alone, not every case after it.
    const before = await rowCounts(platform.db);
    switch (entry.transport) {
      case 'rest':
        await runRest(entry);
        break;
      case 'socket':
        await runSocket(entry);
        break;
      case 'mcp':
        await runMcp(entry);
        break;
      case 'stdio':
        await runStdio(entry);
        break;
    }
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('left every table as it was before the corpus ran', async () => {
    expect(await rowCounts(platform.db)).toEqual(baseline);
  });
});

async function runRest(entry: RestCase) {
  const response = await api.app.inject(entry.request);
  expect(response.statusCode).toBeLessThan(500);
  expectProblem(response, entry.status, entry.code);
}

async function runSocket(entry: SocketCase) {
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    if (entry.open) socket.write(Buffer.from(entry.bytes, 'latin1'));
    else socket.end(Buffer.from(entry.bytes, 'latin1'));
  });
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const headers = Object.fromEntries(
    head
      .split('\r\n')
      .slice(1)
      .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  const statusCode = Number(head.split(' ')[1]);
  expect(statusCode).toBeLessThan(500);
  expectProblem({ statusCode, headers, body }, entry.status, entry.code);
}

async function runMcp(entry: McpCase) {
  const response = await api.app.inject(entry.request);
  expect(response.statusCode).toBeLessThan(500);
  expect({ status: response.statusCode, body: response.body.slice(0, 300) }).toMatchObject({ status: entry.status });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(body).toMatchObject({ jsonrpc: '2.0', error: { code: entry.rpc, message: expect.any(String) } });
  if (entry.code !== undefined) expect(body.error.data?.code).toBe(entry.code);
  if (entry.id !== undefined) expect(body.id).toBe(entry.id);
}

let sentinel = 0;

/**
 * Writes the line, then a sentinel request; the sentinel's answer comes after the case's own
 * refusal (those are written synchronously), and the case's answer, if it has an id, is awaited
 * by id. Exactly the expected answer — or none — must have arrived in between.
 */
async function runStdio(entry: StdioCase) {
  const start = stdio.received.length;
  stdio.input.write(entry.line);
  stdio.input.write('\n');
  const id = `sentinel-${sentinel++}`;
  stdio.send({
    jsonrpc: '2.0',
    id,
    method: 'server/discover',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
  });
  await stdio.answerTo(id);
  if (entry.answer?.id !== null && entry.answer?.id !== undefined) await stdio.answerTo(entry.answer.id);
  const answers = stdio.received.slice(start).filter((message) => message.id !== id);
  if (entry.answer === null) {
    expect(answers).toEqual([]);
    return;
  }
  expect(answers).toHaveLength(1);
  const answer = answers[0] as { error?: { data?: { code?: unknown } } };
  expect(answer).toMatchObject({ jsonrpc: '2.0', id: entry.answer.id, error: { code: entry.answer.rpc } });
  if (entry.answer.code !== undefined) expect(answer.error?.data?.code).toBe(entry.answer.code);
}
