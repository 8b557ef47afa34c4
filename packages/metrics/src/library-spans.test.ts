import http from 'node:http';
import { isWrapped } from '@opentelemetry/instrumentation';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTaskTracing } from './task-traces.ts';

// instrumentation-http and instrumentation-pg patch shared prototypes: only while tracing is on.
describe('library spans', () => {
  it('patch http.Server and pg.Client only once tracing is created, and unpatch them at its shutdown', async () => {
    const patched = () => [isWrapped(http.Server.prototype.emit), isWrapped(pg.Client.prototype.query)];
    expect(patched()).toEqual([false, false]);
    const tracing = await createTaskTracing({ exporter: new InMemorySpanExporter(), serviceName: 'taskgate-test' });
    expect(patched()).toEqual([true, true]);
    await tracing.shutdown();
    expect(patched()).toEqual([false, false]);
  });
});
