import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LONG_TOOL_NAME } from '../fixtures/long-name-tools.ts';
import { CLI, cleanEnv, REPO_ROOT, RunningProcess, runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { PtyProcess } from '../support/pty.ts';

// What a person sees of `taskgate tools list`, `tasks list` and `tasks get` on an 80-column
// terminal, with a tool whose name and texts are longer than any column (test/fixtures/long-name-tools.ts),
// and what a script gets on a pipe.
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/long-name-tools.ts');
let database: TestDatabase;
let server: RunningProcess;
let base: string;
let taskId: string;
const ptys: PtyProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  server = new RunningProcess(
    process.execPath,
    [CLI, 'start', '--no-migrate', '--tools', FIXTURE],
    cleanEnv({ DATABASE_URL: database.url, PORT: '0' }),
  );
  base = (await server.waitForLog((line) => line.msg === 'taskgate started')).url as string;
  const created = await fetch(`${base}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tool: LONG_TOOL_NAME, arguments: { note: 'x'.repeat(120) } }),
  });
  taskId = ((await created.json()) as { id: string }).id;
  // The handler reports its progress first thing; the tables are read once it is stored.
  for (;;) {
    const task = (await (await fetch(`${base}/v1/tasks/${taskId}`)).json()) as { progress: unknown };
    if (task.progress !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
afterAll(async () => {
  for (const pty of ptys) pty.kill();
  await fetch(`${base}/v1/tasks/${taskId}/cancel`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  }).catch(() => {});
  server.kill();
  await server.closed;
  await database.drop();
});

/** `taskgate <args>` on a terminal 80 columns wide; resolves with the lines it showed. */
async function at80Columns(...args: string[]): Promise<string[]> {
  const pty = new PtyProcess(
    'sh',
    ['-c', 'stty cols 80 rows 40 && exec "$@"', 'sh', process.execPath, CLI, ...args],
    cleanEnv({ TASKGATE_URL: `${base}/mcp` }),
  );
  ptys.push(pty);
  expect(await pty.closed, pty.lines.join('\n')).toBe(0);
  return pty.lines;
}

describe('CLI tables on an 80-column terminal', () => {
  it('tools list fits, cutting the description and then the name, never the policy columns', async () => {
    const lines = await at80Columns('tools', 'list');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^NAME +RETRY +KEY +TASK +DESCRIPTION$/);
    const row = lines[1] as string;
    expect(row).toMatch(/^reconcile_quarterly\S*… +safe +optional +Works until\S*/);
  });

  it('tasks list fits with the task id whole, and the tool and message cut', async () => {
    const lines = await at80Columns('tasks', 'list');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^ID +TOOL +STATUS +CREATED +MESSAGE$/);
    const row = lines.find((line) => line.startsWith(taskId));
    // A working task's message is its progress.
    expect(row, lines.join('\n')).toMatch(
      new RegExp(`^${taskId}  reconcile\\S*… +working +\\d+s ago +30% count\\S*…$`),
    );
  });

  it('tasks get shows the task readably on a terminal and as JSON on a pipe', async () => {
    const lines = await at80Columns('tasks', 'get', taskId);
    expect(lines).toContain(`task      ${taskId}`);
    expect(lines).toContain(`tool      ${LONG_TOOL_NAME}`);
    expect(lines.find((line) => line.startsWith('status '))).toMatch(/^status {4}working/);
    expect(lines).toContain(`progress  3/10 (30%)  counted ${'x'.repeat(120)}`);
    expect(lines.find((line) => line.startsWith('created '))).toMatch(/^created {3}\d{4}-\d\d-\d\dT\S+Z \(\d+s ago\)$/);
    expect(lines.find((line) => line.startsWith('expires '))).toBeUndefined();

    const piped = await runCli(['tasks', 'get', taskId], cleanEnv({ TASKGATE_URL: `${base}/mcp` }));
    expect(piped.code, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ taskId, status: 'working' });
  });

  it('tools list prints JSON on a pipe', async () => {
    const piped = await runCli(['tools', 'list'], cleanEnv({ TASKGATE_URL: `${base}/mcp` }));
    expect(piped.code, piped.stderr).toBe(0);
    const { tools } = JSON.parse(piped.stdout) as { tools: { name: string; retry: string }[] };
    expect(tools).toEqual([expect.objectContaining({ name: LONG_TOOL_NAME, retry: 'safe', taskSupport: 'optional' })]);
  });
});
