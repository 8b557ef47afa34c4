import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import { nearest, parseCommandArgs } from './arguments.ts';
import { type Config, type LogLevel, loadConfig, NO_TOOLS, splitList } from './config.ts';
import { ROLES, type Role } from './roles.ts';
import type { ServerTarget } from './server-target.ts';
import { DUPLICATE_SIGNAL_WINDOW_MS } from './stop-signals.ts';

/** How long mcp-stdio waits for a client's first message before loading the server. */
const FIRST_LINE_WAIT_MS = 250;

/** Each command's lines of the usage text; `taskgate <command> --help` prints its own. */
const COMMAND_USAGE = {
  start: `  start [--role api,worker,relay] [--no-migrate] [--tools MODULE[,MODULE]]
                              run migrations, then the chosen roles (default: all three),
                              serving the tools of the given modules (default: TASKGATE_TOOLS,
                              else, in a checkout, the demo modules under examples/; an
                              installed CLI loads none); --tools none loads no module: an API
                              that offers what the workers publish`,
  migrate: `  migrate up [--to N]         apply pending migrations and install/upgrade pg-boss's schema,
                              then each tool module's (once Taskgate's are all applied)
  migrate down [--to N|--all] revert Taskgate's newest migration, those above N, or all of
                              them (a tool module's tables may depend on Taskgate's: revert
                              the module first, with down --module NAME --all); pg-boss's
                              schema "pgboss" and its jobs stay (DROP SCHEMA pgboss CASCADE)
  migrate down --module NAME [--to N|--all]
                              the same for the migrations of tool module NAME
  migrate status [--json]     list every migration, Taskgate's and each tool module's, as
                              applied, pending, edited, unknown, or unloaded (its module is
                              not loaded now: left alone)
  migrate plan [--to N]       print the SQL that 'up' would run, without running it: only
                              SQL on stdout (the database it was read from on stderr)
  migrate … --tools SPEC      tool modules whose migrations to include: a path (./tools.ts)
                              or a package name, repeatable or comma-separated (default:
                              TASKGATE_TOOLS, else, in a checkout, the demo modules; an
                              installed CLI includes none)`,
  'mcp-stdio': `  mcp-stdio [--no-worker] [--tools MODULE[,MODULE]]
                              serve MCP on stdin/stdout (logs on stderr), running the tool
                              handlers of the given modules (default as for start) in-process
                              unless --no-worker`,
  call: `  call TOOL [--arg KEY=VALUE]... [--json '{...}'] [--url URL] [--token TOKEN] [-- COMMAND...]
                              call a tool over MCP (TASKGATE_URL, default
                              http://127.0.0.1:8080/mcp; TASKGATE_TOKEN), or on the stdio of the
                              server COMMAND starts (-- npx taskgate mcp-stdio): progress on one line;
                              Ctrl-C cancels and waits for the task to end, Ctrl-C again leaves
                              it running. A value is JSON unless the tool's schema says string;
                              the result's text on a terminal, its JSON otherwise`,
  tasks: `  tasks get|cancel|watch TASK_ID [--json] [--url URL] [--token TOKEN] [-- COMMAND...]
                              a task (readable on a terminal: progress, times, result; JSON on
                              a pipe); cancel it (the acknowledgement, then the status it ends
                              in); or follow it until it ends
  tasks list [--status S] [--limit N] [--cursor C] [--json]
                              the newest tasks, as a table (GET /v1/tasks); the last line
                              names the --cursor of the next page`,
  tools: `  tools list [--json] [--url URL] [--token TOKEN]
                              the tools the server offers, what its workers publish (GET
                              /v1/tools): a table on a terminal, JSON on a pipe or with --json`,
  keys: `  keys get KEY [--json] [--url URL] [--token TOKEN]
                              the ledger's record of an idempotency key: did the call commit, and
                              with what result (GET /v1/idempotency-keys/KEY)`,
  review: `  review [--url URL] [--token TOKEN] [--json] [--keepalive-wait MS]
                              the reliability review of a live server: the race table per
                              transport, each tool's retry class, idempotency key and clocks, a
                              stream's SSE headers and keepalive, the buffer policy and the
                              reconnect plan; exits 1 on a finding (a mutation without a key, a
                              tool without a max clock, a stream header missing)`,
  reconcile: `  reconcile list [--state open|resolved|all] [--tenant ID] [--limit N] [--before ID] [--json]
                              the calls that left something to decide: unknown outcomes and
                              work abandoned after an irreversible step; newest first, open
                              ones by default; the last line names the --before of the next page
  reconcile … --url URL [--token TOKEN]
                              through a server's /v1/reconciliation-items (TASKGATE_URL,
                              TASKGATE_TOKEN; the token's tenant, scope taskgate:admin); without
                              a URL, every tenant's (or --tenant's) from DATABASE_URL
  reconcile show ID [--json]  one item, with what was known when it opened (ending, last
                              progress, steps and the irreversible steps' results)
  reconcile resolve ID --note TEXT [--by NAME]
                              close an item with what was found and done (--by defaults to
                              the operating-system user)`,
} as const;
type Command = keyof typeof COMMAND_USAGE;

