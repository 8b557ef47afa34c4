import { describe, expect, it } from 'vitest';
import { Lifecycle } from './lifecycle.ts';
import { createLogger } from './logger.ts';

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
});
