import type { TaskProgress } from '@taskgate/db';
import { isLogLevel, LOG_LEVELS, missingCapabilities } from '@taskgate/protocol';
import { type ToolSpec, taskSupportOf } from '@taskgate/tools';
import type { TaskWatcher } from '../../../tasks/task-watch.ts';
import type { MethodHandler, MethodTable } from '../../core/method-table.ts';
import { invalidParams, type MethodOutcome, missingCapability } from '../../core/outcomes.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { discoverResult } from '../../core/server-info.ts';
import { handshakeResult } from '../../methods/call-results.ts';
import type { CallRunner } from '../../methods/call-runner.ts';
import { type ContentMethodsOptions, contentMethods } from '../../methods/content-methods.ts';
import { oneToolsPage, toolsListResult } from '../../methods/tools-list.ts';
import { traceParentOf } from '../../methods/trace-context.ts';
import { urlElicitationRequired } from '../../methods/url-elicitations.ts';
import { HandshakeTaskMethods, handshakeTask, handshakeTaskRefusal, requestedTask } from '../2025-11-25/tasks.ts';
import type { HandshakeProfile } from './profile.ts';

/** server/resources of 2024-11-05 … 2025-11-25: a URI that names no resource. */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * The methods every revision opened by initialize shares, as `profile` has them (initialize and
 * ping are the connection's own, answered by the dispatcher at once): tools,
 * and where the revision has its own tasks, tools/call's `task` param and
 * tasks/get|result|list|cancel. tasks/update is the 2026-07-28 extension's and is not here (-32601).
 * A tool that only runs as a task is not offered where there are no tasks.
 */
export function handshakeMethods(
  runner: CallRunner,
  watcher: TaskWatcher,
  profile: HandshakeProfile,
  content: ContentMethodsOptions,
): MethodTable {
  const { server, service, pollMs } = runner.options;
  const include = profile.tasks ? undefined : (tool: ToolSpec) => taskSupportOf(tool) !== 'required';
  const methods = new Map<string, MethodHandler>([
    ['server/discover', () => ({ kind: 'result', result: discoverResult(server) })],
    [
      'tools/list',
      (params) =>
        oneToolsPage(params, 200) ??
        // Shared results are sent as they were serialised: this one is made in this revision's shape.
        runner.sharedList(
          profile,
          () =>
            handshakeResult(
              toolsListResult(runner.options.tools.list(), server, {
                execution: profile.tasks,
                entry: profile.toolEntry,
                ...(include ? { include } : {}),
              }),
            ) as Record<string, unknown>,
        ),
    ],
    [
      'tools/call',
      async (params, context) => {
        const read = runner.readCall(params);
        if (read.kind === 'error') return read;
        // A revision without progress messages gets progress without one.
        const { onProgress } = context;
        const shaped =
          onProgress && !profile.progressMessages
            ? { ...context, onProgress: (progress: TaskProgress) => onProgress({ ...progress, message: null }) }
            : context;
        const outcome = await urlElicitationRequired(
          await callTool(runner, read.tool, read.call, params, shaped, profile.tasks),
          context,
        );
        return outcome?.kind === 'result' ? { kind: 'result', result: profile.callResult(outcome.result) } : outcome;
      },
    ],
    [
      'logging/setLevel',
      async (params, context) => {
        const level = params?.level;
        if (!isLogLevel(level)) {
          return invalidParams(`logging/setLevel needs params.level, one of ${LOG_LEVELS.join(', ')}`, 200);
        }
        if (!context.setLogLevel) {
          return invalidParams('logging/setLevel needs a session to keep the level in: send initialize first', 200);
        }
        await context.setLogLevel(level);
        return { kind: 'result', result: {} };
      },
    ],
    // Resource not found is -32002 in every handshake revision; results carry no cache hints.
    ...contentMethods(content, {
      notFoundCode: RESOURCE_NOT_FOUND,
      invalidStatus: 200,
      result: profile.contentResult,
      subscribe: true,
    }),
  ]);
  if (profile.tasks) {
    const tasks = new HandshakeTaskMethods({ service, watcher, server, pollMs });
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/list']) {
      methods.set(method, (params, context) => tasks.request(method, params, context));
    }
    // A task's -32042 reaches its client as the call's would have (tasks/result is the call's
    // answer): unchanged to a client that declared elicitation.url, kept for a completion; -32021
    // to one that did not.
    methods.set('tasks/result', async (params, context) =>
      urlElicitationRequired(await tasks.request('tasks/result', params, context), context),
    );
  }
  return new Map([...methods].map(([method, handler]) => [method, inHandshakeShape(method, handler)]));
}

/**
 * A method's answer as a handshake revision sends it, so no transport shapes one: a result
 * without what 2026-07-28 added (resultType, cache hints), and an error on HTTP 200 — a 4xx would
 * tell the client its session is gone. tools/call's refusals keep their own status (a missing
 * client capability is -32021 on 400 in every revision). A failure the method throws (503 in an
 * outage) is not an answer of the method's and keeps its status.
 */
function inHandshakeShape(method: string, handler: MethodHandler): MethodHandler {
  const keepsStatus = method === 'tools/call';
  return async (params, context) => {
    const outcome = await handler(params, context);
    if (outcome?.kind === 'result') return { kind: 'result', result: handshakeResult(outcome.result) };
    if (outcome?.kind === 'error' && !keepsStatus && outcome.httpStatus !== 200) return { ...outcome, httpStatus: 200 };
    return outcome;
  };
}

/**
 * A handshake tools/call. With the revision's tasks, a `task` param (and a tool that allows it)
 * is answered with `{task}` as soon as the row is committed; without one, or in a revision
 * without tasks (where the param means nothing and is ignored), the call waits for its task.
 */
async function callTool(
  runner: CallRunner,
  tool: ToolSpec | undefined,
  call: { name: string; arguments: Record<string, unknown> },
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
  tasks: boolean,
): Promise<MethodOutcome | null> {
  const asked = tasks ? requestedTask(params) : null;
  if (asked && 'refused' in asked) return { kind: 'error', httpStatus: 200, error: asked.refused };
  const refused = handshakeTaskRefusal(tool, asked !== null);
  if (refused) return { kind: 'error', httpStatus: 200, error: refused };
  const missing = tool?.requiredClientCapabilities
    ? missingCapabilities(tool.requiredClientCapabilities, context.clientCapabilities)
    : null;
  if (missing)
    return missingCapability(missing, `tool ${call.name} needs client capabilities this session did not declare`);
  const local = tool?.inline ? runner.options.tools.local(call.name) : undefined;
  if (local) return runner.inline(local, call.arguments, context);
  const task = await runner.submit(
    context,
    {
      tool: call.name,
      arguments: call.arguments,
      mode: asked ? 'task' : 'request',
      ...(asked?.ttl ? { ttlMs: asked.ttl } : {}),
      // The _meta trace context of SEP-414, which older clients send too.
      traceParent: traceParentOf(params),
    },
    // A task the client asked for is handed to it at once; a call waits for its task.
    asked === null,
  );
  if ('kind' in task) return task;
  if (asked) {
    context.onTaskCreated?.(task.id);
    return { kind: 'result', result: { task: handshakeTask(task) } };
  }
  return runner.await(task, context, null);
}