const CONFIGURATION = `Configuration comes from the environment: DATABASE_URL, HOST, PORT, TASKGATE_TOKENS,
TASKGATE_DATA_DIR, TASKGATE_ALLOWED_ORIGINS, TASKGATE_SHUTDOWN_GRACE_MS, TASKGATE_WORKER_CONCURRENCY,
TASKGATE_HEALTH_PORT, TASKGATE_TOOLS, TASKGATE_TOOL_CONCURRENCY, TASKGATE_CATALOG_WINDOW_MS,
LOG_LEVEL (see README.md).`;

const SIGNALS = `SIGTERM or SIGINT stops gracefully; the same signal again within ${DUPLICATE_SIGNAL_WINDOW_MS / 1_000} s is the
same request; another signal (or the same one later) exits at once.`;

export const USAGE = `Usage: taskgate <command>

Commands:
${COMMAND_USAGE.start}
${COMMAND_USAGE.migrate}
${COMMAND_USAGE['mcp-stdio']}
${COMMAND_USAGE.call}
${COMMAND_USAGE.tasks}
${COMMAND_USAGE.tools}
${COMMAND_USAGE.keys}
${COMMAND_USAGE.review}
${COMMAND_USAGE.reconcile}
  version                     print the version (also --version, -v)
  help [COMMAND]              show this text, or one command's (also COMMAND --help, -h)

${CONFIGURATION}

${SIGNALS}`;

/** `taskgate <command> --help`: that command's lines of the usage text. */
export function commandUsage(command: Command): string {
  const synopsis =
    command === 'migrate'
      ? 'migrate up|down|status|plan [options]'
      : command === 'reconcile'
        ? 'reconcile list|show|resolve [options]'
        : command === 'tasks'
          ? 'tasks get|cancel|watch|list [TASK_ID] [options]'
          : command === 'keys'
            ? 'keys get KEY [options]'
            : command === 'tools'
              ? 'tools list [options]'
              : command === 'call'
                ? 'call TOOL [options]'
                : `${command} [options]`;
  // Only the long-running servers stop on signals as SIGNALS says (call says its own).
  const tail = command === 'start' || command === 'mcp-stdio' ? `\n\n${SIGNALS}` : '';
  return `Usage: taskgate ${synopsis}\n\n${COMMAND_USAGE[command]}\n\n${CONFIGURATION}${tail}`;
}

function isCommand(name: string | undefined): name is Command {
  return name !== undefined && Object.hasOwn(COMMAND_USAGE, name);
}

/**
 * `--help` or `-h` among a command's arguments (before a `--`, after which nothing is an option),
 * wherever it stands: `migrate up --help` asks for help as much as `migrate --help` does.
 */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

export interface Io {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
}

