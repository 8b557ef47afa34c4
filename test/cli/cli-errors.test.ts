import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, cleanEnv, REPO_ROOT, runCli } from '../support/cli.ts';
import { createTestDatabase, useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const database = useTestDatabase({ empty: true });

/** One line on stderr, no stack frames, nothing on stdout but the log (`start` logs the modules it loaded). */
function expectOneLine(result: CliResult, exitCode: number, pattern: RegExp): void {
  expect(result.code).toBe(exitCode);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  const stray = result.stdout
    .split('\n')
    .filter((line) => line !== '' && !(line.startsWith('{') && 'level' in JSON.parse(line)));
  expect(stray).toEqual([]);
}

async function migrationTableExists(url: string): Promise<boolean> {
  const client = testClient({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT to_regclass('taskgate_migrations') AS present");
    return rows[0]?.present !== null;
  } finally {
    await client.end();
  }
}

describe('taskgate refuses bad configuration with one line and a sysexits code', () => {
  it('PORT=abc exits 78 naming PORT, and touches nothing', async () => {
    const result = await runCli(['start'], cleanEnv({ DATABASE_URL: database.url, PORT: 'abc' }));
    expectOneLine(
      result,
      78,
      /^taskgate: invalid configuration: PORT must be an integer from 0 to 65535 \(got "abc"\) \[TG_CONFIG_INVALID\]$/,
    );
    expect(await migrationTableExists(database.url)).toBe(false);
  });

  it('a malformed DATABASE_URL exits 78 naming DATABASE_URL', async () => {
    const result = await runCli(['start'], cleanEnv({ DATABASE_URL: 'postgres//nohost' }));
    expectOneLine(result, 78, /invalid configuration: DATABASE_URL is not a valid URL .*\[TG_CONFIG_INVALID\]$/);
  });

  it('an unreachable database exits 69 naming the target and the cause, not the password', async () => {
    const result = await runCli(
      ['start'],
      cleanEnv({ DATABASE_URL: 'postgres://taskgate:s3cret@127.0.0.1:1/taskgate' }),
    );
    expectOneLine(
      result,
      69,
      /^taskgate: database unreachable at 127\.0\.0\.1:1\/taskgate \(DATABASE_URL\): .*ECONNREFUSED.* \[TG_DB_UNREACHABLE\]$/,
    );
    expect(result.stderr).not.toContain('s3cret');
  });

  it('a database that does not exist on a reachable server exits 69 with the server’s reason', async () => {
    const url = new URL(database.url);
    url.pathname = '/taskgate_no_such_database';
    const result = await runCli(['migrate', 'status'], cleanEnv({ DATABASE_URL: url.toString() }));
    expectOneLine(result, 69, /database "taskgate_no_such_database" does not exist \[TG_DB_UNREACHABLE\]$/);
  });

  it('binding beyond loopback without tokens exits 78', async () => {
    const result = await runCli(['start'], cleanEnv({ DATABASE_URL: database.url, HOST: '0.0.0.0' }));
    expectOneLine(
      result,
      78,
      /TASKGATE_TOKENS \(or TASKGATE_OAUTH_ISSUER\) must be set when HOST is not a loopback address/,
    );
  });

  it('an unknown command, option or role exits 64', async () => {
    expectOneLine(
      await runCli(['launch'], cleanEnv()),
      64,
      /^taskgate: unknown command "launch" \(run taskgate help\) \[TG_USAGE\]$/,
    );
    expectOneLine(
      await runCli(['strat'], cleanEnv()),
      64,
      /^taskgate: unknown command "strat"; did you mean start\? \(run taskgate help\) \[TG_USAGE\]$/,
    );
    // The nearest option the command takes is named; none when nothing is near.
    expectOneLine(
      await runCli(['start', '--roles', 'api'], cleanEnv()),
      64,
      /^taskgate: unknown option --roles for start; did you mean --role\? \(run taskgate start --help\) \[TG_USAGE\]$/,
    );
    expectOneLine(
      await runCli(['migrate', 'status', '--jsno'], cleanEnv()),
      64,
      /^taskgate: unknown option --jsno for migrate; did you mean --json\? \(run taskgate migrate --help\) \[TG_USAGE\]$/,
    );
    expectOneLine(
      await runCli(['mcp-stdio', '--tool=./x.ts'], cleanEnv()),
      64,
      /^taskgate: unknown option --tool for mcp-stdio; did you mean --tools\? /,
    );
    expectOneLine(
      await runCli(['reconcile', 'list', '--colour'], cleanEnv()),
      64,
      /^taskgate: unknown option --colour for reconcile \(run taskgate reconcile --help\) \[TG_USAGE\]$/,
    );
    expectOneLine(
      await runCli(['start', '--role', 'api,cron'], cleanEnv()),
      64,
      /--role takes a comma list of api, worker, relay/,
    );
    expectOneLine(await runCli(['migrate', 'sideways'], cleanEnv()), 64, /migrate takes one of up, down, status, plan/);
    expectOneLine(
      await runCli(['migrate', 'up', '--to', 'latest'], cleanEnv()),
      64,
      /--to takes a migration version number/,
    );
  });

  it('mcp-stdio with no tools to run in-process says to name a tool module, or --no-worker', async () => {
    expectOneLine(
      // Its logs go to stderr too: only the error line here.
      await runCli(['mcp-stdio', '--tools', 'none'], cleanEnv({ LOG_LEVEL: 'warn' })),
      64,
      /^taskgate: mcp-stdio has no tools to run in-process: name a tool module with --tools <file or package> \(or TASKGATE_TOOLS\), or add --no-worker .*\[TG_USAGE\]$/,
    );
  });

  it('help prints the usage and exits 0', async () => {
    const result = await runCli(['help'], cleanEnv());
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: taskgate <command>');
  });

  it("start, migrate and mcp-stdio --help print that command's usage and exit 0", async () => {
    for (const command of ['start', 'migrate', 'mcp-stdio']) {
      const result = await runCli([command, '--help'], cleanEnv());
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(new RegExp(`^Usage: taskgate ${command} `));
    }
  });

  it('--version, -v and version print the package version and exit 0', async () => {
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    for (const args of [['--version'], ['-v'], ['version']]) {
      const result = await runCli(args, cleanEnv());
      expect(result).toMatchObject({ code: 0, stdout: `taskgate ${version}\n`, stderr: '' });
    }
  });
});

describe('a database that goes away while taskgate starts', () => {
  it('exits 69 (TG_DB_UNREACHABLE), not 70, when the connections its roles open are cut', async () => {
    const migrated = await createTestDatabase();
    // A proxy in front of a migrated database: the probe's and the schema check's connections go
    // through, every later one (the worker role's) is reset at once, as a Postgres restart or a
    // backend-kill storm would do it.
    const target = new URL(migrated.url);
    let connections = 0;
    const proxy = net.createServer((client) => {
      connections += 1;
      if (connections > 2) {
        client.resetAndDestroy();
        return;
      }
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close);
      upstream.on('error', close);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const via = new URL(migrated.url);
      via.port = String((proxy.address() as net.AddressInfo).port);
      const result = await runCli(
        ['start', '--role', 'worker', '--no-migrate'],
        cleanEnv({ DATABASE_URL: via.toString(), LOG_LEVEL: 'silent' }),
      );
      expect(connections).toBeGreaterThan(2);
      expectOneLine(result, 69, /^taskgate: the database became unreachable while starting: .* \[TG_DB_UNREACHABLE\]$/);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
      await migrated.drop();
    }
  });
});
