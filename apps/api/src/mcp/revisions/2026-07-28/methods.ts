import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import {
  declaresTasks,
  ErrorCode,
  type HeaderParameter,
  headerParameterProblem,
  headerParametersOf,
  missingCapabilities,
  type RequestHeaders,
  TASK_METHODS,
  TASKS_EXTENSION,
  TASKS_REQUIRED,
} from '@taskgate/protocol';
import { inputAnswersProblem, taskSupportOf } from '@taskgate/tools';
import type { MethodHandler, MethodTable } from '../../core/method-table.ts';
import { invalidParams, type MethodOutcome, missingCapability, refusal } from '../../core/outcomes.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { discoverResult } from '../../core/server-info.ts';
import { type CallRunner, DEFAULT_TASK_AFTER_MS } from '../../methods/call-runner.ts';
import { type ContentMethodsOptions, contentMethods } from '../../methods/content-methods.ts';
import { type Round, responsesProblem } from '../../methods/round-trips.ts';
import { createTaskResult, detailedTask, TASK_ACK, unknownTask } from '../../methods/task-results.ts';
import { oneToolsPage, toolsListResult } from '../../methods/tools-list.ts';
import { traceParentOf } from '../../methods/trace-context.ts';
import { urlElicitationsAsked } from '../../methods/url-elicitations.ts';
import { unchanged } from '../handshake/profile.ts';

/**
 * The methods of 2026-07-28 (per-request `_meta`, no initialize) with the Tasks extension. A
 * method not in the table is -32601.
 */
export function perRequestMethods(runner: CallRunner, content: ContentMethodsOptions): MethodTable {
  const { server } = runner.options;
  const tasks = (params: Params, context: RequestContext, method: string) =>
    taskMethod(runner, method, params, context);
  return new Map<string, MethodHandler>([
    ['server/discover', () => ({ kind: 'result', result: discoverResult(server) })],
    [
      'tools/list',
      (params) =>
        oneToolsPage(params, 400) ??
        runner.sharedList(perRequestMethods, () => toolsListResult(runner.options.tools.list(), server)),
    ],
    ['tools/call', (params, context) => callTool(runner, params, context)],
    ['tasks/get', (params, context) => tasks(params, context, 'tasks/get')],
    ['tasks/cancel', (params, context) => tasks(params, context, 'tasks/cancel')],
    ['tasks/update', (params, context) => tasks(params, context, 'tasks/update')],
    // SEP-2164: a URI that names no resource is -32602 with the URI in data; results carry cache hints.
    ...contentMethods(content, {
      notFoundCode: ErrorCode.InvalidParams,
      invalidStatus: 400,
      result: unchanged,
      rounds: runner.rounds,
    }),
  ]);
}

type Params = Readonly<Record<string, unknown>> | undefined;

const NOTHING_REQUIRED: Readonly<Record<string, unknown>> = Object.freeze({});

/** A tool's header parameters, found once per definition (the catalog hands out the same object). */
const headerParametersByTool = new WeakMap<object, readonly HeaderParameter[]>();
function headerParameters(tool: {
  readonly inputSchema: Readonly<Record<string, unknown>>;
}): readonly HeaderParameter[] {
  let found = headerParametersByTool.get(tool.inputSchema);
  if (!found) {
    const read = headerParametersOf(tool.inputSchema);
    // An invalid annotation never reaches here (ToolRegistry refuses it); none is then checked.
    found = 'problem' in read ? [] : read;
    headerParametersByTool.set(tool.inputSchema, found);
  }
  return found;
}

