import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Lifecycle } from './lifecycle.ts';
import { createLogger } from './logger.ts';
import { LAUNCHER_PID_VARIABLE, orphanedAtStart, shouldStopWithParent, watchParent } from './parent-watch.ts';
import { DUPLICATE_SIGNAL_WINDOW_MS } from './stop-signals.ts';

const silent = createLogger('silent');

describe('Lifecycle.stopAll', () => {
  it('stops resources newest first', async () => {
    const order: string[] = [];
    const lifecycle = new Lifecycle(silent, 1_000);
    for (const name of ['database', 'worker', 'api']) {
      lifecycle.onStop(name, async () => {
        order.push(name);
      });
    }
    expect(await lifecycle.stopAll()).toEqual([]);
    expect(order).toEqual(['api', 'worker', 'database']);
  });

  it('keeps stopping the others when one fails, and reports it', async () => {
    const order: string[] = [];
    const lifecycle = new Lifecycle(silent, 1_000);
    lifecycle.onStop('database', async () => {
      order.push('database');
    });
    lifecycle.onStop('worker', async () => {
      throw new Error('pool already closed');
    });
    lifecycle.onStop('api', async () => {
      order.push('api');
    });
    expect(await lifecycle.stopAll()).toEqual(['worker: pool already closed']);
    expect(order).toEqual(['api', 'database']);
  });

  it('exits with TG_SHUTDOWN_TIMEOUT when stopping outlives the deadline', async () => {
    let exitCode: number | undefined;
    let exited!: () => void;
    const exit = new Promise<void>((resolve) => {
      exited = resolve;
    });
    const lifecycle = new Lifecycle(silent, 20, ((code: number) => {
      exitCode = code;
      exited();
    }) as (code: number) => never);
    lifecycle.onStop('stuck handler', () => exit);
    await lifecycle.stopAll();
    expect(exitCode).toBe(70);
  });

  it('names the stop that did not finish first when the deadline passes', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let exited!: () => void;
    const exit = new Promise<void>((resolve) => {
      exited = resolve;
    });
    const lifecycle = new Lifecycle(logger, 20, ((_code: number) => {
      exited();
    }) as (code: number) => never);
    lifecycle.onStop('database', async () => {});
    lifecycle.onStop('api', () => exit);
    await lifecycle.stopAll();
    expect(lines.find((line) => line.code === 'TG_SHUTDOWN_TIMEOUT')).toMatchObject({
      stopping: 'api',
      pending: ['api', 'database'],
    });
  });
});

describe('Lifecycle.receive', () => {
  function recorded() {
    const exits: number[] = [];
    const lifecycle = new Lifecycle(silent, 1_000, ((code: number) => {
      exits.push(code);
    }) as (code: number) => never);
    return { lifecycle, exits };
  }

  it('takes the same signal again within the window as the same stop request', async () => {
    const { lifecycle, exits } = recorded();
    lifecycle.receive('SIGINT', 10_000);
    lifecycle.receive('SIGINT', 10_000 + DUPLICATE_SIGNAL_WINDOW_MS - 1);
    expect(exits).toEqual([]);
    expect(lifecycle.stopping).toBe(true);
    expect(await lifecycle.stopRequested).toBe('SIGINT');
  });

  it('exits at once on the same signal after the window', () => {
    const { lifecycle, exits } = recorded();
    lifecycle.receive('SIGINT', 10_000);
    lifecycle.receive('SIGINT', 10_000 + DUPLICATE_SIGNAL_WINDOW_MS);
    expect(exits).toEqual([130]);
  });

  it('exits at once on a different signal, however soon', () => {
    const { lifecycle, exits } = recorded();
    lifecycle.receive('SIGINT', 10_000);
    lifecycle.receive('SIGTERM', 10_000);
    expect(exits).toEqual([143]);
  });
});

describe('watchParent', () => {
  it('reports the former parent once, when the parent pid changes', async () => {
    let ppid = 4242;
    const reports: number[] = [];
    const reported = new Promise<void>((resolve) => {
      watchParent(
        (former) => {
          reports.push(former);
          resolve();
        },
        { parent: 4242, ppid: () => ppid, intervalMs: 1 },
      );
    });
    ppid = 1;
    await reported;
    expect(reports).toEqual([4242]);
  });

  it('reports a parent that was already gone when the watch began', async () => {
    const former = await new Promise<number>((resolve) => {
      watchParent(resolve, { parent: 4242, ppid: () => 1, intervalMs: 1 });
    });
    expect(former).toBe(4242);
  });

  it('takes a start under PID 1 in a group of its own for a launcher that died before the first look', () => {
    // The orphan of a killed `sh -c` keeps the group of the npm it came from.
    expect(orphanedAtStart(1, () => 21940)).toBe(true);
    // npm as a container's PID 1 leads the group its children share: a live launcher.
    expect(orphanedAtStart(1, () => 1)).toBe(false);
    // …or whose group lies outside the container's pid namespace.
    expect(orphanedAtStart(1, () => 0)).toBe(false);
    expect(orphanedAtStart(4242, () => 21940)).toBe(false);
    expect(orphanedAtStart(1, () => null)).toBe(false);
  });

  it('is wanted under npm and under the bin launcher that started this process, not otherwise', () => {
    expect(shouldStopWithParent({ npm_lifecycle_event: 'npx' }, 10)).toBe(true);
    expect(shouldStopWithParent({ [LAUNCHER_PID_VARIABLE]: '10' }, 10)).toBe(true);
    // Inherited from a launcher further up: this process's parent is someone else.
    expect(shouldStopWithParent({ [LAUNCHER_PID_VARIABLE]: '10' }, 11)).toBe(false);
    expect(shouldStopWithParent({}, 10)).toBe(false);
    // The launcher was gone before this process first looked.
    expect(shouldStopWithParent({ [LAUNCHER_PID_VARIABLE]: '10' }, 1)).toBe(true);
  });
});
