import { type ClientRecord, TERMINAL } from './client-record.ts';
import { backoff, type HttpClient, jsonOf, retryable } from './http-client.ts';
import { callMcp, TASKS_CAPABILITIES } from './mcp-client.ts';
import type { Rng } from './rng.ts';

export interface Tenant {
  readonly name: string;
  readonly token: string;
  /** SKU → initial stock, set once before the run. */
  readonly stock: Readonly<Record<string, number>>;
}

/** What every workload operation shares. */
export interface WorkloadContext {
  readonly http: HttpClient;
  readonly record: ClientRecord;
  readonly apiUrls: readonly string[];
  readonly tenants: readonly Tenant[];
  /** How long one client waits for one task to end (the product's max clock, plus slack). */
  readonly waitBoundMs: number;
  /** TASKGATE_MAX_CALL_MS of the processes. */
  readonly maxCallMs: number;
  /** Run time, for the record. */
  now(): number;
  /** No new operations once set; operations under way finish. */
  readonly winding: AbortSignal;
  /** Every wait and retry ends once set (the end of quiescence). */
  readonly hardStop: AbortSignal;
  /** Recently given task ids, for the watchers to pick from. */
  readonly recent: { id: string; tenant: string }[];
  /** A unique suffix for idempotency keys and labels. */
  nextSerial(): number;
}

export function pickApi(ctx: WorkloadContext, rng: Rng): string {
  return rng.pick(ctx.apiUrls);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function authHeaders(tenant: Tenant, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${tenant.token}`, ...extra };
}

export function given(ctx: WorkloadContext, taskId: string, tenant: Tenant, source: string): void {
  ctx.record.given(taskId, tenant.name, source, ctx.now());
  ctx.recent.push({ id: taskId, tenant: tenant.name });
  if (ctx.recent.length > 60) ctx.recent.splice(0, ctx.recent.length - 60);
}

export type TaskBody = { id: string; status: string; result?: { isError?: boolean; structuredContent?: unknown } };

/**
 * Polls GET /v1/tasks/:id (any API, retrying outages) until the task is terminal or the bound
 * passes. Resolves with the last body seen (null if none).
 */
export async function pollRest(
  ctx: WorkloadContext,
  rng: Rng,
  tenant: Tenant,
  taskId: string,
  source: string,
): Promise<TaskBody | null> {
  const deadline = ctx.now() + ctx.waitBoundMs;
  let last: TaskBody | null = null;
  for (let attempt = 0; ctx.now() < deadline && !ctx.hardStop.aborted; attempt++) {
    const outcome = await ctx.http.send('GET', `${pickApi(ctx, rng)}/v1/tasks/${taskId}`, {
      headers: authHeaders(tenant),
      timeoutMs: 5_000,
    });
    if (outcome.kind === 'response' && outcome.status === 200) {
      last = jsonOf(outcome) as TaskBody;
      if (TERMINAL.includes(last.status)) {
        ctx.record.sawTerminal(taskId, last.status, source);
        return last;
      }
      await sleep(rng.between(200, 500), ctx.hardStop);
    } else if (outcome.kind === 'response' && outcome.status === 404) {
      ctx.record.count('poll: 404 for a task id a client was given');
      await sleep(500, ctx.hardStop);
    } else {
      await backoff(rng, retryable(outcome) ? attempt : 3);
    }
  }
  return last;
}

/** The same through MCP tasks/get (Tasks extension declared, Mcp-Name = taskId). */
export async function pollMcp(ctx: WorkloadContext, rng: Rng, tenant: Tenant, taskId: string): Promise<string | null> {
  const deadline = ctx.now() + ctx.waitBoundMs;
  for (let attempt = 0; ctx.now() < deadline && !ctx.hardStop.aborted; attempt++) {
    const { outcome, message } = await callMcp(
      ctx.http,
      pickApi(ctx, rng),
      tenant.token,
      'tasks/get',
      { taskId },
      {
        capabilities: TASKS_CAPABILITIES,
        timeoutMs: 5_000,
      },
    );
    const status = message?.result?.status;
    if (typeof status === 'string') {
      if (TERMINAL.includes(status)) {
        ctx.record.sawTerminal(taskId, status, 'mcp tasks/get');
        return status;
      }
      await sleep(rng.between(200, 500), ctx.hardStop);
    } else {
      if (message?.error) ctx.record.count(`mcp tasks/get error ${message.error.code}`);
      await backoff(rng, retryable(outcome) ? attempt : 3);
    }
  }
  return null;
}