/** Runs one CLI invocation and resolves with the process exit code; never throws. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let logLevel: LogLevel = 'info';
  try {
    const [command, ...rest] = argv;
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      const topic = command === 'help' ? rest[0] : undefined;
      if (topic !== undefined && !isCommand(topic)) {
        throw new TaskgateError(
          'TG_USAGE',
          `help knows no command ${JSON.stringify(topic)}; run taskgate help for the list`,
        );
      }
      io.stdout(topic === undefined ? USAGE : commandUsage(topic));
      return command === undefined ? 64 : 0;
    }
    if (command === 'version' || command === '--version' || command === '-v') {
      io.stdout(`taskgate ${await version()}`);
      return 0;
    }
    if (isCommand(command) && asksForHelp(rest)) {
      io.stdout(commandUsage(command));
      return 0;
    }
    if (command === 'start') {
      const args = { ...parseStartArgs(rest), cwd: io.cwd };
      const { config, warnings } = loadConfig(io.env, io.cwd);
      logLevel = config.logLevel;
      const { createLogger } = await import('./logger.ts');
      const logger = createLogger(config.logLevel, 1, config.logFormat);
      for (const warning of warnings) logger.warn({}, warning);
      // Loaded only now: usage and configuration errors answer without loading pg-boss, Fastify and PGlite.
      const { runStart } = await import('./run/start.ts');
      return await withTraces(config, () => runStart(args, config, logger));
    }
    if (command === 'migrate') {
      const args = parseMigrateArgs(rest);
      const { config, warnings } = loadConfig(io.env, io.cwd);
      logLevel = config.logLevel;
      const logger = await commandLogger(config, warnings);
      const { runMigrate } = await import('./run/migrate.ts');
      return await runMigrate({ ...args, cwd: io.cwd }, config, logger, { write: io.stdout, note: io.stderr });
    }
    if (command === 'reconcile') {
      const { values, positionals } = parseCommandArgs(
        'reconcile',
        rest,
        {
          state: { type: 'string' },
          tenant: { type: 'string' },
          limit: { type: 'string' },
          before: { type: 'string' },
          json: { type: 'boolean' },
          note: { type: 'string' },
          by: { type: 'string' },
          url: { type: 'string' },
          token: { type: 'string' },
        },
        true,
      );
      const { parseReconcileArgs, runReconcile } = await import('./run/reconcile.ts');
      const args = parseReconcileArgs(values, positionals);
      const url = values.url ?? io.env.TASKGATE_URL;
      const token = values.token ?? io.env.TASKGATE_TOKEN;
      if (url !== undefined && !/^https?:\/\//.test(url))
        throw new TaskgateError('TG_USAGE', `--url takes an http(s) URL of the server (got ${JSON.stringify(url)})`);
      if (url !== undefined && values.tenant !== undefined) {
        throw new TaskgateError(
          'TG_USAGE',
          "--tenant reads the database; through --url the token's tenant is the one shown (unset TASKGATE_URL to read the database)",
        );
      }
      if (url === undefined && values.token !== undefined) {
        throw new TaskgateError('TG_USAGE', '--token goes with --url: without one, reconcile reads the database');
      }
      const { config, warnings } = loadConfig(io.env, io.cwd, ['TASKGATE_URL', 'TASKGATE_TOKEN']);
      logLevel = config.logLevel;
      const logger = await commandLogger(config, warnings);
      const { asCliError } = await import('./run/tasks.ts');
      return await runReconcile(args, url === undefined ? null : { url, ...(token ? { token } : {}) }, config, logger, {
        write: io.stdout,
        note: io.stderr,
      }).catch((error: unknown) => {
        throw asCliError(error);
      });
    }
    if (command === 'review') {
      const { values } = parseCommandArgs(
        'review',
        rest,
        {
          url: { type: 'string' },
          token: { type: 'string' },
          json: { type: 'boolean' },
          'keepalive-wait': { type: 'string' },
        },
        false,
      );
      const url = values.url ?? io.env.TASKGATE_URL ?? 'http://127.0.0.1:8080/mcp';
      const mcp = /\/mcp\/?$/.test(url) ? url : `${url.replace(/\/$/, '')}/mcp`;
      const wait = values['keepalive-wait'] ?? '20000';
      if (!/^\d{1,6}$/.test(wait))
        throw new TaskgateError('TG_USAGE', `--keepalive-wait takes milliseconds (got ${JSON.stringify(wait)})`);
      const token = values.token ?? io.env.TASKGATE_TOKEN;
      const { runReview } = await import('./run/review.ts');
      const { asCliError } = await import('./run/tasks.ts');
      return await runReview(
        { url: mcp, ...(token ? { token } : {}), json: values.json === true, keepaliveWaitMs: Number(wait) },
        { stdout: io.stdout, stderr: io.stderr },
      ).catch((error: unknown) => {
        throw asCliError(error);
      });
    }
    if (command === 'call' || command === 'tasks' || command === 'keys') {
      const { splitServerCommand } = await import('./server-target.ts');
      const { own, server: serverCommand } = splitServerCommand(rest);
      const { values, positionals } = parseCommandArgs(
        command,
        own,
        {
          arg: { type: 'string', multiple: true },
          json: { type: command === 'call' ? 'string' : 'boolean' },
          url: { type: 'string' },
          token: { type: 'string' },
          status: { type: 'string' },
          limit: { type: 'string' },
          cursor: { type: 'string' },
        },
        true,
      );
      const listOnly = values.status !== undefined || values.limit !== undefined || values.cursor !== undefined;
      if (command !== 'tasks' && listOnly) {
        throw new TaskgateError('TG_USAGE', '--status, --limit and --cursor only apply to taskgate tasks list');
      }
      const url = values.url ?? io.env.TASKGATE_URL ?? 'http://127.0.0.1:8080/mcp';
      const token = values.token ?? io.env.TASKGATE_TOKEN;
      if (!/^https?:\/\//.test(url))
        throw new TaskgateError('TG_USAGE', `--url takes an http(s) URL of /mcp (got ${JSON.stringify(url)})`);
      if (serverCommand !== null && (values.url !== undefined || values.token !== undefined)) {
        throw new TaskgateError(
          'TG_USAGE',
          '--url and --token reach a server over HTTP; -- COMMAND starts one on stdio: one or the other',
        );
      }
      const [command0, ...commandArgs] = serverCommand ?? [];
      const target: ServerTarget =
        command0 === undefined
          ? { kind: 'http', url, ...(token ? { token } : {}) }
          : { kind: 'stdio', command: command0, args: commandArgs, env: stringsOf(io.env) };
      const restOnly = command === 'keys' || positionals[0] === 'list';
      if (serverCommand !== null && restOnly) {
        throw new TaskgateError(
          'TG_USAGE',
          `-- COMMAND applies to call and tasks get|cancel|watch: ${command === 'keys' ? 'keys get' : 'tasks list'} reads the REST API (--url)`,
        );
      }
      if (command === 'call') {
        const [tool, ...extra] = positionals;
        if (tool === undefined)
          throw new TaskgateError('TG_USAGE', 'call needs the name of a tool; run taskgate call --help');
        if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
        const { runCall } = await import('./run/call.ts');
        const { asCliError } = await import('./run/tasks.ts');
        return await runCall(
          {
            tool,
            pairs: values.arg ?? [],
            ...(typeof values.json === 'string' ? { json: values.json } : {}),
            target,
          },
          {
            stdout: io.stdout,
            stderr: io.stderr,
            terminal: process.stderr.isTTY === true,
            stdoutTerminal: process.stdout.isTTY === true,
            draw: (text) => process.stderr.write(text),
            onInterrupt: (listener) => {
              process.on('SIGINT', listener);
              return () => process.off('SIGINT', listener);
            },
          },
        ).catch((error: unknown) => {
          throw asCliError(error);
        });
      }
      const { asCliError, runKeysGet, runTasks, runTasksList } = await import('./run/tasks.ts');
      if (values.arg !== undefined) throw new TaskgateError('TG_USAGE', '--arg only applies to taskgate call');
      const json = values.json === true;
      if (command === 'keys') {
        const [action, key, ...extra] = positionals;
        if (action !== 'get' || key === undefined || extra.length > 0) {
          throw new TaskgateError('TG_USAGE', 'keys takes get KEY; run taskgate keys --help');
        }
        return await runKeysGet({ url, ...(token ? { token } : {}), key, json }, io.stdout);
      }
      const [action, taskId, ...extra] = positionals;
      if (action === 'list') {
        if (taskId !== undefined) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(taskId)}`);
        let limit: number | undefined;
        if (values.limit !== undefined) {
          if (!/^(?:[1-9][0-9]?|100)$/.test(values.limit))
            throw new TaskgateError(
              'TG_USAGE',
              `--limit takes a whole number from 1 to 100 (got ${JSON.stringify(values.limit)})`,
            );
          limit = Number(values.limit);
        }
        const statuses = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
        if (values.status !== undefined && !statuses.includes(values.status)) {
          throw new TaskgateError(
            'TG_USAGE',
            `--status takes one of ${statuses.join(', ')} (got ${JSON.stringify(values.status)})`,
          );
        }
        return await runTasksList(
          {
            url,
            ...(token ? { token } : {}),
            ...(values.status ? { status: values.status } : {}),
            ...(limit ? { limit } : {}),
            ...(values.cursor ? { cursor: values.cursor } : {}),
            json,
          },
          io.stdout,
          stdoutTerminal(),
        ).catch((error: unknown) => {
          throw asCliError(error);
        });
      }
      if (listOnly) {
        throw new TaskgateError('TG_USAGE', '--status, --limit and --cursor only apply to taskgate tasks list');
      }
      if (action !== 'get' && action !== 'cancel' && action !== 'watch') {
        throw new TaskgateError('TG_USAGE', 'tasks takes one of get, cancel, watch, list; run taskgate tasks --help');
      }
      if (taskId === undefined) throw new TaskgateError('TG_USAGE', `tasks ${action} needs a task id`);
      if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
      return await runTasks({ action, taskId, target, json }, io.stdout, stdoutTerminal()).catch((error: unknown) => {
        throw asCliError(error);
      });
    }
    if (command === 'tools') {
      const { values, positionals } = parseCommandArgs(
        'tools',
        rest,
        { json: { type: 'boolean' }, url: { type: 'string' }, token: { type: 'string' } },
        true,
      );
      const [action, ...extra] = positionals;
      if (action !== 'list' || extra.length > 0) {
        throw new TaskgateError('TG_USAGE', 'tools takes list; run taskgate tools --help');
      }
      const url = values.url ?? io.env.TASKGATE_URL ?? 'http://127.0.0.1:8080/mcp';
      if (!/^https?:\/\//.test(url))
        throw new TaskgateError('TG_USAGE', `--url takes an http(s) URL of /mcp (got ${JSON.stringify(url)})`);
      const token = values.token ?? io.env.TASKGATE_TOKEN;
      const { runToolsList } = await import('./run/tools.ts');
      return await runToolsList(
        { url, ...(token ? { token } : {}), json: values.json === true },
        io.stdout,
        stdoutTerminal(),
      );
    }
    if (command === 'mcp-stdio') {
      const { values } = parseCommandArgs(
        'mcp-stdio',
        rest,
        { 'no-worker': { type: 'boolean' }, tools: { type: 'string', multiple: true } },
        false,
      );
      const { config, warnings } = loadConfig(io.env, io.cwd);
      logLevel = config.logLevel;
      // Before anything heavier loads (even the logger): initialize and server/discover are
      // answered from here while the database, the worker and the catalog start
      // (apps/api/src/mcp/stdio-front.ts).
      const { StdioFront } = await import('@taskgate/api/stdio-front');
      const server = { name: 'taskgate', version: await version() };
      const front = new StdioFront({ input: process.stdin, output: process.stdout, server });
      // Loading the rest blocks the event loop for most of a second: the client's first message
      // (a client speaks first, at once) is answered before that, or after 250 ms without one.
      await front.firstLine(FIRST_LINE_WAIT_MS);
      // stdout is the protocol channel: logs go to stderr.
      const { createLogger } = await import('./logger.ts');
      const logger = createLogger(config.logLevel, 2, config.logFormat);
      for (const warning of warnings) logger.warn({}, warning);
      const { runMcpStdio } = await import('./run/mcp-stdio.ts');
      return await withTraces(config, () =>
        runMcpStdio(
          { worker: values['no-worker'] !== true, tools: toolsOption(values.tools), cwd: io.cwd, front, server },
          config,
          logger,
        ),
      );
    }
    const guess = nearest(command, [...Object.keys(COMMAND_USAGE), 'help', 'version']);
    throw new TaskgateError(
      'TG_USAGE',
      `unknown command ${JSON.stringify(command)}${guess === null ? '' : `; did you mean ${guess}?`} (run taskgate help)`,
    );
  } catch (error) {
    return report(await asOutage(error), logLevel, io);
  }
}

/**
 * The logger of a command that prints its own output (migrate, reconcile): stdout carries that
 * output, so logs go to stderr, and say something only when it matters (warn, unless debugging).
 */
