import net from 'node:net';
import type { RelayConfig } from './config-types.ts';
import { DEFAULTS, type SETTINGS } from './settings.ts';

/** Collects one problem with one variable; parsing goes on, so one run names them all. */
export type Problem = (field: string, message: string) => void;
type Setting = keyof typeof SETTINGS;

const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
const MIN_RELAY_SECRET_LENGTH = 16;

/** A comma-separated list without its blanks: `a, b,,` is `a` and `b`. */
export function splitList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return host === '::1';
}

/** The OTLP/HTTP traces URL (the per-signal one as given, the base one with /v1/traces). */
export function parseTraces(
  tracesRaw: string | undefined,
  baseRaw: string | undefined,
  serviceName: string | undefined,
  problem: Problem,
): { url: string; serviceName: string } | null {
  const field = tracesRaw !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = tracesRaw ?? baseRaw;
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problem(field, 'is not a valid URL (expected http://collector:4318)');
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problem(field, `must be an http or https URL (got ${url.protocol}//): traces are sent over OTLP/HTTP`);
    return null;
  }
  return {
    url: tracesRaw !== undefined ? raw : `${raw.replace(/\/+$/, '')}/v1/traces`,
    serviceName: serviceName ?? DEFAULTS.serviceName,
  };
}

export function parseDatabaseUrl(raw: string | undefined, problem: Problem): string | null {
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problem('DATABASE_URL', 'is not a valid URL (expected postgres://user:password@host:5432/database)');
    return null;
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    problem('DATABASE_URL', `must use the postgres:// or postgresql:// scheme (got ${url.protocol}//)`);
  } else if (url.hostname === '' && !url.searchParams.has('host')) {
    problem('DATABASE_URL', 'has no host (expected postgres://user:password@host:5432/database)');
  }
  return raw;
}

export function parseInteger(
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  field: string,
  problem: Problem,
): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    problem(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
    return fallback;
  }
  return Number(raw);
}

/** `slow_compute=4,greet=16`: each tool named once, each cap from 1 to 1024. */
export function parseToolConcurrency(raw: string | undefined, problem: Problem): Map<string, number> {
  const caps = new Map<string, number>();
  const field = 'TASKGATE_TOOL_CONCURRENCY';
  for (const [index, part] of (raw ?? '').split(',').entries()) {
    const entry = part.trim();
    if (entry === '') continue;
    const where = `entry ${index + 1} (${JSON.stringify(entry)})`;
    const separator = entry.lastIndexOf('=');
    const tool = entry.slice(0, separator).trim();
    const limit = entry.slice(separator + 1).trim();
    if (separator <= 0 || !TOOL_NAME_PATTERN.test(tool)) {
      problem(field, `${where} must look like tool=n, with a tool name of 1-128 of A-Z a-z 0-9 _ . -`);
    } else if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 1_024) {
      problem(field, `${where} must give ${tool} a concurrency from 1 to 1024`);
    } else if (caps.has(tool)) {
      problem(field, `${where} names ${tool} again`);
    } else {
      caps.set(tool, Number(limit));
    }
  }
  return caps;
}

export function parseRelay(value: (name: Setting) => string | undefined, problem: Problem): RelayConfig {
  const sinks: string[] = [];
  (value('TASKGATE_RELAY_SINKS') ?? '').split(',').forEach((part, index) => {
    const entry = part.trim();
    if (entry === '') return;
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    // Positions, not values, in messages: a webhook URL may carry a credential.
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      problem('TASKGATE_RELAY_SINKS', `entry ${index + 1} is not an http:// or https:// URL`);
    } else if (sinks.includes(url.toString())) {
      problem('TASKGATE_RELAY_SINKS', `entry ${index + 1} repeats a sink already given`);
    } else {
      sinks.push(url.toString());
    }
  });
  const secret = value('TASKGATE_RELAY_SECRET') ?? null;
  if (secret !== null && secret.length < MIN_RELAY_SECRET_LENGTH) {
    problem('TASKGATE_RELAY_SECRET', `must be at least ${MIN_RELAY_SECRET_LENGTH} characters`);
  } else if (secret === null && sinks.length > 0) {
    problem('TASKGATE_RELAY_SECRET', 'must be set when TASKGATE_RELAY_SINKS is (deliveries are signed with it)');
  }
  return {
    sinks,
    secret,
    maxAttempts: parseInteger(
      value('TASKGATE_RELAY_MAX_ATTEMPTS'),
      DEFAULTS.relayMaxAttempts,
      1,
      1_000,
      'TASKGATE_RELAY_MAX_ATTEMPTS',
      problem,
    ),
    leaseMs: parseInteger(
      value('TASKGATE_RELAY_LEASE_MS'),
      DEFAULTS.relayLeaseMs,
      1_000,
      3_600_000,
      'TASKGATE_RELAY_LEASE_MS',
      problem,
    ),
    concurrency: parseInteger(
      value('TASKGATE_RELAY_CONCURRENCY'),
      DEFAULTS.relayConcurrency,
      1,
      1_024,
      'TASKGATE_RELAY_CONCURRENCY',
      problem,
    ),
  };
}

export function parseOrigins(raw: string | undefined, problem: Problem): string[] {
  if (raw === undefined) return [];
  const origins: string[] = [];
  for (const entry of raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry.replace(/\/$/, '')) {
      problem('TASKGATE_ALLOWED_ORIGINS', `${JSON.stringify(entry)} is not an origin like https://app.example.com`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins;
}
