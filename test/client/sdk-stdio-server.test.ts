import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

// The client's plain-MCP side over stdio against a server built with the official SDK (v1,
// test/fixtures/downstream-stdio-server.ts): list, call with progress, and a cancel the SDK
// server honours (its handler logs "aborted").
const SERVER = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
let dir: string;
let log: string;
let client: TaskgateClient;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'taskgate-sdk-stdio-'));
  log = path.join(dir, 'log');
  await writeFile(log, '');
  client = await TaskgateClient.connectStdio({
    command: process.execPath,
    args: [SERVER],
    env: { PATH: process.env.PATH ?? '', DOWNSTREAM_LOG: log },
  });
});
afterEach(async () => {
  await client.close();
  await rm(dir, { recursive: true, force: true });
});

async function logged(prefix: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!(await readFile(log, 'utf8')).split('\n').some((line) => line.startsWith(prefix))) {
    if (performance.now() > deadline) throw new Error(`no "${prefix}" line`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('TaskgateClient over stdio against the SDK v1 server', () => {
  it('lists, calls with progress, and the server reads its tools as unsafe without a published policy', async () => {
    const tools = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('slow_echo');
    const progress: number[] = [];
    const result = await client.callTool(
      'slow_echo',
      { text: 'hi', steps: 3 },
      { onProgress: (update) => progress.push(update.progress) },
    );
    expect(JSON.stringify(result.content)).toContain('hi');
    expect(progress).toEqual([1, 2, 3]);
    expect(await client.policyOf('slow_echo')).toMatchObject({ retry: 'unsafe', source: 'annotations' });
  });

  it('cancels with notifications/cancelled: the SDK server aborts its handler, the wait ends at once', async () => {
    const controller = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const call = client.callTool(
      'slow_echo',
      { text: 'x', steps: 400 },
      { signal: controller.signal, onProgress: () => started() },
    );
    call.catch(() => {});
    await running;
    controller.abort(new Error('stop'));
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    await logged('aborted');
    // The connection goes on: the next call works.
    expect((await client.callTool('slow_echo', { text: 'after', steps: 0 })).isError).not.toBe(true);
    expect(client.stats.pending).toBe(0);
  });
});
