import { TERMINAL } from './client-record.ts';
import { backoff } from './http-client.ts';
import { mcpRequest, TASKS_CAPABILITIES } from './mcp-client.ts';
import type { Rng } from './rng.ts';
import { readSse } from './sse.ts';
import { authHeaders, pickApi, sleep, type Tenant, type WorkloadContext } from './workload-context.ts';

/**
 * GET /v1/tasks/:id/events until the stream ends after the terminal status. A stream that breaks
 * (its API killed, Postgres restarted) is reopened on any API: reconnect means refetch, and the
 * new stream starts with the task as it is now.
 */
export async function watchOverSse(ctx: WorkloadContext, rng: Rng, tenant: Tenant, taskId: string): Promise<void> {
  const deadline = ctx.now() + ctx.waitBoundMs;
  for (let attempt = 0; ctx.now() < deadline && !ctx.hardStop.aborted; attempt++) {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), Math.max(0, deadline - ctx.now()));
    const signal = AbortSignal.any([stop.signal, ctx.hardStop]);
    try {
      const opened = await ctx.http.stream('GET', `${pickApi(ctx, rng)}/v1/tasks/${taskId}/events`, {
        headers: authHeaders(tenant, { accept: 'text/event-stream' }),
        signal,
      });
      if (opened.kind !== 'stream') {
        if (opened.kind === 'response' && opened.status === 404) ctx.record.count('sse: 404 for a given task id');
        await backoff(rng, attempt);
        continue;
      }
      ctx.record.count('sse: stream opened');
      let last: string | null = null;
      try {
        for await (const event of readSse(opened.body)) {
          last = (JSON.parse(event.data) as { status?: string }).status ?? last;
        }
      } catch {
        ctx.record.count('sse: stream broke');
      }
      if (last !== null && TERMINAL.includes(last)) {
        ctx.record.sawTerminal(taskId, last, 'rest sse');
        return;
      }
      await backoff(rng, attempt);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An SSE reader on one of the recently given tasks. */
export async function sseReader(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const mine = ctx.recent.filter((entry) => entry.tenant === tenant.name);
  if (mine.length === 0) return;
  await watchOverSse(ctx, rng, tenant, rng.pick(mine).id);
}

/**
 * subscriptions/listen (Tasks extension, taskIds) on a few recent tasks: records the terminal
 * statuses its notifications/tasks carry, for a while, then closes the stream (which must change
 * no task). A broken stream is reopened with a new id and the same filter.
 */
export async function listen(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const mine = ctx.recent.filter((entry) => entry.tenant === tenant.name).slice(-8);
  if (mine.length === 0) return;
  const taskIds = [...new Set(mine.map((entry) => entry.id))];
  const until = ctx.now() + rng.between(3_000, 15_000);
  const ended = new Set<string>();
  for (let attempt = 0; ctx.now() < until && !ctx.hardStop.aborted && ended.size < taskIds.length; attempt++) {
    const request = mcpRequest(
      'subscriptions/listen',
      { notifications: { taskIds } },
      tenant.token,
      TASKS_CAPABILITIES,
    );
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), Math.max(0, until - ctx.now()));
    try {
      const opened = await ctx.http.stream('POST', `${pickApi(ctx, rng)}/mcp`, {
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.any([stop.signal, ctx.hardStop]),
      });
      if (opened.kind !== 'stream') {
        await backoff(rng, attempt);
        continue;
      }
      ctx.record.count('listen: stream opened');
      try {
        for await (const event of readSse(opened.body)) {
          const message = JSON.parse(event.data) as { method?: string; params?: { taskId?: string; status?: string } };
          if (message.method !== 'notifications/tasks') continue;
          const { taskId, status } = message.params ?? {};
          if (typeof taskId === 'string' && typeof status === 'string' && TERMINAL.includes(status)) {
            ctx.record.sawTerminal(taskId, status, 'mcp listen');
            ended.add(taskId);
            if (ended.size === taskIds.length) break;
          }
        }
      } catch {
        if (!stop.signal.aborted) ctx.record.count('listen: stream broke');
      }
      if (!stop.signal.aborted) await sleep(rng.between(50, 500), ctx.hardStop);
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
  }
}
