import { TENANT_PATTERN } from '@taskgate/api/tenant-name';
import type { Problem } from './config-fields.ts';

export const MIN_TOKEN_LENGTH = 16;

export function parseTokens(raw: string | undefined, problem: Problem): Map<string, string> {
  const tokens = new Map<string, string>();
  if (raw === undefined) return tokens;
  raw.split(',').forEach((pair, index) => {
    const entry = pair.trim();
    if (entry === '') return;
    const separator = entry.lastIndexOf(':');
    // Positions, not values, in messages: the values are secrets.
    const where = `entry ${index + 1}`;
    if (separator <= 0 || separator === entry.length - 1) {
      problem('TASKGATE_TOKENS', `${where} must look like token:tenant`);
      return;
    }
    const token = entry.slice(0, separator);
    const tenant = entry.slice(separator + 1);
    if (token.length < MIN_TOKEN_LENGTH) {
      problem('TASKGATE_TOKENS', `${where} has a token shorter than ${MIN_TOKEN_LENGTH} characters`);
    } else if (!TENANT_PATTERN.test(tenant)) {
      problem('TASKGATE_TOKENS', `${where} has an invalid tenant (letters, digits, '.', '_', '-'; at most 63)`);
    } else if (tokens.has(token)) {
      problem('TASKGATE_TOKENS', `${where} repeats a token already given`);
    } else {
      tokens.set(token, tenant);
    }
  });
  return tokens;
}

export function parseOperatorTokens(
  raw: string | undefined,
  tenantTokens: ReadonlyMap<string, string>,
  problem: Problem,
): Set<string> {
  const tokens = new Set<string>();
  if (raw === undefined) return tokens;
  raw.split(',').forEach((item, index) => {
    const token = item.trim();
    if (token === '') return;
    // Positions, not values, in messages: the values are secrets.
    const where = `entry ${index + 1}`;
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} must be ${MIN_TOKEN_LENGTH}+ characters without spaces`);
    } else if (token.includes(':')) {
      // token:tenant belongs in TASKGATE_TOKENS: an operator names its tenant per request.
      problem('TASKGATE_OPERATOR_TOKENS', `${where} has a ':' (a tenant's token:tenant goes in TASKGATE_TOKENS)`);
    } else if (tenantTokens.has(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} is also a tenant's token in TASKGATE_TOKENS`);
    } else if (tokens.has(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} repeats a token already given`);
    } else {
      tokens.add(token);
    }
  });
  return tokens;
}
