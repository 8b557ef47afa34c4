import { describe, expect, it } from 'vitest';
import { LegacySessions } from './legacy-sessions.ts';

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
