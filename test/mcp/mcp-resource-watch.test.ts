import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { defineResource, defineResourceTemplate } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { connectStdio, testCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// A module resource's change signal (its definition's `watch`): a subscribing connection's watch
// starts at the subscribe and stops at the unsubscribe or when the connection goes; each change
// sends notifications/resources/updated — on the pipe for resources/subscribe, on the listen's
// stream (with its subscriptionId) for 2026-07-28's resourceSubscriptions.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;

/** The watches running now, by the tenant and URI they watch, with the function that signals a change. */
const watches = new Map<string, () => void>();
const started: string[] = [];
const stopped: string[] = [];
const watch = (key: string, changed: () => void) => {
  started.push(key);
  watches.set(key, changed);
  return () => {
    stopped.push(key);
    watches.delete(key);
  };
};
const config = defineResource({
  uri: 'config://app',
  name: 'app config',
  read: () => [{ text: '{}' }],
  watch: (changed, ctx) => watch(`${ctx.tenant} config://app`, changed),
});
const notes = defineResourceTemplate({
  uriTemplate: 'notes://{id}',
  name: 'a note',
  read: (_uri, { id }) => [{ text: `note ${id}` }],
  watch: (uri, { id }, changed, ctx) => watch(`${ctx.tenant} ${uri} ${id}`, changed),
});
const quiet = defineResource({ uri: 'static://readme', name: 'readme', read: () => [{ text: 'hi' }] });
const broken = defineResource({
  uri: 'broken://x',
  name: 'broken',
  read: () => [{ text: 'x' }],
  watch: () => {
    throw new Error('cannot watch');
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = testCore(platform, hub, { content: [{ resources: [config, quiet, broken], resourceTemplates: [notes] }] });
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

const updates = (received: Record<string, unknown>[]) =>
  received.filter((m) => m.method === 'notifications/resources/updated').map((m) => m.params);

describe('a module resource’s watch', () => {
  it('resources/subscribe on stdio: notified on each change until unsubscribed; the end of stdin stops it', async () => {
    const client = connectStdio(core, 'acme');
    client.send({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-11-25' } });
    await client.answerTo('i');
    for (const [id, uri] of [
      ['s1', 'config://app'],
      ['s2', 'notes://42'],
      ['s3', 'static://readme'],
      ['s4', 'broken://x'],
    ] as const) {
      client.send({ jsonrpc: '2.0', id, method: 'resources/subscribe', params: { uri } });
      expect(await client.answerTo(id)).toMatchObject({ result: {} });
    }
    expect(started).toEqual(['acme config://app', 'acme notes://42 42']);
    watches.get('acme config://app')?.();
    watches.get('acme notes://42 42')?.();
    await client.until((all) => updates(all).length === 2);
    expect(updates(client.received)).toEqual([{ uri: 'config://app' }, { uri: 'notes://42' }]);
    client.send({ jsonrpc: '2.0', id: 'u1', method: 'resources/unsubscribe', params: { uri: 'config://app' } });
    await client.answerTo('u1');
    expect(stopped).toEqual(['acme config://app']);
    client.input.end();
    await client.server.closed;
    // The connection went: its other watch stopped too.
    expect(stopped).toEqual(['acme config://app', 'acme notes://42 42']);
    expect(watches.size).toBe(0);
  });

  it('2026-07-28 subscriptions/listen: notified on the listen’s stream, and stopped with it', async () => {
    started.length = 0;
    stopped.length = 0;
    const client = connectStdio(core, 'globex');
    client.send({
      jsonrpc: '2.0',
      id: 'listen',
      method: 'subscriptions/listen',
      params: {
        notifications: { resourceSubscriptions: ['config://app'] },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    await client.until((all) => all.some((m) => m.method === 'notifications/subscriptions/acknowledged'));
    expect(started).toEqual(['globex config://app']);
    watches.get('globex config://app')?.();
    await client.until((all) => updates(all).length === 1);
    expect(updates(client.received)).toEqual([
      { uri: 'config://app', _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen' } },
    ]);
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'listen' } });
    await client.until(() => stopped.length === 1);
    expect(stopped).toEqual(['globex config://app']);
    client.input.end();
    await client.server.closed;
  });
});
