import { PassThrough } from 'node:stream';
import { createMcpCore, type McpCore, type McpCoreOptions, StreamConnection, type TaskEventsHub } from '@taskgate/api';
import type { ToolCatalog } from '@taskgate/tools';
import { type Platform, silentLogger, waitForTask } from './task-platform.ts';

/** The MCP core over a test platform's services, as `taskgate mcp-stdio` builds it. */
export function stdioCore(platform: Platform, hub: TaskEventsHub, pollMs = 100, tools?: ToolCatalog): McpCore {
  return createMcpCore({
    service: platform.service,
    hub,
    tools: tools ?? platform.tools,
    server: { name: 'taskgate', version: 'test' },
    pollMs,
  });
}

/** The MCP core most tests talk to: the platform's tools, a 100 ms poll, a silent log, and `options` on top. */
export function testCore(platform: Platform, hub: TaskEventsHub, options: Partial<McpCoreOptions> = {}): McpCore {
  return createMcpCore({
    service: platform.service,
    hub,
    tools: platform.tools,
    server: { name: 'taskgate', version: 'test' },
    pollMs: 100,
    logger: silentLogger,
    ...options,
  });
}

export interface StdioClient {
  readonly server: StreamConnection;
  readonly input: PassThrough;
  /** Every message the server wrote, in order. */
  readonly received: Record<string, unknown>[];
  /** Writes one line: a message as JSON, or a string as it is (for malformed input). */
  send(message: unknown): void;
  /** The response with this id, once it has arrived. */
  answerTo(id: string | number): Promise<Record<string, unknown>>;
  /** Everything received, once `predicate` holds for it. */
  until(predicate: (received: Record<string, unknown>[]) => boolean): Promise<Record<string, unknown>[]>;
}

/** A client on the other end of a StreamConnection's in-memory pipes: writes lines, collects what comes back. */
export function connectStdio(core: McpCore, tenantId = 'default'): StdioClient {
  const input = new PassThrough();
  const output = new PassThrough();
  const server = new StreamConnection({
    core,
    input,
    output,
    tenantId,
    server: { name: 'taskgate', version: 'test' },
    logger: silentLogger,
  });
  const received: Record<string, unknown>[] = [];
  let partial = '';
  output.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) received.push(JSON.parse(line));
  });
  return {
    server,
    input,
    received,
    send: (message) => {
      input.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
    },
    answerTo: (id) =>
      waitForTask(
        async () => received.find((message) => message.id === id),
        (message) => message !== undefined,
      ) as Promise<Record<string, unknown>>,
    until: (predicate) => waitForTask(async () => received, predicate),
  };
}

/** A client of `core` on the pipe that has initialized a 2025-11-25 session declaring `capabilities`. */
export async function initializedStdio(core: McpCore, capabilities: Record<string, unknown>): Promise<StdioClient> {
  const client = connectStdio(core);
  client.send({
    jsonrpc: '2.0',
    id: 'i',
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities },
  });
  await client.answerTo('i');
  return client;
}