async function commandLogger(config: Config, warnings: readonly string[]) {
  const { createLogger } = await import('./logger.ts');
  const logger = createLogger(
    config.logLevel === 'debug' || config.logLevel === 'trace' ? config.logLevel : 'warn',
    2,
    config.logFormat,
  );
  for (const warning of warnings) logger.warn({}, warning);
  return logger;
}

/**
 * Runs a long-lived command with traces on when an OTLP endpoint is configured, and sends the
 * last spans before it returns (OpenTelemetry is loaded only then).
 */
async function withTraces(config: Config, run: () => Promise<number>): Promise<number> {
  if (config.traces === null) return run();
  const { configureTracing } = await import('@taskgate/metrics');
  const tracing = await configureTracing(config.traces);
  try {
    return await run();
  } finally {
    await tracing.shutdown().catch(() => {});
  }
}

/**
 * A database that went away during start-up (a restart, a backend terminated, no free connection)
 * is TG_DB_UNREACHABLE (exit 69, "try again"), not an internal error, wherever it surfaced. Loaded
 * only when something failed, so usage errors still answer without loading the database code.
 */
async function asOutage(error: unknown): Promise<unknown> {
  if (isTaskgateError(error)) return error;
  const { isDatabaseUnavailable } = await import('@taskgate/db');
  if (!isDatabaseUnavailable(error)) return error;
  return new TaskgateError(
    'TG_DB_UNREACHABLE',
    `the database became unreachable while starting: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** One line on stderr naming the problem and its code; a stack trace only at debug level. */
function report(error: unknown, logLevel: LogLevel, io: Io): number {
  if (isTaskgateError(error)) {
    io.stderr(`taskgate: ${error.message} [${error.code}]`);
    return error.definition.exitCode;
  }
  const internal = new TaskgateError('TG_INTERNAL', error instanceof Error ? error.message : String(error));
  const verbose = logLevel === 'debug' || logLevel === 'trace';
  io.stderr(
    `taskgate: internal error: ${oneLine(internal.message)} [${internal.code}]${verbose ? '' : ' (LOG_LEVEL=debug shows the stack)'}`,
  );
  if (verbose && error instanceof Error && error.stack) io.stderr(error.stack);
  return internal.definition.exitCode;
}

/** Whether stdout is a terminal, and how wide: tables fit it, and a pipe gets JSON where a command says so. */
function stdoutTerminal(): { isTTY: boolean; columns?: number } {
  return {
    isTTY: process.stdout.isTTY === true,
    ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
  };
}

/** The environment a started stdio server inherits: this process's, its unset names left out. */
function stringsOf(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function parseStartArgs(argv: readonly string[]): { roles: Role[]; migrate: boolean; tools: string[] } {
  const { values } = parseCommandArgs(
    'start',
    argv,
    { role: { type: 'string' }, 'no-migrate': { type: 'boolean' }, tools: { type: 'string', multiple: true } },
    false,
  );
  const roles = values.role === undefined ? [...ROLES] : values.role.split(',').map((role) => role.trim());
  const unknown = roles.filter((role) => !(ROLES as readonly string[]).includes(role));
  if (unknown.length > 0 || roles.length === 0) {
    throw new TaskgateError(
      'TG_USAGE',
      `--role takes a comma list of ${ROLES.join(', ')} (got ${JSON.stringify(values.role)})`,
    );
  }
  return {
    roles: [...new Set(roles)] as Role[],
    migrate: values['no-migrate'] !== true,
    tools: toolsOption(values.tools),
  };
}

/** `--tools a.ts --tools b.ts` or `--tools a.ts,b.ts`; `--tools none` alone loads no module. */
function toolsOption(values: readonly string[] | undefined): string[] {
  const specs = (values ?? []).flatMap((value) => splitList(value));
  if (values !== undefined && specs.length === 0)
    throw new TaskgateError('TG_USAGE', '--tools takes a module path or package name');
  if (specs.includes(NO_TOOLS) && specs.length > 1) {
    throw new TaskgateError(
      'TG_USAGE',
      `--tools ${NO_TOOLS} loads no module, so it cannot be combined with modules (a file named ${NO_TOOLS} is ./${NO_TOOLS})`,
    );
  }
  return specs;
}

function parseMigrateArgs(argv: readonly string[]) {
  const { values, positionals } = parseCommandArgs(
    'migrate',
    argv,
    {
      to: { type: 'string' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
      tools: { type: 'string', multiple: true },
      module: { type: 'string' },
    },
    true,
  );
  const [action, ...extra] = positionals;
  if (action !== 'up' && action !== 'down' && action !== 'status' && action !== 'plan') {
    throw new TaskgateError('TG_USAGE', 'migrate takes one of up, down, status, plan; run taskgate migrate --help');
  }
  if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
  let to: number | undefined;
  if (values.to !== undefined) {
    if (!/^\d+$/.test(values.to))
      throw new TaskgateError('TG_USAGE', `--to takes a migration version number (got ${JSON.stringify(values.to)})`);
    to = Number(values.to);
  }
  if (values.all && action !== 'down') throw new TaskgateError('TG_USAGE', '--all only applies to migrate down');
  if (values.json && action !== 'status') throw new TaskgateError('TG_USAGE', '--json only applies to migrate status');
  if (values.module !== undefined && action !== 'down')
    throw new TaskgateError('TG_USAGE', '--module only applies to migrate down');
  if (values.module === '') throw new TaskgateError('TG_USAGE', '--module takes the name of a tool module');
  const tools = toolsOption(values.tools);
  return { action, to, all: values.all === true, json: values.json === true, tools, module: values.module } as const;
}

/** The version of this CLI: its package's package.json, one level up from src/ or dist/. */
async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
  return String(manifest.version);
}
