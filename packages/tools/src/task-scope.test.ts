import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RaceLostError, TaskCancelledError } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskScope } from './task-scope.ts';

// The fan-out and fetch of a task's scope. Orders are forced by promises each branch resolves
// (it started, it cleaned up), never by timing; the HTTP server below holds a request until its
// client goes away, and says when it saw that.
const settings = { spawnGraceMs: 2_000, idempotencyKey: 'key-1', log: () => {} };

let server: http.Server;
let origin: string;
const seen: { headers: http.IncomingHttpHeaders }[] = [];
let heldClosed: () => void = () => {};
beforeAll(async () => {
  server = http.createServer((request, response) => {
    seen.push({ headers: request.headers });
    if (request.url === '/hold') {
      response.writeHead(200);
      response.write('partial');
      request.on('close', () => heldClosed());
      return;
    }
    response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves with the signal's reason once it aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

describe('ctx.fetch', () => {
  it('sends the call’s idempotency key when asked, under the header named, and keeps one the request sets', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    seen.length = 0;
    await scope.fetch(`${origin}/a`, { idempotencyKey: true });
    await scope.fetch(`${origin}/b`, { idempotencyKey: 'X-Request-Key' });
    await scope.fetch(`${origin}/c`, { idempotencyKey: true, headers: { 'idempotency-key': 'mine' } });
    await scope.fetch(`${origin}/d`);
    await taskScope(new AbortController().signal, { ...settings, idempotencyKey: null }).fetch(`${origin}/e`, {
      idempotencyKey: true,
    });
    expect(seen.map(({ headers }) => [headers['idempotency-key'], headers['x-request-key']])).toEqual([
      ['key-1', undefined],
      [undefined, 'key-1'],
      ['mine', undefined],
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });

  it('aborts a request in flight on the task’s stop, rejecting with the stop reason; the server sees it close', async () => {
    const stop = new AbortController();
    const scope = taskScope(stop.signal, settings);
    const closed = deferred();
    heldClosed = closed.resolve;
    const response = await scope.fetch(`${origin}/hold`);
    const body = response.text();
    const reason = new TaskCancelledError('no longer needed');
    stop.abort(reason);
    await expect(body).rejects.toBe(reason);
    await closed.promise;
  });

  it('refuses options of the wrong type', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    await expect(scope.fetch(`${origin}/a`, { idempotencyKey: 1 as never })).rejects.toThrow(
      'ctx.fetch: init.idempotencyKey must be true, false or a header name',
    );
    await expect(scope.fetch(`${origin}/a`, 'GET' as never)).rejects.toThrow('ctx.fetch: init must be an object');
  });
});

describe('ctx.all', () => {
  it('resolves with every branch’s result, in order', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const later = deferred();
    const results = scope.all([
      async () => {
        await later.promise;
        return 'slow';
      },
      async () => 'quick',
    ]);
    later.resolve();
    expect(await results).toEqual(['slow', 'quick']);
  });

  it('aborts the siblings of a branch that fails, and rejects with its error once they have settled', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const events: string[] = [];
    const failure = new Error('the charge was refused');
    const waiting = deferred();
    const result = scope.all([
      async (branch) => {
        waiting.resolve();
        const reason = await aborted(branch.signal);
        events.push(`sibling saw ${(reason as Error).message}`);
        // Cleaning up takes a turn or two: all() must wait for it.
        await Promise.resolve();
        events.push('sibling cleaned up');
        throw reason;
      },
      async () => {
        await waiting.promise;
        throw failure;
      },
    ]);
    await expect(result).rejects.toBe(failure);
    events.push('all() rejected');
    expect(events).toEqual(['sibling saw the charge was refused', 'sibling cleaned up', 'all() rejected']);
  });

  it('a failing branch ends its sibling’s subprocess tree before all() answers', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const seconds = `${randomInt(100_000, 999_999)}.${randomInt(1_000, 9_999)}`;
    const result = scope.all([
      (branch) => branch.spawn('sh', ['-c', `sleep ${seconds} & sleep ${seconds} & wait`]),
      async () => {
        while (liveSleeps(seconds) < 2) await new Promise((resolve) => setTimeout(resolve, 10));
        throw new Error('the other branch failed');
      },
    ]);
    await expect(result).rejects.toThrow('the other branch failed');
    expect(liveSleeps(seconds)).toBe(0);
  });

  it('stops every branch when the task stops, and rejects with the task’s reason', async () => {
    const stop = new AbortController();
    const scope = taskScope(stop.signal, settings);
    const started = deferred();
    const result = scope.all([
      async (branch) => {
        started.resolve();
        await branch.sleep(60_000);
      },
      async (branch) => branch.sleep(60_000),
    ]);
    await started.promise;
    const reason = new TaskCancelledError('stop');
    stop.abort(reason);
    await expect(result).rejects.toBe(reason);
  });

  it('runs nested fan-out under the branch’s signal', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const inner: unknown[] = [];
    const outer = scope.all([
      (branch) =>
        branch.all([
          async (leaf) => {
            inner.push(await aborted(leaf.signal));
          },
        ]),
      async () => {
        throw new Error('outer sibling failed');
      },
    ]);
    await expect(outer).rejects.toThrow('outer sibling failed');
    expect((inner[0] as Error).message).toBe('outer sibling failed');
  });

  it('refuses what is not an array of functions', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    await expect(scope.all('x' as never)).rejects.toThrow('ctx.all: branches must be an array of functions');
    await expect(scope.all([1] as never)).rejects.toThrow('ctx.all: branches must be an array of functions');
    expect(await scope.all([])).toEqual([]);
  });
});

describe('ctx.race', () => {
  it('answers the first success, once the losers have seen RaceLostError and settled', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const events: string[] = [];
    const result = scope.race([
      async (branch) => {
        const reason = await aborted(branch.signal);
        events.push(reason instanceof RaceLostError ? 'loser stopped' : 'loser saw something else');
        throw reason;
      },
      async () => 'winner',
    ]);
    expect(await result).toBe('winner');
    events.push('race() resolved');
    expect(events).toEqual(['loser stopped', 'race() resolved']);
  });

  it('a failure does not end the race while another branch can still win', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const failed = deferred();
    const result = scope.race([
      async () => {
        failed.resolve();
        throw new Error('first branch failed');
      },
      async () => {
        await failed.promise;
        return 'second won';
      },
    ]);
    expect(await result).toBe('second won');
  });

  it('rejects with the first failure when every branch fails; needs a branch', async () => {
    const scope = taskScope(new AbortController().signal, settings);
    const first = new Error('first');
    await expect(
      scope.race([
        async () => {
          throw first;
        },
        async () => {
          await Promise.resolve();
          throw new Error('second');
        },
      ]),
    ).rejects.toBe(first);
    await expect(scope.race([])).rejects.toThrow('ctx.race: give it at least one branch');
  });
});

/** Live (not zombie) `sleep <seconds>` processes. */
function liveSleeps(seconds: string): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\u0000');
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (argv[0]?.endsWith('sleep') && argv[1] === seconds && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') {
        count += 1;
      }
    } catch {
      // Gone between the listing and the read.
    }
  }
  return count;
}
