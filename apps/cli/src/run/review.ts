import type { CallPolicy } from '@taskgate/client';
import { HANDSHAKE_VERSIONS, PER_REQUEST_VERSIONS, revisionInfo } from '@taskgate/protocol';
import { formatTable, printable } from '../terminal-text.ts';

export interface ReviewArgs {
  readonly url: string;
  readonly token?: string;
  readonly json: boolean;
  /** How long to wait for a stream's first keepalive (default 20 s; the server sends one every 15 s). */
  readonly keepaliveWaitMs: number;
}

interface ToolReview {
  readonly tool: string;
  readonly retry: string;
  readonly idempotencyKey: string;
  readonly idleMs: number | null;
  readonly maxMs: number | null;
  readonly source: CallPolicy['source'];
  readonly findings: readonly string[];
}

interface StreamCheck {
  readonly check: string;
  readonly ok: boolean;
  readonly seen: string;
}

/**
 * The four ways a request can end, per transport, and what each side must do: the seed lesson's
 * race table, as @taskgate/client and Taskgate's server implement it.
 */
const RACE_TABLE = [
  {
    transport: 'stdio',
    'cancel on the wire': 'notifications/cancelled {requestId}',
    'cancel, then a late answer': 'no answer is due; a late one is dropped (the id is a tombstone)',
    'answer, then a cancel': 'the result stands; the cancel names an answered id and is ignored',
  },
  {
    transport: `HTTP ${PER_REQUEST_VERSIONS.join(', ')}`,
    'cancel on the wire': "the request's own SSE stream closed; nothing is POSTed",
    'cancel, then a late answer': 'the stream is gone: nothing more is written for that request',
    'answer, then a cancel': 'the result stands; closing an ended stream changes nothing',
  },
  {
    transport: `HTTP session (${HANDSHAKE_VERSIONS[0] ?? 'handshake revisions'})`,
    'cancel on the wire': 'POST notifications/cancelled {requestId}',
    'cancel, then a late answer': 'a late one is dropped (the id is a tombstone)',
    'answer, then a cancel': 'the result stands; the cancel is ignored',
  },
  {
    transport: 'a task (Tasks extension)',
    'cancel on the wire': 'tasks/cancel → an acknowledgement only',
    'cancel, then a late answer': 'poll tasks/get until a terminal status; only it says the work stopped',
    'answer, then a cancel': 'the task may end completed: its status says so',
  },
];

const RECONNECT_PLAN = [
  'a dropped stream is reopened as a new request (a new id) with the same filter; no Last-Event-ID',
  'every acknowledgement is followed by a refetch of what the stream watched (tasks/get)',
  'attempts wait a capped exponential backoff with full jitter: 250 ms doubling to 8 s',
];

const BUFFER_POLICY = [
  'each SSE stream has a bounded buffer: progress is coalesced per token (only the latest waits)',
  'the final response is never dropped: room is kept for it, progress is evicted first',
];

/**
 * `taskgate review`: the reliability review of a live MCP server — the race table per transport,
 * every tool's retry class, idempotency boundary and clocks (what Taskgate publishes in tools/list,
 * else what annotations suggest), a check of a stream's SSE headers and keepalive, the buffer
 * policy and the reconnect plan. Exits 1 when there is a finding: a mutation that takes no
 * idempotency key, a tool with no max clock of its own, a stream header missing, no keepalive.
 */
export async function runReview(
  args: ReviewArgs,
  io: { stdout: (line: string) => void; stderr: (line: string) => void },
) {
  const { TaskgateClient } = await import('@taskgate/client');
  const client = await TaskgateClient.connectHttp({ url: args.url, ...(args.token ? { token: args.token } : {}) });
  let tools: ToolReview[];
  let server: { name?: string; version?: string; protocolVersion?: string };
  try {
    const listed = await client.listTools();
    tools = await Promise.all(listed.map(async (tool) => reviewTool(tool.name, await client.policyOf(tool.name))));
    server = {
      ...(client.server.info?.name ? { name: client.server.info.name } : {}),
      ...(client.server.info?.version ? { version: client.server.info.version } : {}),
      ...(client.server.protocolVersion ? { protocolVersion: client.server.protocolVersion } : {}),
    };
  } finally {
    await client.close().catch(() => {});
  }
  io.stderr(`checking a stream's headers and keepalive (up to ${Math.round(args.keepaliveWaitMs / 1000)} s)…`);
  const stream = await checkStream(args, server.protocolVersion);
  const findings = [
    ...tools.flatMap((tool) => tool.findings.map((finding) => `${tool.tool}: ${finding}`)),
    ...stream.filter((check) => !check.ok).map((check) => `stream: ${check.check} (${check.seen})`),
  ];
  if (args.json) {
    io.stdout(
      JSON.stringify({
        url: args.url,
        server,
        raceTable: RACE_TABLE,
        tools,
        stream,
        bufferPolicy: BUFFER_POLICY,
        reconnectPlan: RECONNECT_PLAN,
        findings,
      }),
    );
    return findings.length === 0 ? 0 : 1;
  }
  const out = io.stdout;
  out(
    `Reliability review of ${args.url} (${server.name ?? 'server'} ${server.version ?? ''}, ${server.protocolVersion ?? 'revision unknown'})`,
  );
  out('');
  out('Race table: how a request ends, per transport');
  for (const line of formatTable(
    Object.keys(RACE_TABLE[0] ?? {}).map((title) => title.toUpperCase()),
    RACE_TABLE.map((row) => Object.values(row)),
  ))
    out(line);
  out('');
  out('Tools: retry class, idempotency boundary, clocks');
  for (const line of formatTable(
    ['TOOL', 'RETRY', 'IDEMPOTENCY KEY', 'IDLE', 'MAX', 'FROM', 'FINDINGS'],
    tools.map((tool) => [
      printable(tool.tool),
      tool.retry,
      tool.idempotencyKey,
      clock(tool.idleMs),
      clock(tool.maxMs),
      tool.source,
      tool.findings.join('; ') || '-',
    ]),
  ))
    out(line);
  out('');
  out('Streams: SSE headers and keepalive');
  for (const check of stream) out(`  ${check.ok ? 'ok ' : 'BAD'}  ${check.check}: ${check.seen}`);
  out('');
  out('Buffer policy');
  for (const line of BUFFER_POLICY) out(`  ${line}`);
  out('');
  out('Reconnect plan (@taskgate/client)');
  for (const line of RECONNECT_PLAN) out(`  ${line}`);
  out('');
  out(findings.length === 0 ? 'no findings' : `${findings.length} finding(s):`);
  for (const finding of findings) out(`  - ${printable(finding)}`);
  return findings.length === 0 ? 0 : 1;
}

