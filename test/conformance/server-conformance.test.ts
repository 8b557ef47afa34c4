import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFORMANCE_SUITE,
  CONFORMANCE_SUITE_0_1_16,
  type ConformanceServer,
  runConformance,
  startConformanceServer,
} from '../support/conformance.ts';

// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json) run as a
// revision requires it (`--requirements <revision>`) against `taskgate start` with
// TASKGATE_CONFORMANCE=1. Each scenario's outcome is held to the lists below: a scenario that
// starts failing fails this test, and so does one that starts passing while still listed here,
// so that the lists (and docs/design/mcp-conformance.md, which says why each one fails) stay true.

/** What the 0.1.16 active suite runs that is not built yet: nothing. */
const FAILING_0_1_16: readonly string[] = [];

/** What is not built yet, by revision (docs/design/mcp-conformance.md). */
const FAILING: Readonly<Record<string, readonly string[]>> = {
  '2025-11-25': [],
  '2026-07-28': [
    // Pending in the suite (not scored): it calls the first tool listed with no arguments
    // (docs/design/mcp-conformance.md).
    'http-header-validation',
  ],
};

let server: ConformanceServer;
beforeAll(async () => {
  server = await startConformanceServer();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** Each scenario of the summary and whether it passed, in the suite's order. */
function outcomes(output: string): Map<string, boolean> {
  const summary = output.slice(output.indexOf('=== SUMMARY ==='));
  const found = new Map<string, boolean>();
  for (const [, mark, name] of summary.matchAll(/^([✓✗]) ([a-z0-9-]+): \d+ passed, \d+ failed$/gm)) {
    found.set(name as string, mark === '✓');
  }
  return found;
}

describe('MCP conformance, as each revision requires it', () => {
  it.each(Object.keys(FAILING))(
    '--requirements %s: every scenario but the listed ones passes',
    { timeout: 180_000 },
    async (revision) => {
      const { output } = await runConformance(CONFORMANCE_SUITE, server.url, ['--requirements', revision]);
      const scenarios = outcomes(output);
      expect(scenarios.size, output).toBeGreaterThan(20);
      const failing = [...scenarios].filter(([, passed]) => !passed).map(([name]) => name);
      expect(failing.sort(), output).toEqual([...(FAILING[revision] ?? [])].sort());
    },
  );

  it('0.1.16, its active suite: every scenario but the listed ones passes', { timeout: 180_000 }, async () => {
    const { output } = await runConformance(CONFORMANCE_SUITE_0_1_16, server.url, []);
    const scenarios = outcomes(output);
    expect(scenarios.size, output).toBe(30);
    const failing = [...scenarios].filter(([, passed]) => !passed).map(([name]) => name);
    expect(failing.sort(), output).toEqual([...FAILING_0_1_16].sort());
  });
});
