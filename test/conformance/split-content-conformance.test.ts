import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { CONFORMANCE_SUITE, runConformance } from '../support/conformance.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';

// The conformance suite's resource, prompt and completion scenarios against a split deployment:
// an API that loads no module (`--tools none`) and a worker with TASKGATE_CONFORMANCE=1. Every
// fixture the scenarios read, get, complete or subscribe to is published through the catalog and
// served by the worker, so these pass only if remote content is the same content.
//
// The content scenarios, and the tool scenarios that ask the client, are held here: the fixture
// tools are inline, and a split deployment runs an inline tool it did not load as a durable task,
// so these pass only if a durable task asks as an inline call does (docs/design/catalog-content.md). test/conformance/server-conformance.test.ts holds every
// scenario against one process.
const CONTENT = [
  'completion-complete',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
];
/** Each revision's content scenarios (what `--requirements <revision>` runs of them). */
const SCENARIOS: Readonly<Record<string, readonly string[]>> = {
  '2025-11-25': [
    ...CONTENT,
    'resources-subscribe',
    'resources-unsubscribe',
    // Tools that ask the client (ctx.input()): run durably here, their parked task's requests go
    // to the client on the call's stream.
    'tools-call-elicitation',
    'tools-call-sampling',
    'elicitation-sep1034-defaults',
    'elicitation-sep1330-enums',
    // A durable task's progress values travel in their notifications: each one is told, none
    // folded by a read of the row (docs/design/catalog-content.md).
    'tools-call-with-progress',
  ],
  '2026-07-28': [
    ...CONTENT,
    'sep-2164-resource-not-found',
    'tools-call-with-progress',
    // Tools that ask, run durably: the parked task's requests end the call input_required, with a
    // state naming the task that the retry answers.
    'server-stateless',
    'input-required-result-basic-elicitation',
    'input-required-result-basic-sampling',
    'input-required-result-basic-list-roots',
    'input-required-result-request-state',
    'input-required-result-multiple-input-requests',
    'input-required-result-multi-round',
    'input-required-result-missing-input-response',
    'input-required-result-non-tool-request',
    'input-required-result-result-type',
    'input-required-result-unsupported-methods',
    'input-required-result-tampered-state',
    'input-required-result-capability-check',
    'input-required-result-ignore-extra-params',
    'input-required-result-validate-input',
  ],
};

let database: TestDatabase;
let api: RunningProcess;
let worker: RunningProcess;
let url: string;
beforeAll(async () => {
  database = await createTestDatabase({ empty: true });
  // Each migrates what it loads: the API the platform's schema, the worker its modules' too.
  api = startCli(['start', '--role', 'api', '--tools', 'none'], cleanEnv({ DATABASE_URL: database.url, PORT: '0' }));
  url = `${(await api.waitForLog((line) => line.msg === 'taskgate started')).url as string}/mcp`;
  worker = startCli(['start', '--role', 'worker'], cleanEnv({ DATABASE_URL: database.url, TASKGATE_CONFORMANCE: '1' }));
  await worker.waitForLog((line) => line.msg === 'taskgate started');
}, 60_000);
afterAll(async () => {
  await Promise.all([api?.stop('SIGTERM'), worker?.stop('SIGTERM')]);
  await database?.drop();
});

describe('MCP conformance of content served through the catalog', () => {
  // One scenario per run: the whole requirement set would also run the tool scenarios, whose
  // timeouts take minutes here.
  it.each(Object.keys(SCENARIOS))(
    '%s: every content scenario passes, and the tool scenarios that ask',
    { timeout: 120_000 },
    async (revision) => {
      const failed: string[] = [];
      for (const scenario of SCENARIOS[revision] ?? []) {
        const { output } = await runConformance(CONFORMANCE_SUITE, url, [
          '--spec-version',
          revision,
          '--scenario',
          scenario,
        ]);
        const passed = /Passed: (\d+)\/(\d+), 0 failed/.exec(output);
        if (!passed || passed[1] !== passed[2] || passed[1] === '0') failed.push(`${scenario}\n${output}`);
      }
      expect(failed).toEqual([]);
    },
  );
});
