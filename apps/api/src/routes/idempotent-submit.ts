import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { CreateTaskInput, Submission, TaskService } from '../tasks/task-service.ts';
import { taskBody } from './task-schemas.ts';

/**
 * The Idempotency-Key header of the IETF httpapi draft (draft-ietf-httpapi-idempotency-key-header):
 * a first call is 201, a replay is 200 with `Idempotent-Replayed: true`, a call while the first
 * still runs is 409 with Retry-After, and a key reused for another payload is 422.
 */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'names one business intent; see docs/errors.md' }),
  ),
});

/**
 * The request's one Idempotency-Key. Node joins repeated headers of this name with ", ", which
 * would make `a1` and `a2` the key "a1, a2": two keys name two intents, so the request is refused.
 */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let index = 0; index < raw.length; index += 2) {
    if (raw[index]?.toLowerCase() === 'idempotency-key') count += 1;
  }
  if (count > 1) {
    throw new TaskgateError('TG_IDEMPOTENCY_KEY_INVALID', 'send one Idempotency-Key header, not several');
  }
  const header = request.headers['idempotency-key'];
  return Array.isArray(header) ? header[0] : header;
}

export async function submitWithKey(
  service: TaskService,
  reply: FastifyReply,
  tenantId: string,
  request: FastifyRequest,
  input: CreateTaskInput,
): Promise<Submission> {
  try {
    // The caller's trace context (W3C Trace Context header) travels with the task to its attempts.
    const traceParent = input.traceParent ?? request.headers.traceparent;
    return await service.submit(tenantId, { ...input, traceParent }, { idempotencyKey: idempotencyKeyOf(request) });
  } catch (error) {
    if (isTaskgateError(error) && error.code === 'TG_IDEMPOTENCY_KEY_IN_PROGRESS') {
      const seconds = (error.details as { retryAfterSeconds?: number }).retryAfterSeconds ?? 1;
      reply.header('retry-after', String(seconds));
    }
    throw error;
  }
}

export function sendSubmission(reply: FastifyReply, { task, replayed }: Submission): FastifyReply {
  reply.header('location', `/v1/tasks/${task.id}`);
  if (replayed) return reply.code(200).header('idempotent-replayed', 'true').send(taskBody(task));
  return reply.code(201).send(taskBody(task));
}
