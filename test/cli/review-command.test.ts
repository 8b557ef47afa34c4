import { defineTool } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { reviewTool } from '../../apps/cli/src/run/review.ts';
import { cleanEnv, runCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { useServedPlatform } from '../support/task-platform.ts';

// `taskgate review` against a live API (keepalives every 200 ms here, so the stream check is quick).
// A mutation with neither a key nor a max clock: what the review is for.
const sendLetter = defineTool({
  name: 'send_letter',
  description: 'Posts a letter.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  retry: 'unsafe',
  async handler() {
    return { content: [{ type: 'text', text: 'posted' }] };
  },
});

const database = useTestDatabase();
const served = useServedPlatform(database, {
  tools: [sendLetter],
  worker: false,
  api: { events: { keepaliveMs: 200 } },
});

describe('taskgate review', () => {
  it("reviews every tool's retry class, key and clocks, checks a stream, and exits 1 on findings", async () => {
    const review = await runCli(
      ['review', '--url', served.api.mcpUrl.href, '--json', '--keepalive-wait', '5000'],
      cleanEnv(),
    );
    expect(review.code, review.stderr).toBe(1);
    const report = JSON.parse(review.stdout) as {
      tools: { tool: string; retry: string; idempotencyKey: string; maxMs: number | null; findings: string[] }[];
      stream: { check: string; ok: boolean }[];
      raceTable: { transport: string; 'cancel on the wire': string }[];
      findings: string[];
    };
    expect(report.tools.find((tool) => tool.tool === 'charge_account')).toMatchObject({
      retry: 'conditional',
      idempotencyKey: 'required',
      maxMs: 60_000,
      findings: [],
    });
    expect(report.tools.find((tool) => tool.tool === 'slow_compute')).toMatchObject({ retry: 'safe', findings: [] });
    // The demo and ledger tools pass; the letter is what makes it exit 1.
    expect(report.findings).toEqual([
      'send_letter: a mutation that takes no idempotency key: a lost answer can only be reconciled by hand',
      'send_letter: no max clock of its own (only the server-wide ceiling ends it)',
    ]);
    expect(report.stream.every((check) => check.ok)).toBe(true);
    expect(report.stream.map((check) => check.check)).toContain('X-Accel-Buffering no');
    expect(report.raceTable.map((row) => row['cancel on the wire'])).toContain(
      "the request's own SSE stream closed; nothing is POSTed",
    );

    const readable = await runCli(['review', '--url', served.api.mcpUrl.href, '--keepalive-wait', '5000'], cleanEnv());
    expect(readable.stdout).toMatch(/^Reliability review of http:\/\/127\.0\.0\.1:\d+\/mcp \(taskgate /);
    expect(readable.stdout).toContain('2 finding(s):');
  });

  it('flags a mutation that takes no key, and a class guessed from annotations', () => {
    expect(
      reviewTool('send', { retry: 'unsafe', idempotencyKey: 'none', timeouts: { maxMs: 1 }, source: 'published' })
        .findings,
    ).toEqual(['a mutation that takes no idempotency key: a lost answer can only be reconciled by hand']);
    expect(
      reviewTool('read', { retry: 'safe', idempotencyKey: 'none', timeouts: { maxMs: 1 }, source: 'published' })
        .findings,
    ).toEqual([]);
    expect(
      reviewTool('x', { retry: 'safe', idempotencyKey: 'none', timeouts: { maxMs: 1 }, source: 'annotations' })
        .findings,
    ).toEqual(['retry class guessed from annotations: the server publishes none']);
  });
});
