import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SseStream } from '../../../sse/sse-stream.ts';
import type { ResourceSubscriptions } from '../../core/subscriptions.ts';
import { HandshakeSessions, memorySessionStore, RESUME_WINDOW_MS, sessionStream } from './handshake-sessions.ts';

// A session signal (a cancel or response another instance took) acts only on a request this
// process holds, of that session, of that tenant.
describe('HandshakeSessions.onSignal', () => {
  it('cancels a request held here, of the named session and tenant only', async () => {
    const sessions = new HandshakeSessions();
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
    const sessions = new HandshakeSessions();
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
describe('HandshakeSessions.sweep', () => {
  it('lets an idle session go, and keeps a busy or fresh one', async () => {
    let now = 0;
    const sessions = new HandshakeSessions({ idleMs: 1_000, now: () => now });
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
describe('HandshakeSessions resource watches', () => {
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
    let now = 0;
    const holder = new HandshakeSessions({ store, watches, now: () => now });
    const other = new HandshakeSessions({ store, watches });
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
    // The stream may be resumed here for a while, and what it would have carried is kept: the
    // watches outlive it that long, and the sweep stops them after.
    now = RESUME_WINDOW_MS;
    holder.sweep();
    expect(events).toEqual(['+a://1', '-a://1', '+a://2']);
    now = RESUME_WINDOW_MS + 1;
    holder.sweep();
    expect(events).toEqual(['+a://1', '-a://1', '+a://2', 'stop']);
  });
});

/** A response that keeps what an SseStream writes, read back as SSE events. */
function recorder(options: { full?: boolean } = {}) {
  const emitter = new EventEmitter();
  let text = '';
  let ended = false;
  let full = options.full === true;
  const response = Object.assign(emitter, {
    writeHead: () => {},
    flushHeaders: () => {},
    write: (chunk: string) => {
      text += chunk;
      return !full;
    },
    end: () => {
      ended = true;
      emitter.emit('close');
    },
  }) as unknown as ServerResponse;
  /** Each event's id, retry and data (parsed; '' for none), as a client's parser reads them. */
  const events = () =>
    text
      .split('\n\n')
      .filter((frame) => frame !== '' && !frame.startsWith(':'))
      .map((frame) => {
        const field = (name: string) =>
          frame
            .split('\n')
            .find((line) => line.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        const data = field('data');
        return {
          ...(field('id') === undefined ? {} : { id: field('id') }),
          ...(field('retry') === undefined ? {} : { retry: Number(field('retry')) }),
          ...(data === undefined ? {} : { data: data === '' ? '' : (JSON.parse(data) as Record<string, unknown>) }),
        };
      });
  const drain = () => {
    full = false;
    emitter.emit('drain');
  };
  return { response, events, ended: () => ended, drain };
}

const listChanged = (kind: string) => ({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` });
const updated = (uri: string) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });

// A 2025-11-25 session's GET stream is resumable (transports "Resumability and Redelivery"): each
// event has an id; a GET with Last-Event-ID gets what was sent since, on the instance that held
// the stream, within the resume window; a resume nobody can answer exactly gets refetch hints.
describe('HandshakeSessions GET stream resumption', () => {
  /** Watches whose updates the test sends by hand: `update(uri)` is a change of that resource. */
  const manualWatches = () => {
    const pushes = new Set<(message: Record<string, unknown>) => void>();
    return {
      watches: (_tenantId: string, push: (message: Record<string, unknown>) => void): ResourceSubscriptions => {
        pushes.add(push);
        return { has: () => false, subscribe: () => true, unsubscribe: () => {}, stop: () => pushes.delete(push) };
      },
      update: (uri: string) => {
        for (const push of pushes) push(updated(uri));
      },
      get watching() {
        return pushes.size;
      },
    };
  };

  it('primes a 2025-11-25 stream with an id, and ids every message; an older revision gets no priming', async () => {
    const sessions = new HandshakeSessions();
    const current = await sessions.open('acme', '2025-11-25');
    const older = await sessions.open('acme', '2025-06-18');
    const primed = recorder();
    const plain = recorder();
    await sessions.attachStream(current, 'acme', sessionStream(primed.response, 60_000));
    await sessions.attachStream(older, 'acme', sessionStream(plain.response, 60_000));
    sessions.notifyStreams(listChanged('tools'), 'tools');

    const [priming, message] = primed.events();
    expect(priming?.data).toBe('');
    expect(priming?.id).toMatch(/^[0-9a-f-]{36}\.0$/);
    const stream = priming?.id?.split('.')[0];
    expect(message).toEqual({ id: `${stream}.1`, data: listChanged('tools') });
    // 2025-06-18's clients (SDK 1.22) would parse an empty data as a message: ids on messages only.
    expect(plain.events()).toHaveLength(1);
    expect(plain.events()[0]?.data).toEqual(listChanged('tools'));
    expect(plain.events()[0]?.id).toMatch(/\.1$/);
  });

  it('a resume gets what the dropped stream would have sent after Last-Event-ID, then goes on', async () => {
    let now = 0;
    const { watches, update } = manualWatches();
    const sessions = new HandshakeSessions({ watches, now: () => now });
    const id = await sessions.open('acme', '2025-11-25');
    await sessions.subscriptionsOf(id)?.subscribe('a://1');
    const first = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(first.response, 60_000));
    sessions.notifyStreams(listChanged('tools'), 'tools');
    const lastRead = first.events().at(-1)?.id as string;
    // The connection drops; meanwhile the tool list changes twice, the resource once, and the
    // prompts list once.
    first.response.emit('close');
    sessions.notifyStreams(listChanged('tools'), 'tools');
    update('a://1');
    sessions.notifyStreams(listChanged('prompts'), 'prompts');
    sessions.notifyStreams(listChanged('tools'), 'tools');
    now = RESUME_WINDOW_MS;
    sessions.sweep();

    const second = recorder();
    expect(await sessions.attachStream(id, 'acme', sessionStream(second.response, 60_000), lastRead)).toBe(true);
    sessions.notifyStreams(listChanged('resources'), 'resources');
    const stream = lastRead.split('.')[0];
    // Primed again with the client's id; then each key once, its latest, in order; the same
    // stream goes on.
    expect(second.events()).toEqual([
      { id: lastRead, data: '' },
      { id: `${stream}.3`, data: updated('a://1') },
      { id: `${stream}.4`, data: listChanged('prompts') },
      { id: `${stream}.5`, data: listChanged('tools') },
      { id: `${stream}.6`, data: listChanged('resources') },
    ]);
    // From the middle of the replay, only what came after.
    const third = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(third.response, 60_000), `${stream}.4`);
    expect(second.ended()).toBe(true);
    expect(third.events().map((event) => event.id)).toEqual([`${stream}.4`, `${stream}.5`, `${stream}.6`]);
  });

  it('a resume another instance held, or one past the window, gets refetch hints for everything', async () => {
    let now = 0;
    const store = memorySessionStore();
    const holder = new HandshakeSessions({ store, now: () => now, ...manualWatches() });
    const other = new HandshakeSessions({ store, ...manualWatches() });
    const id = await holder.open('acme', '2025-11-25');
    await holder.subscriptionsOf(id)?.subscribe('a://1');
    await holder.subscriptionsOf(id)?.subscribe('a://2');
    const first = recorder();
    await holder.attachStream(id, 'acme', sessionStream(first.response, 60_000));
    const lastRead = first.events()[0]?.id as string;
    first.response.emit('close');

    const hints = [
      listChanged('tools'),
      listChanged('resources'),
      listChanged('prompts'),
      updated('a://1'),
      updated('a://2'),
    ];
    const elsewhere = recorder();
    expect(await other.attachStream(id, 'acme', sessionStream(elsewhere.response, 60_000), lastRead)).toBe(true);
    expect(elsewhere.events().map((event) => event.data)).toEqual(hints);
    // A new stream: its own ids, which a later resume there answers exactly.
    const fresh = elsewhere.events().at(-1)?.id as string;
    expect(fresh.split('.')[0]).not.toBe(lastRead.split('.')[0]);
    elsewhere.response.emit('close');
    const back = recorder();
    await other.attachStream(id, 'acme', sessionStream(back.response, 60_000), fresh);
    expect(back.events()).toEqual([{ id: fresh, data: '' }]);

    // Past the window on the holder, before its sweep ran: hints, not a replay; so for a malformed id.
    now = RESUME_WINDOW_MS + 1;
    const late = recorder();
    await holder.attachStream(id, 'acme', sessionStream(late.response, 60_000), lastRead);
    expect(late.events().map((event) => event.data)).toEqual(hints);
    const garbled = recorder();
    await holder.attachStream(id, 'acme', sessionStream(garbled.response, 60_000), 'not an id\u0000');
    expect(garbled.events().map((event) => event.data)).toEqual(hints);
  });

  it('a resumed 2025-11-25 stream is primed again: a second drop before any message still resumes', async () => {
    // The SDK's client (1.32, StreamableHTTPClientTransport._handleSseStream) resumes from the last
    // id seen on the connection that dropped, not on an earlier one: a resumed connection that
    // carried no id makes its next reconnect a plain GET, a new stream, and what was sent between
    // that drop and the GET is lost. So a resume starts with the client's own id again.
    const sessions = new HandshakeSessions();
    const id = await sessions.open('acme', '2025-11-25');
    const first = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(first.response, 60_000));
    const primed = first.events()[0]?.id as string;
    first.response.emit('close');

    const second = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(second.response, 60_000), primed);
    // Nothing was missed, but the connection has an id to resume from.
    expect(second.events()).toEqual([{ id: primed, data: '' }]);
    second.response.emit('close');
    sessions.notifyStreams(listChanged('tools'), 'tools');

    const third = recorder();
    const lastSeen = second.events().at(-1)?.id as string;
    await sessions.attachStream(id, 'acme', sessionStream(third.response, 60_000), lastSeen);
    expect(third.events()).toEqual([
      { id: primed, data: '' },
      { id: `${primed.split('.')[0]}.1`, data: listChanged('tools') },
    ]);
  });

  it('a GET without Last-Event-ID is a new stream: nothing of the old one is replayed', async () => {
    const sessions = new HandshakeSessions();
    const id = await sessions.open('acme', '2025-11-25');
    const first = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(first.response, 60_000));
    first.response.emit('close');
    sessions.notifyStreams(listChanged('tools'), 'tools');
    const second = recorder();
    await sessions.attachStream(id, 'acme', sessionStream(second.response, 60_000));
    expect(second.events()).toEqual([{ id: expect.stringMatching(/\.0$/), data: '' }]);
    expect(second.events()[0]?.id).not.toBe(first.events()[0]?.id);
  });

  it('a reader that falls behind loses no kind of message: one slot per key', async () => {
    const { watches, update } = manualWatches();
    const sessions = new HandshakeSessions({ watches });
    const id = await sessions.open('acme', '2025-06-18');
    await sessions.subscriptionsOf(id)?.subscribe('a://1');
    const slow = recorder({ full: true });
    await sessions.attachStream(id, 'acme', sessionStream(slow.response, 60_000));
    sessions.notifyStreams(listChanged('prompts'), 'prompts'); // written; the socket is now full
    sessions.notifyStreams(listChanged('tools'), 'tools');
    update('a://1');
    sessions.notifyStreams(listChanged('resources'), 'resources');
    sessions.notifyStreams(listChanged('tools'), 'tools');
    slow.drain();
    expect(slow.events().map((event) => event.data)).toEqual([
      listChanged('prompts'),
      updated('a://1'),
      listChanged('resources'),
      listChanged('tools'),
    ]);
  });

  it('a server that closes tells each client a different time to wait before it reconnects', async () => {
    const sessions = new HandshakeSessions();
    const streams = [recorder(), recorder(), recorder()];
    for (const { response } of streams) {
      const id = await sessions.open('acme', '2025-11-25');
      await sessions.attachStream(id, 'acme', sessionStream(response, 60_000));
    }
    const draws = [0, 0.5, 0.999];
    sessions.closeStreams(() => draws.shift() as number);
    expect(streams.map((stream) => stream.events().at(-1)?.retry)).toEqual([1_000, 2_000, 2_998]);
    expect(streams.every((stream) => stream.ended())).toBe(true);
  });
});

// The bound on sessions held here makes room for a new one, never by dropping a session whose
// request runs here; and the timer's sweep drops only idle sessions, however full the map is.
describe('HandshakeSessions at its bound', () => {
  it('a sweep of a full map with nobody idle keeps every session', async () => {
    let now = 0;
    const sessions = new HandshakeSessions({ idleMs: 60_000, max: 3, now: () => now });
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
    const sessions = new HandshakeSessions({ max: 2 });
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
    const sessions = new HandshakeSessions();
    const id = await sessions.open('acme', '2025-11-25');
    expect(sessions.heldScope(id, 'globex')).toBeNull();
    expect(sessions.heldScope(crypto.randomUUID(), 'acme')).toBeNull();
  });
});
