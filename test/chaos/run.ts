import fs from 'node:fs';
import path from 'node:path';
import { Cleanup } from './cleanup.ts';
import { runChaos } from './harness.ts';
import { parseOptions, UsageError } from './options.ts';
import { renderEvidence, renderOutcomes, renderTables, renderTimeline } from './report.ts';
import { Rng } from './rng.ts';
import { buildSchedule, describeFault } from './schedule.ts';

// `npm run chaos -- [options]`: one chaos run against this checkout; exit 0 when every invariant
// holds, 1 when one fails, 64 for a bad command line, 70 when the harness itself failed.
const cleanup = new Cleanup();
cleanup.installExitHandlers();

let options: ReturnType<typeof parseOptions>;
try {
  options = parseOptions(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(64);
}

process.stdout.write(
  `chaos: seed ${options.seed}, ${options.durationMs / 1_000} s of faults at intensity ${options.intensity}, ` +
    `${options.clients} clients, TASKGATE_MAX_CALL_MS=${options.maxCallMs} ` +
    `(replay: npm run chaos -- --seconds ${options.durationMs / 1_000} --intensity ${options.intensity} ` +
    `--clients ${options.clients} --max-call-ms ${options.maxCallMs} --seed ${options.seed})\n`,
);
if (options.dryRun) {
  for (const { atMs, fault } of buildSchedule(new Rng(options.seed), options.durationMs, options.intensity)) {
    process.stdout.write(`${(atMs / 1_000).toFixed(1).padStart(7)} s  ${describeFault(fault)}\n`);
  }
  process.exit(0);
}
try {
  const result = await runChaos(options, cleanup);
  const tables = renderTables(result);
  const evidence = renderEvidence(result);
  process.stdout.write(`\n${tables}\n${renderOutcomes(result)}\n\n`);
  if (evidence) process.stdout.write(`${evidence}\nfault timeline:\n${renderTimeline(result)}\n`);
  if (options.reportFile) {
    fs.writeFileSync(options.reportFile, `${tables}${evidence ? `\n${evidence}` : ''}`);
  }
  if (options.jsonFile) fs.writeFileSync(options.jsonFile, `${JSON.stringify(result, null, 2)}\n`);
  if (options.keepLogsDir) {
    fs.mkdirSync(options.keepLogsDir, { recursive: true });
    fs.writeFileSync(path.join(options.keepLogsDir, 'timeline.txt'), `${renderTimeline(result)}\n`);
  }
  process.stdout.write(
    `chaos: ${result.passed ? 'every invariant holds' : 'INVARIANTS FAILED'} (seed ${options.seed})\n`,
  );
  cleanup.runAll();
  process.exit(result.passed ? 0 : 1);
} catch (error) {
  process.stderr.write(
    `chaos: the harness failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  cleanup.runAll();
  process.exit(70);
}
