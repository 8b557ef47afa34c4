import { describe, expect, it } from 'vitest';
import { COMMANDS } from './command-table.ts';
import { commandUsage, main, USAGE } from './main.ts';

interface Run {
  readonly code: number;
  readonly stdout: string[];
  readonly stderr: string[];
}

/** One CLI invocation in-process, with an environment of its own (nothing of the test runner's). */
async function run(...argv: string[]): Promise<Run> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(argv, {
    env: {},
    cwd: '/nonexistent',
    stdout: (line) => stdout.push(line),
    stderr: (line) => stderr.push(line),
  });
  return { code, stdout, stderr };
}

describe('taskgate <command> --help', () => {
  for (const command of ['start', 'migrate', 'mcp-stdio'] as const) {
    for (const flag of ['--help', '-h']) {
      it(`${command} ${flag} prints the usage of ${command} and exits 0, touching nothing`, async () => {
        expect(await run(command, flag)).toEqual({ code: 0, stdout: [commandUsage(command)], stderr: [] });
      });
    }
  }

  it("a command's usage is its part of the general usage text", () => {
    expect(commandUsage('start')).toMatch(/^Usage: taskgate start \[options\]\n\n {2}start \[--role /);
    expect(commandUsage('migrate')).toContain('  migrate status [--json]');
    expect(commandUsage('migrate')).not.toContain('mcp-stdio');
    for (const command of ['start', 'migrate', 'mcp-stdio'] as const) {
      const own = commandUsage(command).split('\n\n')[1] as string;
      expect(USAGE).toContain(own);
    }
  });

  it('asks for help wherever --help stands among the options, not after --', async () => {
    expect(await run('migrate', 'up', '--to', '3', '--help')).toMatchObject({ code: 0, stderr: [] });
    expect(await run('start', '--role', 'api', '-h')).toMatchObject({ code: 0, stderr: [] });
    expect(await run('start', '--', '--help')).toMatchObject({
      code: 64,
      stderr: [expect.stringMatching(/^taskgate: Unexpected argument '--help'.*\[TG_USAGE\]$/)],
    });
  });

  it('help COMMAND prints that command’s usage; help of no such command exits 64', async () => {
    expect(await run('help', 'mcp-stdio')).toEqual({ code: 0, stdout: [commandUsage('mcp-stdio')], stderr: [] });
    expect(await run('help', 'launch')).toEqual({
      code: 64,
      stdout: [],
      stderr: ['taskgate: help knows no command "launch"; run taskgate help for the list [TG_USAGE]'],
    });
  });
});

describe('the usage text', () => {
  it('says the demo modules are the default tool modules in a checkout only', () => {
    const flat = USAGE.replace(/\s+/g, ' ');
    expect(flat).toContain(
      'else, in a checkout, the demo modules under examples/; an installed CLI loads none); --tools none loads no module',
    );
    expect(flat).toContain('else, in a checkout, the demo modules; an installed CLI includes none)');
    expect(flat).not.toMatch(/else the demo modules/);
  });
});

describe('taskgate -v', () => {
  it('prints the version as --version does', async () => {
    const version = await run('--version');
    expect(version).toMatchObject({ code: 0, stderr: [] });
    expect(version.stdout).toEqual([expect.stringMatching(/^taskgate \d+\.\d+\.\d+/)]);
    expect(await run('-v')).toEqual(version);
  });
});

describe('an unknown option', () => {
  it("names the option, the nearest one the command takes, and the command's help, in one line", async () => {
    expect(await run('migrate', 'up', '--bogus')).toEqual({
      code: 64,
      stdout: [],
      stderr: ['taskgate: unknown option --bogus for migrate (run taskgate migrate --help) [TG_USAGE]'],
    });
    expect(await run('start', '--roles', 'api')).toEqual({
      code: 64,
      stdout: [],
      stderr: [
        'taskgate: unknown option --roles for start; did you mean --role? (run taskgate start --help) [TG_USAGE]',
      ],
    });
  });
});

describe('the command table', () => {
  it('gives every command its --help, its lines of the usage text, in the order of the table', async () => {
    let at = -1;
    for (const command of COMMANDS) {
      expect(await run(command.name, '--help')).toEqual({ code: 0, stdout: [commandUsage(command.name)], stderr: [] });
      expect(commandUsage(command.name)).toContain(`Usage: taskgate ${command.synopsis}\n\n${command.usage}\n`);
      const found = USAGE.indexOf(command.usage);
      expect(found, command.name).toBeGreaterThan(at);
      at = found;
    }
  });

  it("refuses an option no command takes, naming the command's own help", async () => {
    for (const command of COMMANDS) {
      const args = command.name === 'call' ? [command.name, 'greet', '--bogus'] : [command.name, '--bogus'];
      expect(await run(...args), command.name).toEqual({
        code: 64,
        stdout: [],
        stderr: [
          `taskgate: unknown option --bogus for ${command.name} (run taskgate ${command.name} --help) [TG_USAGE]`,
        ],
      });
    }
  });

  it('names the nearest command for an unknown one, and prints the usage with none', async () => {
    expect(await run('strat')).toEqual({
      code: 64,
      stdout: [],
      stderr: ['taskgate: unknown command "strat"; did you mean start? (run taskgate help) [TG_USAGE]'],
    });
    expect(await run('frobnicate')).toMatchObject({
      code: 64,
      stderr: ['taskgate: unknown command "frobnicate" (run taskgate help) [TG_USAGE]'],
    });
    expect(await run()).toEqual({ code: 64, stdout: [USAGE], stderr: [] });
  });
});
