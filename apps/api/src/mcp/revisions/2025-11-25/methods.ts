import { missingCapabilities } from '@taskgate/protocol';
import type { ToolSpec } from '@taskgate/tools';
import type { TaskWatcher } from '../../../tasks/task-watch.ts';
import type { CallRunner } from '../../dispatch/call-runner.ts';
import type { MethodHandler, MethodTable } from '../../dispatch/method-table.ts';
import type { RequestContext } from '../../mcp-core.ts';
import {
  discoverResult,
  legacyResult,
  type MethodOutcome,
  missingCapability,
  toolsListResult,
} from '../../mcp-methods.ts';
import { LegacyTaskMethods, legacyTask, legacyTaskRefusal, requestedTask } from './tasks.ts';

/**
 * The methods of 2025-11-25 (opened by initialize; the transports answer initialize and ping):
 * tools with that revision's task-augmented calls, and its tasks/* methods. tasks/update is
 * the 2026-07-28 extension's and is not here (-32601).
 */
export function handshakeMethods(runner: CallRunner, watcher: TaskWatcher): MethodTable {
  const { server, service, pollMs } = runner.options;
  const tasks = new LegacyTaskMethods({ service, watcher, server, pollMs });
  const task = (method: string) => (params: Params, context: RequestContext) => tasks.request(method, params, context);
  return new Map<string, MethodHandler>([
    ['server/discover', () => ({ kind: 'result', result: discoverResult(server) })],
    [
      'tools/list',
      () =>
        // Shared results are sent as they were serialised: this one is made in this revision's shape.
        runner.sharedList(
          handshakeMethods,
          () => legacyResult(toolsListResult(runner.options.tools.list(), server, true)) as Record<string, unknown>,
        ),
    ],
    [
      'tools/call',
      (params, context) => {
        const read = runner.readCall(params);
        return read.kind === 'error' ? read : callTool(runner, read.tool, read.call, params, context);
      },
    ],
    ['tasks/get', task('tasks/get')],
    ['tasks/cancel', task('tasks/cancel')],
    ['tasks/result', task('tasks/result')],
    ['tasks/list', task('tasks/list')],
  ]);
}

type Params = Readonly<Record<string, unknown>> | undefined;

/**
 * A 2025-11-25 tools/call: with a `task` param (and a tool that allows it) the answer is
 * `{task}` as soon as the row is committed; without one, the call waits for its task as usual.
 */
async function callTool(
  runner: CallRunner,
  tool: ToolSpec | undefined,
  call: { name: string; arguments: Record<string, unknown> },
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
): Promise<MethodOutcome | null> {
  const asked = requestedTask(params);
  if (asked && 'refused' in asked) return { kind: 'error', httpStatus: 200, error: asked.refused };
  const refused = legacyTaskRefusal(tool, asked !== null);
  if (refused) return { kind: 'error', httpStatus: 200, error: refused };
  const missing = tool?.requiredClientCapabilities
    ? missingCapabilities(tool.requiredClientCapabilities, context.clientCapabilities)
    : null;
  if (missing)
    return missingCapability(missing, `tool ${call.name} needs client capabilities this session did not declare`);
  const local = tool?.inline ? runner.options.tools.local(call.name) : undefined;
  if (local) return runner.inline(local, call.arguments, context);
  const task = await runner.submit(context, {
    tool: call.name,
    arguments: call.arguments,
    mode: asked ? 'task' : 'request',
    ...(asked?.ttl ? { ttlMs: asked.ttl } : {}),
  });
  if ('kind' in task) return task;
  if (asked) return { kind: 'result', result: { task: legacyTask(task) } };
  return runner.await(task, context, null);
}