async function callTool(
  runner: CallRunner,
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
): Promise<MethodOutcome | null> {
  const read = runner.readCall(params);
  if (read.kind === 'error') return read;
  const { call, tool } = read;
  // Over HTTP, each x-mcp-header parameter's Mcp-Param-* header must carry the body's value.
  const parameters = tool && context.headers ? headerParameters(tool) : [];
  if (parameters.length > 0) {
    const mismatch = headerParameterProblem(parameters, call.arguments, (context.headers as () => RequestHeaders)());
    if (mismatch !== null) {
      return {
        kind: 'error',
        httpStatus: 400,
        error: { code: ErrorCode.HeaderMismatch, message: `Header mismatch: ${mismatch}` },
      };
    }
  }
  const support = tool ? taskSupportOf(tool) : 'forbidden';
  const asTask = support !== 'forbidden' && declaresTasks(context.clientCapabilities);
  // Merged only for a tool that needs the Tasks extension: most calls need nothing.
  const required =
    support === 'required'
      ? { ...tool?.requiredClientCapabilities, ...TASKS_REQUIRED }
      : (tool?.requiredClientCapabilities ?? NOTHING_REQUIRED);
  const missing = missingCapabilities(required, context.clientCapabilities);
  if (missing)
    return missingCapability(missing, `tool ${call.name} needs client capabilities this request did not declare`);
  // A handler's URLElicitationRequiredError is asked as input_required: this revision has no -32042.
  const asked = (outcome: MethodOutcome | null, round: Round | undefined) =>
    urlElicitationsAsked(outcome, runner.rounds, round, context, `tool ${call.name}`);
  const local = tool?.inline ? runner.options.tools.local(call.name) : undefined;
  if (local) {
    // Multi round-trip: the answers so far come with the retry (requestState, inputResponses).
    const round = runner.rounds.begin(params, context, {
      method: 'tools/call',
      name: call.name,
      arguments: call.arguments,
    });
    if ('kind' in round) return round;
    return asked(await runner.inline(local, call.arguments, context, round), round);
  }
  // A durable call without the Tasks extension asks for its task's input as an inline one does:
  // input_required, with a state naming the parked task that the retry answers.
  const round = asTask
    ? undefined
    : runner.rounds.begin(params, context, { method: 'tools/call', name: call.name, arguments: call.arguments });
  if (round && 'kind' in round) return round;
  if (round?.task !== undefined) return asked(await runner.resume({ ...round, task: round.task }, context), round);
  // Input asked in the call, before any task (multi round-trip): until every key is answered in
  // params.inputResponses, the call is answered with the outstanding requests and creates nothing.
  let inputResponses: Record<string, unknown> | undefined;
  if (tool?.askFirst) {
    const given = params?.inputResponses;
    const malformed = given === undefined ? null : responsesProblem(given);
    if (malformed !== null) return refusal(new TaskgateError('TG_INPUT_RESPONSES_INVALID', malformed));
    const answers = typeof given === 'object' && given !== null && !Array.isArray(given) ? given : {};
    const outstanding = Object.entries(tool.askFirst).filter(([key]) => !Object.hasOwn(answers, key));
    if (outstanding.length > 0) {
      return {
        kind: 'result',
        result: { resultType: 'input_required', inputRequests: Object.fromEntries(outstanding) },
      };
    }
    // Each answer must answer its request (an elicitation's content against its requestedSchema)
    // before a task exists that its handler would fail on.
    const found = inputAnswersProblem(tool.askFirst, answers as Record<string, unknown>);
    if (found !== null) {
      return refusal(
        new TaskgateError('TG_INPUT_RESPONSES_INVALID', `inputResponses.${found.key} ${found.problem}`, {
          details: { key: found.key },
        }),
      );
    }
    inputResponses = Object.fromEntries(
      Object.keys(tool.askFirst).map((key) => [key, (answers as Record<string, unknown>)[key]]),
    );
  }
  const task = await runner.submit(
    context,
    {
      tool: call.name,
      arguments: call.arguments,
      // A task the client may be handed outlives its connection; a request's task does not.
      mode: asTask ? 'task' : 'request',
      ...(inputResponses ? { inputResponses } : {}),
      // basic/index "OpenTelemetry trace context": each attempt's span links to it.
      traceParent: traceParentOf(params),
    },
    // Waited for, unless a required-task tool's task is handed over at once.
    !(asTask && support === 'required'),
  );
  if ('kind' in task) return task;
  // The row is committed: a required-task tool is answered with its task at once.
  if (asTask && support === 'required') return { kind: 'result', result: createTaskResult(task) };
  return asked(
    await runner.await(task, context, asTask ? (runner.options.taskAfterMs ?? DEFAULT_TASK_AFTER_MS) : null, round),
    round,
  );
}

/**
 * tasks/get, tasks/update and tasks/cancel (tasks-extension/tasks.md). The client must declare
 * the extension on the request — checked before the task is looked up, so a client without it
 * learns nothing about which ids exist. Another tenant's task is as unknown as a made-up id.
 */
async function taskMethod(
  runner: CallRunner,
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
): Promise<MethodOutcome> {
  if (!TASK_METHODS.includes(method) || !declaresTasks(context.clientCapabilities)) {
    return missingCapability(
      TASKS_REQUIRED,
      `${method} is part of the Tasks extension; declare ${TASKS_EXTENSION} in the request's client capabilities`,
    );
  }
  const taskId = params?.taskId;
  if (typeof taskId !== 'string' || taskId === '') {
    return invalidParams(`${method} needs params.taskId, the id of a task`);
  }
  const inputResponses = params?.inputResponses;
  if (
    method === 'tasks/update' &&
    (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses))
  ) {
    return invalidParams('tasks/update needs params.inputResponses, an object of responses by request key');
  }
  const { service } = runner.options;
  try {
    if (method === 'tasks/get') {
      const task = await service.get(context.tenantId, taskId);
      return { kind: 'result', result: detailedTask(task, runner.options.server) };
    }
    if (method === 'tasks/cancel') {
      // Acknowledged at once; the task stays working until its worker reaches a checkpoint.
      // On a task that already ended this changes nothing and is acknowledged the same way.
      await service.cancel(context.tenantId, taskId, 'cancelled with tasks/cancel', { signal: 'tasks_cancel' });
      return { kind: 'result', result: TASK_ACK };
    }
    // tasks/update: answers to outstanding keys are stored (and the task resumes once none is
    // left) before the ack, so the next tasks/get already shows them; other keys are ignored.
    await service.answerInput(context.tenantId, taskId, inputResponses as Record<string, unknown>);
    return { kind: 'result', result: TASK_ACK };
  } catch (error) {
    if (isTaskgateError(error, 'TG_TASK_NOT_FOUND'))
      return { kind: 'error', httpStatus: 200, error: unknownTask(taskId) };
    // An answer that does not answer its request: -32602, as for a multi round-trip's.
    if (isTaskgateError(error, 'TG_INPUT_RESPONSES_INVALID')) return refusal(error);
    throw error;
  }
}
