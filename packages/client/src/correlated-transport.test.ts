import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { correlatedTransport, type WireRequest } from './correlated-transport.ts';
import { CorrelationTable } from './correlation-table.ts';

async function pair() {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  serverSide.onmessage = (message) => {
    received.push(message);
  };
  await serverSide.start();
  const table = new CorrelationTable<WireRequest>({ now: () => 0 });
  return { clientSide, serverSide, received, table };
}

describe('correlatedTransport', () => {
  it('never cancels initialize: the SDK times it out, and no notifications/cancelled reaches the server', async () => {
    const { clientSide, received, table } = await pair();
    const client = new Client({ name: 't', version: '1' }, { capabilities: {} });
    await expect(client.connect(correlatedTransport(clientSide, table).transport, { timeout: 20 })).rejects.toThrow(
      /timed out/,
    );
    expect(received.map((message) => (message as { method?: string }).method)).toEqual(['initialize']);
    // Abandoned all the same: an answer after the timeout is late, not delivered.
    expect(table.stats.tombstones).toBe(1);
  });

  it("maps the server's answer back to the SDK's id, and passes the server's own requests through", async () => {
    const { clientSide, serverSide, received, table } = await pair();
    const wire = correlatedTransport(clientSide, table).transport;
    const seen: JSONRPCMessage[] = [];
    wire.onmessage = (message) => {
      seen.push(message);
    };
    await wire.start();
    await wire.send({ jsonrpc: '2.0', id: 0, method: 'ping' });
    const wireId = (received[0] as { id: number }).id;
    expect(wireId).toBe(1);
    await serverSide.send({ jsonrpc: '2.0', id: wireId, result: {} });
    await serverSide.send({ jsonrpc: '2.0', id: 0, method: 'roots/list' });
    expect(seen).toEqual([
      { jsonrpc: '2.0', id: 0, result: {} },
      { jsonrpc: '2.0', id: 0, method: 'roots/list' },
    ]);
  });

  it('tombstones a request whose own stream is aborted (the 2026-07-28 cancel over HTTP)', async () => {
    const { clientSide, serverSide, received, table } = await pair();
    const late: string[] = [];
    const wire = correlatedTransport(clientSide, table, { late: (method) => late.push(method) }).transport;
    wire.onmessage = () => {
      throw new Error('a late answer reached the SDK');
    };
    await wire.start();
    const stream = new AbortController();
    await (wire.send as (m: JSONRPCMessage, o: unknown) => Promise<void>)(
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } },
      { requestSignal: stream.signal },
    );
    stream.abort();
    await serverSide.send({ jsonrpc: '2.0', id: (received[0] as { id: number }).id, result: {} });
    expect(late).toEqual(['tools/call']);
  });
});
