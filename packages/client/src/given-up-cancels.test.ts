import { isTaskgateError, type TaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import type { Timers } from './call-clocks.ts';
import { GivenUpCancels } from './given-up-cancels.ts';

/** Timers that run only when the test fires them. */
function manualTimers() {
  const armed = new Map<number, { ms: number; run: () => void }>();
  let handles = 0;
  const timers: Timers = {
    now: () => 0,
    setTimeout: (run, ms) => {
      handles += 1;
      armed.set(handles, { ms, run });
      return handles;
    },
    clearTimeout: (handle) => {
      armed.delete(handle as number);
    },
  };
  /** Runs every timer armed for `ms`. */
  const fire = (ms: number) => {
    for (const [handle, timer] of [...armed]) {
      if (timer.ms !== ms) continue;
      armed.delete(handle);
      timer.run();
    }
  };
  return { timers, fire, armed: () => armed.size };
}

/** A RawRequest whose every request waits until the test answers it, in the order they were sent. */
function scriptedServer() {
  const sent: {
    method: string;
    params: Record<string, unknown>;
    answer: (response: Record<string, unknown>) => void;
    fail: (error: Error) => void;
  }[] = [];
  const waiters: (() => void)[] = [];
  const request = (method: string, params: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((answer, fail) => {
      sent.push({ method, params, answer, fail });
      for (const wake of waiters.splice(0)) wake();
    });
  /** The `n`th request sent (0-based), once it has been. */
  const nth = async (n: number) => {
    while (sent.length <= n) await new Promise<void>((wake) => waiters.push(wake));
    return sent[n] as (typeof sent)[number];
  };
  return { request, sent, nth };
}

function setup() {
  const clock = manualTimers();
  const server = scriptedServer();
  const reported: TaskgateError[] = [];
  const cancels = new GivenUpCancels(server.request, clock.timers, (error) => reported.push(error));
  return { ...clock, server, reported, cancels };
}

const ALREADY_ENDED = {
  error: { code: -32602, message: 'Invalid params: task t1 has already ended (completed) and cannot be cancelled' },
};

describe('GivenUpCancels', () => {
  it('reports nothing for an acknowledged cancel, and settle() waits for it, not for its clock', async () => {
    const { server, reported, cancels, armed } = setup();
    cancels.send('t1');
    const settled = cancels.settle([], 5_000);
    (await server.nth(0)).answer({ result: {} });
    await settled;
    expect(server.sent.map((request) => [request.method, request.params])).toEqual([
      ['tasks/cancel', { taskId: 't1' }],
    ]);
    expect(reported).toEqual([]);
    expect(armed()).toBe(0);
  });

  it('reports nothing for a cancel refused because its task had already ended', async () => {
    const { server, reported, cancels } = setup();
    cancels.send('t1');
    const settled = cancels.settle([], 5_000);
    (await server.nth(0)).answer(ALREADY_ENDED);
    const lookUp = await server.nth(1);
    expect([lookUp.method, lookUp.params]).toEqual(['tasks/get', { taskId: 't1' }]);
    lookUp.answer({ result: { taskId: 't1', status: 'completed' } });
    await settled;
    expect(reported).toEqual([]);
  });

  it('reports a refused cancel as soon as it is judged, with what the server answered and the task’s status', async () => {
    const { timers } = manualTimers();
    const server = scriptedServer();
    let reported!: (error: TaskgateError) => void;
    const report = new Promise<TaskgateError>((resolve) => {
      reported = resolve;
    });
    const cancels = new GivenUpCancels(server.request, timers, (error) => reported(error));
    cancels.send('t1');
    (await server.nth(0)).answer({ error: { code: -32602, message: 'Invalid params: no such task' } });
    (await server.nth(1)).answer({ result: { taskId: 't1', status: 'working' } });
    // No settle() (no close()): the report does not wait for one.
    const error = await report;
    expect(isTaskgateError(error, 'TG_TASK_CANCEL_UNCONFIRMED')).toBe(true);
    expect(error?.message).toBe(
      'tasks/cancel for task t1 was refused: the server answered -32602 (Invalid params: no such task); the task is working and may run to completion: look it up with tasks/get (cancelTask sends the cancel again)',
    );
    expect(error?.details).toEqual({
      taskId: 't1',
      answer: { code: -32602, message: 'Invalid params: no such task' },
      status: 'working',
    });
  });

  it('reports a cancel whose request failed (a 503), when the task cannot be looked up either', async () => {
    const { server, reported, cancels } = setup();
    cancels.send('t1');
    const settled = cancels.settle([], 5_000);
    (await server.nth(0)).fail(new Error('Error POSTing to endpoint (HTTP 503): unavailable'));
    (await server.nth(1)).fail(new Error('Error POSTing to endpoint (HTTP 503): unavailable'));
    await settled;
    expect(reported.map((error) => [error.code, error.message, error.details])).toEqual([
      [
        'TG_TASK_CANCEL_UNCONFIRMED',
        'tasks/cancel for task t1 failed: Error POSTing to endpoint (HTTP 503): unavailable; the task may run to completion: look it up with tasks/get (cancelTask sends the cancel again)',
        { taskId: 't1', failure: 'Error POSTing to endpoint (HTTP 503): unavailable' },
      ],
    ]);
  });

  it('reports a cancel not answered within the wait once, when its clock fires, and not again when it ends', async () => {
    const { server, reported, cancels, fire } = setup();
    cancels.send('t1');
    const cancel = await server.nth(0);
    let returned = false;
    const settled = cancels.settle([], 5_000).then(() => {
      returned = true;
    });
    expect(returned).toBe(false);
    fire(5_000);
    await settled;
    expect(returned).toBe(true);
    expect(reported.map((error) => [error.code, error.message, error.details])).toEqual([
      [
        'TG_TASK_CANCEL_UNCONFIRMED',
        'tasks/cancel for task t1 was not answered within 5000 ms of close(): the task may run to completion; look it up with tasks/get',
        { taskId: 't1', waitedMs: 5_000 },
      ],
    ]);
    // The connection closing cuts it off afterwards: that is the same cancel, reported already.
    cancel.fail(new Error('aborted'));
    await cancels.settle([], 5_000);
    expect(reported).toHaveLength(1);
    expect(server.sent).toHaveLength(1);
  });

  it('reports a refusal whose task was still being looked up when the wait ran out as refused', async () => {
    const { server, reported, cancels, fire } = setup();
    cancels.send('t1');
    const settled = cancels.settle([], 5_000);
    (await server.nth(0)).answer({ error: { code: -32001, message: 'forbidden' } });
    const lookUp = await server.nth(1);
    fire(5_000);
    await settled;
    lookUp.answer({ result: { taskId: 't1', status: 'completed' } });
    await cancels.settle([], 5_000);
    expect(reported.map((error) => error.details)).toEqual([
      { taskId: 't1', answer: { code: -32001, message: 'forbidden' } },
    ]);
  });

  it('waits for the notifications/cancelled sends beside it, at most as long', async () => {
    const { cancels, fire } = setup();
    let sent!: () => void;
    const send = new Promise<void>((resolve) => {
      sent = resolve;
    });
    const settled = cancels.settle([send], 5_000);
    sent();
    await settled;
    const stuck = cancels.settle([new Promise(() => {})], 5_000);
    fire(5_000);
    await stuck;
  });
});
