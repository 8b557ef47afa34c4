/**
 * Canonical JSON and the retry rule: the pure parts of idempotency. The hash of the canonical form
 * is taken where node:crypto is allowed (packages/db's ledger).
 */

/**
 * JSON with object keys sorted at every depth (RFC 8785's ordering for the values JSON itself
 * produces), so two argument objects that mean the same thing serialize to the same string
 * whatever order their keys were written in. Array order is meaningful and kept.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError(`canonical JSON has no form for ${value}`);
    }
    // undefined at the top level has no JSON form either; say so instead of hashing "undefined".
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonical JSON has no form for ${typeof value}`);
    return text;
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined && typeof item !== 'function')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

/**
 * What a fingerprint covers: the operation name and its arguments without the key itself (a
 * retry must be able to carry the key in a header or in the arguments and mean the same intent).
 * The tenant is not in it because keys are already scoped by tenant.
 */
export function fingerprintInput(operation: string, args: unknown): string {
  const rest =
    args !== null && typeof args === 'object' && !Array.isArray(args)
      ? Object.fromEntries(Object.entries(args).filter(([key]) => key !== 'idempotencyKey'))
      : args;
  return canonicalJson({ operation, arguments: rest ?? {} });
}

export type RetryClass = 'safe' | 'conditional' | 'unsafe';

/**
 * The server's retry matrix. safe: read-only, retried freely. conditional: a mutation, retried only
 * under a durable idempotency key (the ledger then makes a retry a replay). unsafe: never retried
 * automatically — a lost outcome is reconciled first. Tool annotations do not enter into it.
 */
export function mayRetryAutomatically(retry: RetryClass, hasIdempotencyKey: boolean): boolean {
  if (retry === 'safe') return true;
  if (retry === 'conditional') return hasIdempotencyKey;
  return false;
}
