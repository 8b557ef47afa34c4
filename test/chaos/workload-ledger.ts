import type { KeyedCall } from './client-record.ts';
import { backoff, type HttpOutcome, jsonOf, retryable } from './http-client.ts';
import type { Rng } from './rng.ts';
import { authHeaders, pickApi, pollRest, sleep, type Tenant, type WorkloadContext } from './workload-context.ts';

const ACCOUNTS = ['acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5'];

/**
 * A keyed charge from a client that retries until it gets a definitive answer: through 503s,
 * refused and reset connections, and its own short timeouts (which abandon calls that may well
 * have committed), always with the same key and body. A success is sometimes replayed once more,
 * which must answer the same charge.
 */
export async function charge(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const key = `charge-${tenant.name}-${ctx.nextSerial()}`;
  const call = ctx.record.keyedCall(tenant.name, key, 'charge');
  const account = rng.pick(ACCOUNTS);
  const body = JSON.stringify({ cents: rng.int(1, 10_000) });
  const send = () =>
    ctx.http.send('POST', `${pickApi(ctx, rng)}/v1/accounts/${account}/charges`, {
      headers: authHeaders(tenant, { 'content-type': 'application/json', 'idempotency-key': key }),
      body,
      timeoutMs: rng.int(300, 6_000),
    });
  for (let attempt = 0; !ctx.hardStop.aborted; attempt++) {
    call.attempts += 1;
    const outcome = await send();
    if (outcome.kind === 'response' && (outcome.status === 201 || outcome.status === 200)) {
      call.state = 'succeeded';
      call.effectId = String(jsonOf(outcome).chargeId);
      call.detail = `${outcome.status} after ${call.attempts} attempt(s)`;
      if (rng.chance(0.2)) await replayCharge(ctx, call, send);
      return;
    }
    if (await retryAfterAnswer(outcome, call, rng, attempt, ctx)) continue;
    return;
  }
  call.state = 'abandoned';
}

async function replayCharge(ctx: WorkloadContext, call: KeyedCall, send: () => Promise<HttpOutcome>): Promise<void> {
  for (let attempt = 0; attempt < 10 && !ctx.hardStop.aborted; attempt++) {
    const outcome = await send();
    if (outcome.kind !== 'response' || outcome.status === 503) continue;
    const chargeId = String(jsonOf(outcome).chargeId);
    if (outcome.status !== 200 || outcome.headers.get('idempotent-replayed') !== 'true' || chargeId !== call.effectId) {
      ctx.record.replayMismatches.push(
        `${call.tenant}/${call.key}: first answer charge ${call.effectId}, replay ${outcome.status} charge ${chargeId}`,
      );
    }
    return;
  }
}

/**
 * A keyed reservation: POST (the reservation is a reserve_inventory task), then wait for the task.
 * Completed is definitive (a reservation, or a stored refusal such as insufficient stock); a task
 * that failed or was cancelled freed the key, so the client posts again with the same key.
 */
export async function reservation(ctx: WorkloadContext, rng: Rng, tenant: Tenant): Promise<void> {
  const key = `reserve-${tenant.name}-${ctx.nextSerial()}`;
  const call = ctx.record.keyedCall(tenant.name, key, 'reservation');
  const sku = rng.pick(Object.keys(tenant.stock));
  const body = JSON.stringify({ quantity: rng.int(1, 3) });
  const post = (minTimeoutMs: number) =>
    ctx.http.send('POST', `${pickApi(ctx, rng)}/v1/inventory/${sku}/reservations`, {
      headers: authHeaders(tenant, { 'content-type': 'application/json', 'idempotency-key': key }),
      body,
      timeoutMs: rng.int(minTimeoutMs, 6_000),
    });
  for (let attempt = 0; !ctx.hardStop.aborted; attempt++) {
    call.attempts += 1;
    const outcome = await post(300);
    if (outcome.kind === 'response' && (outcome.status === 201 || outcome.status === 200)) {
      const taskId = String(jsonOf(outcome).id);
      ctx.record.given(taskId, tenant.name, 'reservation', ctx.now());
      const task = await pollRest(ctx, rng, tenant, taskId, 'reservation poll');
      if (task?.status === 'completed') {
        const structured = task.result?.structuredContent as { reservation?: { reservationId?: string } } | undefined;
        const reservationId = structured?.reservation?.reservationId;
        call.state = task.result?.isError || !reservationId ? 'refused' : 'succeeded';
        call.effectId = reservationId ?? null;
        call.detail = `task ${taskId} completed after ${call.attempts} attempt(s)`;
        if (rng.chance(0.2)) await replayReservation(ctx, call, taskId, () => post(300));
        return;
      }
      // failed or cancelled frees the key: a new attempt under the same key; not ended: ask again.
      call.detail = `task ${taskId} ${task?.status ?? 'unread'}`;
      await backoff(rng, attempt);
      continue;
    }
    if (await retryAfterAnswer(outcome, call, rng, attempt, ctx)) continue;
    return;
  }
  call.state = 'abandoned';
}

/** A committed reservation's key, sent again: 200, Idempotent-Replayed, the same task. */
async function replayReservation(
  ctx: WorkloadContext,
  call: KeyedCall,
  taskId: string,
  send: () => Promise<HttpOutcome>,
): Promise<void> {
  for (let attempt = 0; attempt < 10 && !ctx.hardStop.aborted; attempt++) {
    const outcome = await send();
    if (outcome.kind !== 'response' || outcome.status === 503) continue;
    const replayed = String(jsonOf(outcome).id);
    if (outcome.status !== 200 || outcome.headers.get('idempotent-replayed') !== 'true' || replayed !== taskId) {
      ctx.record.replayMismatches.push(
        `${call.tenant}/${call.key}: first answer task ${taskId}, replay ${outcome.status} task ${replayed}`,
      );
    }
    return;
  }
}

/** True when the answer says "try again" (outage, timeout, 409 in progress); otherwise records the refusal. */
async function retryAfterAnswer(
  outcome: HttpOutcome,
  call: KeyedCall,
  rng: Rng,
  attempt: number,
  ctx: WorkloadContext,
): Promise<boolean> {
  if (outcome.kind === 'response' && outcome.status === 409) {
    const seconds = Number(outcome.headers.get('retry-after') ?? '1');
    await sleep(rng.between(0.5, 1.5) * 1_000 * (Number.isFinite(seconds) ? seconds : 1), ctx.hardStop);
    return true;
  }
  // A 500 leaves the outcome unknown just as a timeout does: a keyed call may always be sent again
  // (the HTTP client has recorded the 500 against the product).
  if (retryable(outcome) || (outcome.kind === 'response' && outcome.status >= 500)) {
    await backoff(rng, attempt);
    return true;
  }
  call.state = 'rejected';
  call.detail = `answered ${outcome.kind === 'response' ? `${outcome.status} ${outcome.text.slice(0, 200)}` : outcome.kind}`;
  ctx.record.count(`${call.kind}: rejected with ${outcome.kind === 'response' ? outcome.status : outcome.kind}`);
  return false;
}
