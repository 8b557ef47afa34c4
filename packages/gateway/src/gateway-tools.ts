import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { defineTool, type GatewayDefinition, ToolProtocolError, type ToolResult } from '@taskgate/sdk';
import { type DownstreamConnection, DownstreamError } from './downstream-connection.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** Taskgate's tool names (defineTool's): a downstream tool whose prefixed name is not one is left out. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** Names of the platform's own tools (packages/tools content-tool.ts): never a downstream's. */
const PLATFORM_PREFIX = 'taskgate.';

/**
 * A downstream's JSON Schema as Taskgate compiles it (JSON Schema 2020-12): without its
 * `$schema`, which SDK-built servers set to draft-07 (zod's output) and the 2020-12 compiler
 * cannot resolve. What a tool's arguments use of draft-07 reads the same in 2020-12.
 */
function schemaOf(schema: unknown): Record<string, unknown> {
  const { $schema: _declared, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/** The step an unsafe gateway call is recorded as (ctx.step, irreversible). */
const DOWNSTREAM_STEP = 'downstream tools/call';

/** JSON-RPC's internal error: what a task a downstream failed ends with. */
const INTERNAL_ERROR = -32603;

/**
 * The downstream's tools as Taskgate tools: `<prefix><name>`, the downstream's description and
 * schemas, the retry class and clocks the gateway gives them (default `unsafe`: the downstream's
 * annotations are hints only, and nothing says a lost call of it may be repeated). Each handler
 * forwards the call over `connection` with the task's signal, and relays progress.
 */
export function gatewayTools(
  gateway: GatewayDefinition,
  connection: DownstreamConnection,
  downstream: readonly Tool[],
  log: LogFn,
) {
  const tools = [];
  for (const tool of downstream) {
    const name = `${gateway.prefix}${tool.name}`;
    if (name.toLowerCase().startsWith(PLATFORM_PREFIX)) {
      log(
        { gateway: gateway.name, tool: tool.name },
        `a downstream tool is left out: names beginning ${PLATFORM_PREFIX} are the platform's own`,
      );
      continue;
    }
    if (!TOOL_NAME.test(name)) {
      log(
        { gateway: gateway.name, tool: tool.name },
        'a downstream tool is left out: its name is not a valid tool name',
      );
      continue;
    }
    const settings = { ...gateway.defaults, ...gateway.tools?.[tool.name] };
    const retry = settings.retry ?? 'unsafe';
    const downstreamTaskSupport = (tool as { execution?: { taskSupport?: unknown } }).execution?.taskSupport;
    if (downstreamTaskSupport === 'required' && !connection.taskCalls) {
      log(
        { gateway: gateway.name, tool: tool.name },
        'a downstream tool is left out: it runs only as a task, and tasks of this downstream are not supported yet',
      );
      continue;
    }
    tools.push(
      defineTool<Record<string, unknown>>({
        name,
        ...(tool.title ? { title: tool.title } : {}),
        description: tool.description ?? `${tool.name} of ${gateway.name}`,
        inputSchema: schemaOf(tool.inputSchema),
        ...(tool.outputSchema ? { outputSchema: schemaOf(tool.outputSchema) } : {}),
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
        retry,
        ...(settings.timeouts ? { timeouts: settings.timeouts } : {}),
        ...(settings.taskSupport ? { taskSupport: settings.taskSupport } : {}),
        async handler(args, ctx) {
          const call = () =>
            connection.call(tool.name, args, {
              signal: ctx.signal,
              label: ctx.taskId,
              // A tool that says it runs as a task is asked to: its cancel is then tasks/cancel,
              // and the gateway knows when the downstream's work has ended.
              asTask: downstreamTaskSupport === 'required' || downstreamTaskSupport === 'optional',
              onProgress: (progress, total, message) => ctx.progress(progress, total, message),
            });
          try {
            if (retry !== 'unsafe') return (await call()) as ToolResult;
            // Nothing says an unsafe call may be repeated, or that one cut off did nothing: from
            // the moment it is sent, it is an irreversible step. A cancel, a crash, a lost worker
            // or an error answer then opens a reconciliation item, and no later attempt sends
            // it again. A downstream that is down is refused first, with nothing sent or opened.
            await connection.ready(ctx.signal);
            return (await ctx.step(DOWNSTREAM_STEP, call, { irreversible: true })) as ToolResult;
          } catch (error) {
            if (error instanceof DownstreamError) {
              throw new ToolProtocolError(INTERNAL_ERROR, error.message, {
                code: error.code,
                server: error.server,
                ...(error.taskId === undefined ? {} : { taskId: error.taskId }),
              });
            }
            throw error;
          }
        },
      }),
    );
  }
  return tools;
}
