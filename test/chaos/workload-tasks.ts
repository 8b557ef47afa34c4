import { backoff, jsonOf, retryable } from './http-client.ts';
import { callMcp, TASKS_CAPABILITIES } from './mcp-client.ts';
import type { Rng } from './rng.ts';
import {
  authHeaders,
  given,
  pickApi,
  pollMcp,
  pollRest,
  sleep,
  type TaskBody,
  type Tenant,
  type WorkloadContext,
} from './workload-context.ts';
import { watchOverSse } from './workload-watchers.ts';

/** A REST create, retried through outages (a retry may create a second task: these tools are safe). */
async function createRest(
  ctx: WorkloadContext,
  rng: Rng,
  tenant: Tenant,
  body: object,
  source: string,
): Promise<TaskBody | null> {
  for (let attempt = 0; !ctx.hardStop.aborted && attempt < 30; attempt++) {
    const outcome = await ctx.http.send('POST', `${pickApi(ctx, rng)}/v1/tasks`, {
      headers: authHeaders(tenant, { 'content-type': 'application/json' }),
      body: JSON.stringify(body),
      timeoutMs: 5_000,
    });
    if (outcome.kind === 'response' && outcome.status === 201) {
      const task = jsonOf(outcome) as TaskBody;
      given(ctx, task.id, tenant, source);
      return task;
    }
    if (!retryable(outcome)) {
      ctx.record.count(`${source}: create answered ${outcome.kind === 'response' ? outcome.status : outcome.kind}`);
      return null;
    }
    await backoff(rng, attempt);
  }
  return null;
}

/** POST /v1/tasks of slow_compute, greet or failing_job; then poll it, watch it over SSE, or leave it. */
export async function restTask(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const task = await createRest(ctx, rng, tenant, pickBody(ctx, rng, ctx.nextSerial()), 'rest create');
  if (!task) return;
  ctx.record.count('rest create: 201');
  const then = rng.weighted({ poll: 5, sse: 3, leave: 2 });
  if (then === 'poll') await pollRest(ctx, rng, tenant, task.id, 'rest poll');
  else if (then === 'sse') await watchOverSse(ctx, rng, tenant, task.id);
}

function pickBody(ctx: WorkloadContext, rng: Rng, serial: number): object {
  switch (rng.weighted({ slow: 5, greet: 3, failing: 2, long: 0.5 })) {
    case 'slow':
      return { tool: 'slow_compute', arguments: { seconds: round(rng.between(0.1, 3)), label: `rest-${serial}` } };
    case 'long': {
      // Longer than a worker's heartbeat, sometimes longer than TASKGATE_MAX_CALL_MS: it spans several
      // faults, and the max clock (from the first start, never reset) must end it whatever happens.
      const seconds = Math.min(600, round(rng.between(5, (ctx.maxCallMs / 1_000) * 1.3)));
      return { tool: 'slow_compute', arguments: { seconds, label: `rest-long-${serial}` } };
    }
    case 'greet':
      return { tool: 'greet', arguments: { name: `rest-${serial}` } };
    default:
      return { tool: 'failing_job', arguments: {} };
  }
}

/** A REST cancel of a running slow_compute, then wait for its terminal state. */
export async function restCancel(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const serial = ctx.nextSerial();
  const task = await createRest(
    ctx,
    rng,
    tenant,
    { tool: 'slow_compute', arguments: { seconds: round(rng.between(3, 8)), label: `rest-cancel-${serial}` } },
    'rest cancel',
  );
  if (!task) return;
  await sleep(rng.between(100, 2_000), ctx.hardStop);
  for (let attempt = 0; !ctx.hardStop.aborted && attempt < 30; attempt++) {
    const outcome = await ctx.http.send('POST', `${pickApi(ctx, rng)}/v1/tasks/${task.id}/cancel`, {
      headers: authHeaders(tenant, { 'content-type': 'application/json' }),
      body: JSON.stringify({ reason: 'chaos client' }),
      timeoutMs: 5_000,
    });
    if (!retryable(outcome)) {
      ctx.record.count(`rest cancel: ${outcome.kind === 'response' ? outcome.status : outcome.kind}`);
      break;
    }
    await backoff(rng, attempt);
  }
  await pollRest(ctx, rng, tenant, task.id, 'rest cancel poll');
}

/**
 * An MCP tools/call without the Tasks extension (a request-mode task answered in the call): greet,
 * or a short slow_compute (SSE once it outlives 1 s). Retried through outages.
 */
export async function mcpSync(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const serial = ctx.nextSerial();
  const params = rng.chance(0.5)
    ? { name: 'greet', arguments: { name: `mcp-${serial}` } }
    : { name: 'slow_compute', arguments: { seconds: round(rng.between(0.1, 2)), label: `mcp-sync-${serial}` } };
  for (let attempt = 0; !ctx.hardStop.aborted && attempt < 30; attempt++) {
    const { outcome, message } = await callMcp(ctx.http, pickApi(ctx, rng), tenant.token, 'tools/call', params, {
      timeoutMs: 30_000,
    });
    if (message?.result) {
      ctx.record.count(message.result.isError ? 'mcp sync: isError result' : 'mcp sync: result');
      return;
    }
    if (message?.error) ctx.record.count(`mcp sync: error ${message.error.code}`);
    if (!retryable(outcome)) return;
    await backoff(rng, attempt);
  }
}

/**
 * An MCP tools/call with the Tasks extension: failing_job (a task at once) or a slow_compute that
 * outlives TASKGATE_MCP_TASK_AFTER_MS; the CreateTaskResult's taskId is then polled with tasks/get,
 * or watched with subscriptions/listen.
 */
export async function mcpTask(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const serial = ctx.nextSerial();
  const params = rng.chance(0.3)
    ? { name: 'failing_job', arguments: {} }
    : { name: 'slow_compute', arguments: { seconds: round(rng.between(0.6, 4)), label: `mcp-task-${serial}` } };
  for (let attempt = 0; !ctx.hardStop.aborted && attempt < 30; attempt++) {
    const { outcome, message } = await callMcp(ctx.http, pickApi(ctx, rng), tenant.token, 'tools/call', params, {
      capabilities: TASKS_CAPABILITIES,
      timeoutMs: 30_000,
    });
    const result = message?.result;
    if (result?.resultType === 'task' && typeof result.taskId === 'string') {
      ctx.record.count('mcp task: CreateTaskResult');
      given(ctx, result.taskId, tenant, 'mcp task');
      await pollMcp(ctx, rng, tenant, result.taskId);
      return;
    }
    if (result) {
      ctx.record.count('mcp task: answered in the call');
      return;
    }
    if (message?.error) ctx.record.count(`mcp task: error ${message.error.code}`);
    if (!retryable(outcome)) return;
    await backoff(rng, attempt);
  }
}

/** An MCP tools/call whose client closes the stream part-way: the cancel of 2026-07-28 HTTP. */
export async function mcpCancel(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const serial = ctx.nextSerial();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), rng.between(300, 2_500));
  const { message } = await callMcp(
    ctx.http,
    pickApi(ctx, rng),
    tenant.token,
    'tools/call',
    { name: 'slow_compute', arguments: { seconds: 6, label: `mcp-cancel-${serial}` } },
    { timeoutMs: 30_000, signal: abort.signal },
  );
  clearTimeout(timer);
  ctx.record.count(message ? 'mcp cancel: answered before the close' : 'mcp cancel: stream closed');
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
