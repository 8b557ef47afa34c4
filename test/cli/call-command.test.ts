import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, RunningProcess, runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { PtyProcess } from '../support/pty.ts';

// `taskgate call` and `taskgate tasks` as a person and as a script use them: in a pseudo-terminal
// (a progress bar, Ctrl-C → "cancel requested" → the terminal status, Ctrl-C twice → leave) and
// on pipes (JSON on stdout, parsed).
let database: TestDatabase;
let server: RunningProcess;
let mcpUrl: string;
const ptys: PtyProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  server = new RunningProcess(
    process.execPath,
    [CLI, 'start', '--no-migrate'],
    cleanEnv({ DATABASE_URL: database.url, PORT: '0' }),
  );
  const started = await server.waitForLog((line) => line.msg === 'taskgate started');
  mcpUrl = `${started.url as string}/mcp`;
});
afterAll(async () => {
  for (const pty of ptys) pty.kill();
  server.kill();
  await server.closed;
  await database.drop();
});

function inTerminal(...args: string[]): PtyProcess {
  const pty = new PtyProcess(process.execPath, [CLI, ...args], cleanEnv({ TASKGATE_URL: mcpUrl }));
  ptys.push(pty);
  return pty;
}

describe('taskgate call in a terminal', () => {
  it('shows a progress bar; Ctrl-C says "cancel requested" until the task ends cancelled', async () => {
    const pty = inTerminal('call', 'slow_compute', '--arg', 'seconds=30', '--arg', 'label=pty-cancel');
    await pty.waitForLine(/^\[#*-*\] \d+% /);
    const handedOver = await pty.waitForLine(/^task \S+ working/);
    const taskId = /^task (\S+)/.exec(handedOver)?.[1] as string;
    pty.type('\u0003');
    await pty.waitForLine(new RegExp(`^cancel requested for task ${taskId}`));
    await pty.waitForLine(new RegExp(`^task ${taskId} cancelled$`));
    expect(await pty.closed).toBe(130);
    // Said in that order: nothing claimed the work stopped before the terminal status.
    const said = pty.lines.filter((line) => /cancel requested|cancelled$/.test(line));
    expect(said.map((line) => line.replace(/ for task .*| — .*/, ''))).toEqual([
      'cancel requested',
      `task ${taskId} cancelled`,
    ]);

    const get = await runCli(['tasks', 'get', taskId, '--json'], cleanEnv({ TASKGATE_URL: mcpUrl }));
    expect(get.code).toBe(0);
    expect(JSON.parse(get.stdout)).toMatchObject({ taskId, status: 'cancelled' });
  });

  it('a task cancelled by someone else (the console, an operator) ends the call with TG_TASK_CANCELLED', async () => {
    const pty = inTerminal('call', 'slow_compute', '--arg', 'seconds=30', '--arg', 'label=cancelled-elsewhere');
    const handedOver = await pty.waitForLine(/^task \S+ working/);
    const taskId = /^task (\S+)/.exec(handedOver)?.[1] as string;
    const cancel = await fetch(`${mcpUrl.replace(/\/mcp$/, '')}/v1/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'stopped from the console' }),
    });
    expect(cancel.status).toBe(202);
    await pty.waitForLine(/was cancelled: .*\[TG_TASK_CANCELLED\]$/);
    expect(await pty.closed).toBe(75);
  });

  it('the bar goes on once the call is a task, and tasks watch prints the progress as it rises', async () => {
    const pty = inTerminal('call', 'slow_compute', '--arg', 'seconds=5', '--arg', 'label=pty-progress');
    const handedOver = await pty.waitForLine(/^task \S+ working/);
    const taskId = /^task (\S+)/.exec(handedOver)?.[1] as string;
    const watched = await runCli(['tasks', 'watch', taskId], cleanEnv({ TASKGATE_URL: mcpUrl }));
    expect(watched.code, watched.stderr).toBe(0);
    const steps = watched.stdout
      .split('\n')
      .map((line) => new RegExp(`^${taskId}  progress (\\d+)/100  step \\d+ of 100$`).exec(line)?.[1])
      .filter((step) => step !== undefined)
      .map(Number);
    expect(steps.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < steps.length; i += 1) expect(steps[i]).toBeGreaterThan(steps[i - 1] as number);
    expect(watched.stdout.trimEnd().split('\n').at(-1)).toBe(`${taskId}  completed`);
    expect(await pty.closed).toBe(0);
    // In the terminal, bars came after the task's line, rising to the end.
    const after = pty.lines.slice(pty.lines.indexOf(handedOver) + 1);
    const shares = after.map((line) => /^\[#*-*\] (\d+)% /.exec(line)?.[1]).filter((share) => share !== undefined);
    expect(shares.length).toBeGreaterThanOrEqual(2);
    expect(Number(shares.at(-1))).toBeGreaterThan(Number(shares[0]));
  });

  it('Ctrl-C with a stdio server it started: "cancel requested", then the call ends cancelled', async () => {
    const pty = new PtyProcess(
      process.execPath,
      [
        CLI,
        'call',
        'slow_compute',
        '--arg',
        'seconds=30',
        '--arg',
        'label=pty-stdio',
        '--',
        process.execPath,
        CLI,
        'mcp-stdio',
      ],
      cleanEnv({ DATABASE_URL: database.url }),
    );
    ptys.push(pty);
    await pty.waitForLine(/^\[#*-*\] \d+% /);
    pty.type('\u0003');
    await pty.waitForLine(/^cancel requested/);
    await pty.waitForLine(/^cancelled: the server was told to stop$/);
    expect(await pty.closed).toBe(130);
    // The work ended cancelled. The terminal's SIGINT reaches the server too (it is in the CLI's
    // process group: the SDK's stdio transport cannot start it detached), and taskgate
    // mcp-stdio's graceful stop ends the call the same way.
    const statuses = async () => {
      const listed = await runCli(['tasks', 'list', '--json'], cleanEnv({ TASKGATE_URL: mcpUrl }));
      const { tasks } = JSON.parse(listed.stdout) as { tasks: { status: string; arguments: { label?: string } }[] };
      return tasks.filter((task) => task.arguments.label === 'pty-stdio').map((task) => task.status);
    };
    await expect.poll(statuses, { timeout: 10_000 }).toEqual(['cancelled']);
  });

  it("a second Ctrl-C leaves at once, saying the first one's cancel still ends the task", async () => {
    const pty = inTerminal('call', 'slow_compute', '--arg', 'seconds=30', '--arg', 'label=pty-leave');
    const handedOver = await pty.waitForLine(/^task \S+ working/);
    const taskId = /^task (\S+)/.exec(handedOver)?.[1] as string;
    pty.type('\u0003');
    await pty.waitForLine(/^cancel requested/);
    pty.type('\u0003');
    await pty.waitForLine(
      new RegExp(
        `^left without waiting: the cancel of task ${taskId} stands, and it stops at its next checkpoint unless it finishes first`,
      ),
    );
    expect(await pty.closed).toBe(130);
    // What it said happens: the task ends cancelled, not completed.
    const ended = async () => {
      const get = await runCli(['tasks', 'get', taskId, '--json'], cleanEnv({ TASKGATE_URL: mcpUrl }));
      return (JSON.parse(get.stdout) as { status: string }).status;
    };
    await expect.poll(ended, { timeout: 10_000 }).toBe('cancelled');
  });
});

describe('taskgate call and tasks without a terminal', () => {
  it('prints the result as JSON, and a tool error exits 1', async () => {
    const env = cleanEnv({ TASKGATE_URL: mcpUrl });
    const greet = await runCli(['call', 'greet', '--arg', 'name=Ann'], env);
    expect(greet.code).toBe(0);
    expect(JSON.parse(greet.stdout)).toMatchObject({ structuredContent: { greeting: 'Hello, Ann!' } });
    const failing = await runCli(['call', 'failing_job'], env);
    expect(failing.code).toBe(1);
    expect(JSON.parse(failing.stdout)).toMatchObject({ isError: true });
  });

  it("takes the server's base URL in --url and TASKGATE_URL for every command, its /mcp URL too", async () => {
    const base = mcpUrl.replace(/\/mcp$/, '');
    for (const url of [base, `${base}/`, mcpUrl]) {
      const greet = await runCli(['call', 'greet', '--arg', 'name=Ann', '--url', url], cleanEnv());
      expect(greet.code, `${url}: ${greet.stderr}`).toBe(0);
      expect(JSON.parse(greet.stdout)).toMatchObject({ structuredContent: { greeting: 'Hello, Ann!' } });
      const fromEnv = await runCli(['call', 'greet', '--arg', 'name=Bo'], cleanEnv({ TASKGATE_URL: url }));
      expect(fromEnv.code, `${url}: ${fromEnv.stderr}`).toBe(0);
      const listed = await runCli(['tasks', 'list', '--json', '--limit', '1', '--url', url], cleanEnv());
      expect(listed.code, `${url}: ${listed.stderr}`).toBe(0);
      const [task] = (JSON.parse(listed.stdout) as { tasks: { id: string }[] }).tasks;
      const got = await runCli(['tasks', 'get', task?.id as string, '--json', '--url', url], cleanEnv());
      expect(got.code, `${url}: ${got.stderr}`).toBe(0);
      expect(JSON.parse(got.stdout)).toMatchObject({ taskId: task?.id });
      const tools = await runCli(['tools', 'list', '--json', '--url', url], cleanEnv());
      expect(tools.code, `${url}: ${tools.stderr}`).toBe(0);
      expect(JSON.parse(tools.stdout).tools.map((tool: { name: string }) => tool.name)).toContain('greet');
    }
    const refused = await runCli(['call', 'greet', '--url', 'localhost:8080'], cleanEnv());
    expect(refused).toMatchObject({
      code: 64,
      stderr: 'taskgate: --url takes an http(s) URL of the server (got "localhost:8080") [TG_USAGE]\n',
    });
  });

  it('tasks list and keys get: JSON for scripts, a table and lines for people', async () => {
    const env = cleanEnv({ TASKGATE_URL: mcpUrl });
    const charge = await runCli(
      [
        'call',
        'charge_account',
        '--arg',
        'account=acct-cli',
        '--arg',
        'cents=250',
        '--arg',
        'idempotencyKey=cli-key-1',
      ],
      env,
    );
    expect(charge.code, charge.stderr).toBe(0);
    const key = await runCli(['keys', 'get', 'cli-key-1', '--json'], env);
    expect(key.code, key.stderr).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({ key: 'cli-key-1', operation: 'charge_account' });
    const readable = await runCli(['keys', 'get', 'cli-key-1'], env);
    expect(readable.stdout).toMatch(/^key {8}cli-key-1\noperation {2}charge_account\n/);
    const missing = await runCli(['keys', 'get', 'no-such-key'], env);
    expect(missing.code).toBe(65);
    expect(missing.stderr).toMatch(/\[TG_IDEMPOTENCY_KEY_NOT_FOUND\]\n$/);

    const list = await runCli(['tasks', 'list', '--json', '--limit', '5'], env);
    expect(list.code, list.stderr).toBe(0);
    const page = JSON.parse(list.stdout) as { tasks: { tool: string }[] };
    expect(page.tasks.length).toBeGreaterThan(0);
    expect(page.tasks.length).toBeLessThanOrEqual(5);
    const table = await runCli(['tasks', 'list', '--status', 'cancelled'], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +TOOL +STATUS +CREATED +MESSAGE$/);
    // Page by page: a page of one names the next page's cursor, which lists the next task.
    const first = await runCli(['tasks', 'list', '--limit', '1'], env);
    const cursor = /^more: taskgate tasks list --cursor (\S+)$/m.exec(first.stdout)?.[1];
    expect(cursor, first.stdout).toBeDefined();
    const second = JSON.parse(
      (await runCli(['tasks', 'list', '--limit', '1', '--cursor', cursor as string, '--json'], env)).stdout,
    ) as {
      tasks: { id: string }[];
    };
    expect(second.tasks).toHaveLength(1);
    const firstId = /^(\S+) /m.exec(first.stdout.split('\n')[1] ?? '')?.[1];
    expect(firstId).toBeDefined();
    expect(second.tasks[0]?.id).not.toBe(firstId);
    expect((await runCli(['keys', 'get', 'k', '--cursor', 'x'], env)).code).toBe(64);
    expect((await runCli(['tasks', 'list', '--limit', '0'], env)).code).toBe(64);
  });

  it('names what is wrong: an unknown tool, a value that is not JSON, no server', async () => {
    const env = cleanEnv({ TASKGATE_URL: mcpUrl });
    const unknown = await runCli(['call', 'nope'], env);
    expect(unknown).toMatchObject({ code: 65, stdout: '' });
    expect(unknown.stderr).toBe('taskgate: there is no tool named "nope" [TG_TOOL_UNKNOWN]\n');
    const notJson = await runCli(['call', 'slow_compute', '--arg', 'seconds=abc'], env);
    expect(notJson.code).toBe(64);
    expect(notJson.stderr).toContain('seconds is not a string (its schema says number)');
    const badJson = await runCli(['call', 'greet', '--json', '{name:'], env);
    expect(badJson.code).toBe(64);
    expect(badJson.stderr).toMatch(/^taskgate: --json is not JSON/);
    // An array, a string, null: each named, and before any server is dialled (this URL has none).
    for (const [json, got] of [
      ['[1]', 'an array'],
      ['"x"', 'a string'],
      ['null', 'null'],
    ] as const) {
      const refused = await runCli(['call', 'greet', '--json', json, '--url', 'http://127.0.0.1:1/mcp'], env);
      expect({ json, code: refused.code }).toEqual({ json, code: 64 });
      expect(refused.stderr).toContain(
        `--json takes a JSON object of the arguments, like '{"seconds": 2}' (got ${got})`,
      );
    }
    // A NUL inside a value (a JSON escape: argv itself cannot carry one) is the server's 4xx-class
    // refusal, named, never an internal error.
    const nul = await runCli(['call', 'greet', '--json', '{"name": "a\\u0000b"}'], env);
    expect(nul.code).toBe(65);
    expect(nul.stderr).toMatch(/NUL/);
    expect(nul.stderr).not.toContain('TG_INTERNAL');
    // `__proto__` is an argument like any other: greet takes no such property and says so,
    // where an assignment would have dropped it and greeted.
    const proto = await runCli(['call', 'greet', '--arg', 'name=Ann', '--arg', '__proto__=1'], env);
    expect(proto.code).toBe(65);
    expect(proto.stdout).toBe('');
    expect(proto.stderr).toContain('__proto__');
    // A port nothing listens on (taken, then let go).
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const nobody = await runCli(['call', 'greet', '--url', `http://127.0.0.1:${port}/mcp`], env);
    expect(nobody.code).toBe(69);
    expect(nobody.stderr).toMatch(
      new RegExp(
        `^taskgate: could not connect to http://127.0.0.1:${port}/mcp: .*ECONNREFUSED.*\\[TG_SERVER_UNREACHABLE\\]\n$`,
      ),
    );
  });
});

describe('taskgate call and tasks on a stdio server (-- COMMAND)', () => {
  const stdioServer = ['--', process.execPath, CLI, 'mcp-stdio'];
  const env = () => cleanEnv({ DATABASE_URL: database.url, LOG_LEVEL: 'warn' });

  it('starts the server, calls the tool on its stdin and stdout, and stops it', async () => {
    const greet = await runCli(['call', 'greet', '--arg', 'name=Ann', ...stdioServer], env());
    expect(greet.stderr).toBe('');
    expect(greet.code).toBe(0);
    expect(JSON.parse(greet.stdout)).toMatchObject({ structuredContent: { greeting: 'Hello, Ann!' } });
  });

  it("reads a task the HTTP server created: the server's database is the same", async () => {
    const created = await fetch(`${mcpUrl.replace(/\/mcp$/, '')}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 0, label: 'stdio-get' } }),
    });
    const { id } = (await created.json()) as { id: string };
    const got = await runCli(['tasks', 'get', id, '--json', ...stdioServer], env());
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ taskId: id, status: expect.any(String) });
  });

  it("names a command that does not start, with the server's last words on stderr", async () => {
    const missing = await runCli(['call', 'greet', '--', '/nonexistent/mcp-server'], env());
    expect(missing.code).toBe(69);
    expect(missing.stderr).toContain('/nonexistent/mcp-server');
    expect(missing.stderr).toContain('[TG_SERVER_UNREACHABLE]');
    const dying = await runCli(
      ['call', 'greet', '--', process.execPath, '-e', "console.error('boom: \\u001b[31mno database'); process.exit(3)"],
      env(),
    );
    expect(dying.code).toBe(69);
    expect(dying.stderr).toContain("the stdio server's last words on stderr:\n  boom: \\u001b[31mno database");
    expect(dying.stderr).toContain('[TG_SERVER_UNREACHABLE]');
    // A server that answers and then fails to start says why, with its code: exit 69, not 65.
    const noDatabase = await runCli(
      ['call', 'greet', ...stdioServer],
      cleanEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', LOG_LEVEL: 'warn' }),
    );
    expect(noDatabase.code).toBe(69);
    expect(noDatabase.stderr).toMatch(/the server failed to start: .*\[TG_DB_UNREACHABLE\]/);
  });

  it('refuses a stdio command where it cannot apply, and -- with nothing after it', async () => {
    const cases: [string[], string][] = [
      [['call', 'greet', '--url', mcpUrl, '--', 'x'], '--url and --token reach a server over HTTP'],
      [['call', 'greet', '--'], '-- takes the command of an MCP server'],
      [['tasks', 'list', '--', 'x'], 'tasks list reads the REST API'],
      [['keys', 'get', 'k', '--', 'x'], 'keys get reads the REST API'],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, env());
      expect({ args, code: result.code }).toEqual({ args, code: 64 });
      expect(result.stderr).toContain(message);
    }
  });
});
