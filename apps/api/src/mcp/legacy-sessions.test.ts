import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SseStream } from '../sse/sse-stream.ts';
import type { ResourceSubscriptions } from './dispatch/resource-subscriptions.ts';
import { LegacySessions, memorySessionStore } from './legacy-sessions.ts';

// A session signal (a cancel or response another instance took) acts only on a request this
// process holds, of that session, of that tenant.
describe('LegacySessions.onSignal', () => {
  it('cancels a request held here, of the named session and tenant only', async () => {
    const sessions = new LegacySessions();
    const id = await sessions.open('acme', '2025-11-25');
    const scope = await sessions.scopeOf(id, 'acme');
    if (!scope) throw new Error('no scope');
    scope.requests.begin(5, 'tools/call');
    const controller = new AbortController();
    scope.controllers.set('n:5', controller);
    const cancel = (tenantId: string, sessionId: string, requestId: string | number) =>
      sessions.onSignal({ kind: 'cancel', tenantId, sessionId, requestId, reason: 'stop' });
    expect(cancel('globex', id, 5)).toBe(false);
    expect(cancel('acme', crypto.randomUUID(), 5)).toBe(false);
    // "5" is not 5: ids are compared as JSON-RPC has them.
    expect(cancel('acme', id, '5')).toBe(false);
    expect(controller.signal.aborted).toBe(false);
    expect(cancel('acme', id, 5)).toBe(true);
    expect(controller.signal.aborted).toBe(true);
    expect((controller.signal.reason as Error).message).toBe('stop');
    // Once cancelled, a second signal finds nothing to do.
    expect(cancel('acme', id, 5)).toBe(false);
  });

  it('a response answers only a request of the server’s waiting in that session', async () => {
    const sessions = new LegacySessions();
    const id = await sessions.open('acme', '2025-11-25', { elicitation: {} });
    const scope = await sessions.scopeOf(id, 'acme');
    if (!scope) throw new Error('no scope');
    const sent: Record<string, unknown>[] = [];
    const asked = scope.clientRequests.ask(
      'roots/list',
      {},
      (message) => sent.push(message),
      new AbortController().signal,
    );
    const requestId = sent[0]?.id;
    const respond = (tenantId: string) =>
      sessions.onSignal({
        kind: 'response',
        tenantId,
        sessionId: id,
        message: { jsonrpc: '2.0', id: requestId, result: { roots: [] } },
      });
    expect(respond('globex')).toBe(false);
    expect(respond('acme')).toBe(true);
    await expect(asked).resolves.toEqual({ roots: [] });
  });
});

// A client may vanish without DELETE: what its session holds here goes when the route's sweep
// finds it idle, with no other session opened to trigger it; one with a request running stays.
describe('LegacySessions.sweep', () => {
  it('lets an idle session go, and keeps a busy or fresh one', async () => {
    let now = 0;
    const sessions = new LegacySessions({ idleMs: 1_000, now: () => now });
    const idle = await sessions.open('acme', '2025-11-25');
    const busy = await sessions.open('acme', '2025-11-25');
    // A request still running in the busy one.
    (await sessions.scopeOf(busy, 'acme'))?.controllers.set('n:1', new AbortController());
    now = 1_000;
    sessions.sweep();
    expect(sessions.heldScope(idle, 'acme')).not.toBeNull();
    now = 1_001;
    sessions.sweep();
    expect(sessions.heldScope(idle, 'acme')).toBeNull();
    expect(sessions.heldScope(busy, 'acme')).not.toBeNull();
  });
});

// A session's resources/subscribe URIs are kept in its store, so the instance holding its GET
// stream watches them whichever instance took the request; watches (content watch rows, task
// watches) run only there, and only while the stream is open.
describe('LegacySessions resource watches', () => {
  /** A response an SseStream can write to: nothing is sent anywhere. */
  const response = () => {
    const emitter = new EventEmitter();
    return Object.assign(emitter, {
      writeHead: () => {},
      flushHeaders: () => {},
      write: () => true,
      end: () => emitter.emit('close'),
    }) as unknown as ServerResponse;
  };

  it('watches what any instance subscribed, only while the session’s GET stream is here', async () => {
    const store = memorySessionStore();
    const events: string[] = [];
    const watches = (): ResourceSubscriptions => ({
      has: () => false,
      subscribe: (uri) => events.push(`+${uri}`) > 0,
      unsubscribe: (uri) => {
        events.push(`-${uri}`);
      },
      stop: () => events.push('stop'),
    });
    const holder = new LegacySessions({ store, watches });
    const other = new LegacySessions({ store, watches });
    const id = await holder.open('acme', '2025-11-25');
    await other.scopeOf(id, 'acme');
    expect(await other.subscriptionsOf(id)?.subscribe('a://1')).toBe(true);
    // No stream anywhere yet: nothing is watched.
    expect(events).toEqual([]);
    const stream = new SseStream(response(), { capacity: 1, coalesce: 'by-key', keepaliveMs: 60_000 });
    expect(await holder.attachStream(id, 'acme', stream)).toBe(true);
    expect(events).toEqual(['+a://1']);
    await other.subscriptionsOf(id)?.subscribe('a://2');
    await other.subscriptionsOf(id)?.unsubscribe('a://1');
    // No signal reaches the holder here: the session's next request there reads them again.
    await holder.scopeOf(id, 'acme');
    expect(events).toEqual(['+a://1', '-a://1', '+a://2']);
    stream.close();
    expect(events).toEqual(['+a://1', '-a://1', '+a://2', 'stop']);
  });
});

// The bound on sessions held here makes room for a new one, never by dropping a session whose
// request runs here; and the timer's sweep drops only idle sessions, however full the map is.
describe('LegacySessions at its bound', () => {
  it('a sweep of a full map with nobody idle keeps every session', async () => {
    let now = 0;
    const sessions = new LegacySessions({ idleMs: 60_000, max: 3, now: () => now });
    const ids = [
      await sessions.open('acme', '2025-11-25'),
      await sessions.open('acme', '2025-11-25'),
      await sessions.open('acme', '2025-11-25'),
    ];
    now = 1_000;
    sessions.sweep();
    for (const id of ids) expect(sessions.heldScope(id, 'acme')).not.toBeNull();
  });

  it('a new session makes room by the oldest session with no request running, not the oldest', async () => {
    const sessions = new LegacySessions({ max: 2 });
    const busy = await sessions.open('acme', '2025-11-25');
    const quiet = await sessions.open('acme', '2025-11-25');
    const controller = new AbortController();
    sessions.heldScope(busy, 'acme')?.controllers.set('n:1', controller);
    const fresh = await sessions.open('acme', '2025-11-25');
    expect(sessions.heldScope(busy, 'acme')).not.toBeNull();
    expect(sessions.heldScope(quiet, 'acme')).toBeNull();
    expect(sessions.heldScope(fresh, 'acme')).not.toBeNull();
    // The busy session's request is still reachable: a cancel signal finds it.
    sessions.heldScope(busy, 'acme')?.requests.begin(1, 'tools/call');
    expect(sessions.onSignal({ kind: 'cancel', tenantId: 'acme', sessionId: busy, requestId: 1, reason: 'x' })).toBe(
      true,
    );
    expect(controller.signal.aborted).toBe(true);
  });

  it('a held scope is the tenant’s own only', async () => {
    const sessions = new LegacySessions();
    const id = await sessions.open('acme', '2025-11-25');
    expect(sessions.heldScope(id, 'globex')).toBeNull();
    expect(sessions.heldScope(crypto.randomUUID(), 'acme')).toBeNull();
  });
});
