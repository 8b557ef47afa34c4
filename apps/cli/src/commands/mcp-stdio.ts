import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { cliVersion, toolsOption, withTraces } from '../command-support.ts';

/** How long mcp-stdio waits for a client's first message before loading the server. */
const FIRST_LINE_WAIT_MS = 250;

const FLAGS = {
  'no-worker': { type: 'boolean' },
  tools: { type: 'string', multiple: true },
} as const;

export const mcpStdio: Command = {
  name: 'mcp-stdio',
  synopsis: 'mcp-stdio [options]',
  usage: `  mcp-stdio [--no-worker] [--tools MODULE[,MODULE]]
                              serve MCP on stdin/stdout (logs on stderr), running the tool
                              handlers of the given modules (default as for start) in-process
                              unless --no-worker`,
  stopsOnSignals: true,
  async run(argv, { io, loadConfig }) {
    const { values } = parseCommandArgs('mcp-stdio', argv, FLAGS, false);
    const { config, warnings } = loadConfig();
    // Before anything heavier loads (even the logger): initialize and server/discover are
    // answered from here while the database, the worker and the catalog start
    // (apps/api/src/mcp/transports/stream/stdio-front.ts).
    const { StdioFront } = await import('@taskgate/api/stdio-front');
    const server = { name: 'taskgate', version: await cliVersion() };
    const front = new StdioFront({ input: process.stdin, output: process.stdout, server });
    // Loading the rest blocks the event loop for most of a second: the client's first message
    // (a client speaks first, at once) is answered before that, or after 250 ms without one.
    await front.firstLine(FIRST_LINE_WAIT_MS);
    // stdout is the protocol channel: logs go to stderr.
    const { createLogger } = await import('../logger.ts');
    const logger = createLogger(config.logLevel, 2, config.logFormat);
    for (const warning of warnings) logger.warn({}, warning);
    const { runMcpStdio } = await import('../run/mcp-stdio.ts');
    return await withTraces(config, () =>
      runMcpStdio(
        { worker: values['no-worker'] !== true, tools: toolsOption(values.tools), cwd: io.cwd, front, server },
        config,
        logger,
      ),
    );
  },
};