export function reviewTool(name: string, policy: CallPolicy): ToolReview {
  const findings: string[] = [];
  if (policy.retry !== 'safe' && policy.idempotencyKey === 'none') {
    findings.push('a mutation that takes no idempotency key: a lost answer can only be reconciled by hand');
  }
  if (policy.timeouts?.maxMs === undefined) {
    findings.push('no max clock of its own (only the server-wide ceiling ends it)');
  }
  if (policy.source === 'annotations') findings.push('retry class guessed from annotations: the server publishes none');
  return {
    tool: name,
    retry: policy.retry,
    idempotencyKey: policy.idempotencyKey,
    idleMs: policy.timeouts?.idleMs ?? null,
    maxMs: policy.timeouts?.maxMs ?? null,
    source: policy.source,
    findings,
  };
}

function clock(ms: number | null): string {
  if (ms === null) return '-';
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Opens one `subscriptions/listen` stream (tools list changes: nothing else needed) and checks
 * what a proxy in the way needs to see: text/event-stream, no caching, no buffering, and a
 * keepalive comment within the wait.
 */
async function checkStream(args: ReviewArgs, protocolVersion: string | undefined): Promise<StreamCheck[]> {
  if (protocolVersion === undefined || revisionInfo(protocolVersion)?.kind !== 'per-request') {
    return [
      { check: 'subscriptions/listen', ok: true, seen: `not served on ${protocolVersion ?? 'this revision'}; skipped` },
    ];
  }
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), args.keepaliveWaitMs + 5_000);
  try {
    const response = await fetch(args.url, {
      method: 'POST',
      signal: abort.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': protocolVersion,
        'mcp-method': 'subscriptions/listen',
        ...(args.token ? { authorization: `Bearer ${args.token}` } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': protocolVersion,
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    const header = (name: string) => response.headers.get(name) ?? 'absent';
    const checks: StreamCheck[] = [
      { check: 'status 200', ok: response.status === 200, seen: String(response.status) },
      {
        check: 'Content-Type text/event-stream',
        ok: header('content-type').startsWith('text/event-stream'),
        seen: header('content-type'),
      },
      { check: 'Cache-Control no-cache', ok: /no-cache/.test(header('cache-control')), seen: header('cache-control') },
      { check: 'X-Accel-Buffering no', ok: header('x-accel-buffering') === 'no', seen: header('x-accel-buffering') },
    ];
    const started = performance.now();
    let keepalive: number | null = null;
    if (response.body) {
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const waitUntil = started + args.keepaliveWaitMs;
      while (keepalive === null && performance.now() < waitUntil) {
        const chunk = await Promise.race([
          reader.read(),
          new Promise<null>((resolve) => setTimeout(() => resolve(null), Math.max(0, waitUntil - performance.now()))),
        ]);
        if (chunk === null || chunk.done) break;
        text += decoder.decode(chunk.value, { stream: true });
        if (/(^|\n):/.test(text)) keepalive = performance.now() - started;
      }
      await reader.cancel().catch(() => {});
    }
    checks.push({
      check: `a keepalive within ${Math.round(args.keepaliveWaitMs / 1000)} s`,
      ok: keepalive !== null,
      seen: keepalive === null ? 'none' : `after ${Math.round(keepalive)} ms`,
    });
    return checks;
  } catch (error) {
    return [{ check: 'subscriptions/listen stream', ok: false, seen: (error as Error).message }];
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
