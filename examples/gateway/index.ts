import { createRequire } from 'node:module';
import path from 'node:path';
import { defineGateway } from '@taskgate/sdk';

/**
 * Taskgate in front of the official MCP SDK's example server, `server-everything`, over stdio:
 * its tools are published as `ev_<name>`, and each call runs as a task on a worker that holds the
 * server (clocks, progress, cancellation, the retry class given here). The same declaration as a
 * JSON file, for TASKGATE_GATEWAYS, is `gateways.json` beside this one.
 *
 * The server is run from this installation's node_modules when it is there (it is a development
 * dependency of the repository), else fetched by npx.
 */
function everythingServer(): { command: string; args: string[] } {
  try {
    const manifest = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json');
    return { command: process.execPath, args: [path.join(path.dirname(manifest), 'dist/index.js'), 'stdio'] };
  } catch {
    return { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything@2026.8.31', 'stdio'] };
  }
}

export const name = 'gateway-example';

export const gateways = [
  defineGateway({
    name: 'everything',
    prefix: 'ev_',
    stdio: everythingServer(),
    // Every tool is `unsafe` unless said otherwise: the server's annotations are hints, and a
    // lost call of a tool that changes something must not be repeated on a guess.
    defaults: { retry: 'unsafe', timeouts: { maxMs: 60_000 } },
    tools: {
      echo: { retry: 'safe' },
      'get-sum': { retry: 'safe' },
      // Reports progress once per step; its idle clock is reset by each.
      'trigger-long-running-operation': { retry: 'safe', timeouts: { idleMs: 30_000, maxMs: 300_000 } },
    },
  }),
];
