import {
  LATEST_PROTOCOL_VERSION,
  META,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
} from '@taskgate/protocol';

// What the server says about itself, which needs no database, no tool catalog and no task: the
// light half of the methods, so `taskgate mcp-stdio` can answer initialize and server/discover
// while the rest still loads (stdio-front.ts imports only this and @taskgate/protocol).

export interface ServerIdentity {
  readonly name: string;
  readonly version: string;
}

/**
 * How Taskgate presents itself to a person choosing a server (basic/lifecycle's Implementation):
 * a display name, one sentence, and an icon small enough to travel as a data: URI, so a client
 * needs no fetch (and no trust in another origin) to show it. No websiteUrl: the project has no
 * site a deployment's users should be sent to.
 */
const PRESENTATION = {
  title: 'Taskgate',
  description: 'Runs every MCP tool call as a durable task: retried safely, cancellable, and kept through restarts.',
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCA2NCA2NCI+PHJlY3Qgd2lkdGg9IjY0IiBoZWlnaHQ9IjY0IiByeD0iMTIiIGZpbGw9IiMxZjZmZWIiLz48cGF0aCBkPSJNMTQgMTZoMzZ2OUgzN3YyM2gtMTBWMjVIMTR6IiBmaWxsPSIjZmZmIi8+PC9zdmc+',
      mimeType: 'image/svg+xml',
      sizes: ['any'],
    },
  ],
} as const;

/** The serverInfo a revision sends: name and version, and of the rest what it defines. */
export function serverInfoFor(server: ServerIdentity, protocolVersion: string): Record<string, unknown> {
  const fields = revisionInfo(protocolVersion)?.implementationFields ?? [];
  const info: Record<string, unknown> = { name: server.name, version: server.version };
  for (const field of fields) {
    if (field !== 'websiteUrl') info[field] = PRESENTATION[field];
  }
  return info;
}

/**
 * The tools capability: the list changes as workers come and go (the catalog), and this server
 * says so — on subscriptions/listen streams (2026-07-28), and as notifications/tools/list_changed
 * on a 2025-11-25 client's stdio pipe or GET stream.
 */
export const TOOLS_CAPABILITY = { listChanged: true } as const;

/**
 * Resources (Taskgate's own task resources are always there, next to the modules'), prompts,
 * completion and logging (tools' ctx.log(), as notifications/message). Both lists change as
 * workers serving modules' content come and go (the catalog), and the server says so as it does
 * for tools. Resources may be subscribed to (a task's notifies on each status change):
 * resources/subscribe before 2026-07-28, subscriptions/listen's resourceSubscriptions from then on.
 */
export const CONTENT_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
} as const;

export const discoverInstructions =
  'Every tools/call runs as a durable task. Mutations take an idempotencyKey argument; a retry with the same key and arguments returns the first result.';

export function discoverResult(server: ServerIdentity): Record<string, unknown> {
  return {
    resultType: 'complete',
    supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
    // The Tasks extension: a client that declares it per request may get a task for a tools/call.
    capabilities: { tools: TOOLS_CAPABILITY, ...CONTENT_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } },
    instructions: discoverInstructions,
    ttlMs: 3_600_000,
    cacheScope: 'public',
    _meta: { [META.serverInfo]: serverInfoFor(server, LATEST_PROTOCOL_VERSION) },
  };
}

/**
 * The initialize result (basic/lifecycle) for the revision negotiated: the tasks capability only
 * where the revision has its own tasks (task-augmented tools/call, tasks/list and tasks/cancel).
 */
export function initializeResult(server: ServerIdentity, protocolVersion: string): Record<string, unknown> {
  const tasks = revisionInfo(protocolVersion)?.tasks === true;
  return {
    protocolVersion,
    capabilities: {
      tools: TOOLS_CAPABILITY,
      ...CONTENT_CAPABILITIES,
      ...(tasks ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    },
    serverInfo: serverInfoFor(server, protocolVersion),
    instructions: discoverInstructions,
  };
}
