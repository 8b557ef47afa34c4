import { checkJsonValue } from '@taskgate/protocol';
import type { Completer, ContentContext, InputRequest, PromptDefinition, PromptResult } from '@taskgate/sdk';
import type { ResolvedResource } from './content-registry.ts';
import { inputAnswersProblem } from './input-answers.ts';
import { contentBlockProblem, MAX_TOOL_RESULT_BYTES } from './result-check.ts';

/**
 * Set on the values a remote completer returns: the total and hasMore the worker counted before it
 * cut them to MAX_COMPLETION_VALUES (the values alone would say 100 and no more).
 */
export const REMOTE_COMPLETION = Symbol('taskgate.remoteCompletion');

/** The default clock of a resource read, a prompt get or a completion. */
export const DEFAULT_CONTENT_TIMEOUT_MS = 10_000;
/**
 * The most a read's contents or a prompt's messages may be, as JSON: a tool result's bound, for
 * the same reasons. A read served by a worker is one task row's result and one message on the
 * client's stream; one served here is still that message, held whole while a slow reader reads.
 */
export const MAX_CONTENT_BYTES = MAX_TOOL_RESULT_BYTES - 1024; // room for the content tool's wrapper
/** completion/complete sends at most this many values (server/utilities/completion). */
export const MAX_COMPLETION_VALUES = 100;

/**
 * Why a read, get or completion gave no answer. `cancelled`: the request's signal (nobody is
 * waiting); `timeout`: its clock; `invalid`: the handler returned something MCP cannot carry;
 * `failed`: it threw. The message names the handler and never carries the thrown error's text
 * (that goes to the log, through `cause`).
 */
export class ContentRunError extends Error {
  /** `refused`: the client's answer to the handler's ctx.input() does not answer its request. */
  readonly kind: 'cancelled' | 'timeout' | 'invalid' | 'failed' | 'refused';
  /** For `refused`: the key of the input whose answer does not answer its request. */
  readonly key: string | undefined;
  constructor(kind: ContentRunError['kind'], message: string, options?: { cause?: unknown; key?: string }) {
    super(message, options);
    this.kind = kind;
    this.key = options?.key;
  }
}

/** One resource's contents as sent: every item with its uri (and the declared MIME type when it has none). */
export type ReadContents = readonly Readonly<Record<string, unknown>>[];

export interface ContentRunContext {
  readonly tenant: string;
  /** The request's signal: aborted when the request is cancelled. */
  readonly signal: AbortSignal;
  /** A multi round-trip request's answers so far; absent: ctx.input() cannot ask that way. */
  readonly answers?: Readonly<Record<string, unknown>>;
  /**
   * Asks the client one input request on the request's connection (a handshake revision) and
   * resolves with its result: without `answers`, ctx.input() waits for the client's answers.
   */
  readonly ask?: (request: InputRequest, signal: AbortSignal) => Promise<unknown>;
}

/** A handler's ctx.input() of keys the request has no answer for: the request is answered input_required. */
export class ContentInputAsked extends Error {
  readonly requests: Readonly<Record<string, InputRequest>>;
  constructor(requests: Readonly<Record<string, InputRequest>>) {
    super('the handler asked for input');
    this.requests = requests;
  }
}

/** Reads a resolved resource: its contents, or null when its handler says nothing is there. */
export async function readResource(
  target: ResolvedResource,
  uri: string,
  context: ContentRunContext,
): Promise<ReadContents | null> {
  const definition = target.definition;
  const label = `resource ${'uri' in definition ? definition.uri : definition.uriTemplate}`;
  const contents = await bounded(label, definition.timeoutMs, context, (ctx) =>
    target.kind === 'resource' ? target.definition.read(ctx) : target.definition.read(uri, target.variables, ctx),
  );
  if (contents === null) return null;
  if (!Array.isArray(contents) || contents.length === 0) {
    throw new ContentRunError('invalid', `${label} returned ${describe(contents)}, not an array of contents`);
  }
  // The array as sent: its brackets and the commas between items, plus each item (JSON.stringify
  // adds no whitespace, so this is the array's exact length).
  let bytes = 1 + contents.length;
  const read = contents.map((item, index) => {
    const shape = contentsProblem(item);
    if (shape !== null) throw new ContentRunError('invalid', `${label}: contents[${index}] ${shape}`);
    // What the item leaves out, its declaration says: the URI read, the declared MIME type.
    const sent = {
      uri,
      ...(definition.mimeType === undefined ? {} : { mimeType: definition.mimeType }),
      ...withoutUndefined(item as Record<string, unknown>),
    };
    const checked = jsonProblem(sent);
    if (typeof checked === 'string') throw new ContentRunError('invalid', `${label}: contents[${index}] ${checked}`);
    bytes += checked.bytes;
    return sent;
  });
  if (bytes > MAX_CONTENT_BYTES) throw new ContentRunError('invalid', `${label} ${tooLarge(bytes)}`);
  return read;
}

/** A prompt's messages for `args` (already checked against its arguments). */
export async function getPrompt(
  prompt: PromptDefinition,
  args: Readonly<Record<string, string>>,
  context: ContentRunContext,
): Promise<PromptResult> {
  const label = `prompt ${prompt.name}`;
  const result = await bounded(label, prompt.timeoutMs, context, (ctx) => prompt.get(args, ctx));
  const problem = promptResultProblem(result);
  if (typeof problem === 'string') throw new ContentRunError('invalid', `${label} ${problem}`);
  if (problem.bytes > MAX_CONTENT_BYTES) throw new ContentRunError('invalid', `${label} ${tooLarge(problem.bytes)}`);
  return result;
}

/** A completer's suggestions: at most MAX_COMPLETION_VALUES, with the total and whether there are more. */
export async function complete(
  label: string,
  completer: Completer,
  value: string,
  args: Readonly<Record<string, string>>,
  context: ContentRunContext,
  timeoutMs?: number,
): Promise<{ values: string[]; total: number; hasMore: boolean }> {
  const values = await bounded(label, timeoutMs, context, (ctx) =>
    completer(value, { arguments: args, tenant: ctx.tenant, signal: ctx.signal }),
  );
  if (!Array.isArray(values) || values.some((item) => typeof item !== 'string')) {
    throw new ContentRunError('invalid', `${label} returned ${describe(values)}, not an array of strings`);
  }
  const strings = values as string[];
  const counted = (values as { [REMOTE_COMPLETION]?: { total: number; hasMore: boolean } })[REMOTE_COMPLETION];
  return {
    values: strings.slice(0, MAX_COMPLETION_VALUES),
    total: Math.max(counted?.total ?? 0, strings.length),
    hasMore: counted?.hasMore === true || strings.length > MAX_COMPLETION_VALUES,
  };
}

/**
 * Runs a handler under the request's signal and its own clock. The answer does not wait for a
 * handler that ignores its signal: the race ends at the abort, whatever the handler does after.
 */
async function bounded<T>(
  label: string,
  timeoutMs: number | undefined,
  context: ContentRunContext,
  run: (ctx: ContentContext) => T | Promise<T>,
): Promise<T> {
  const ms = timeoutMs ?? DEFAULT_CONTENT_TIMEOUT_MS;
  const clock = AbortSignal.timeout(ms);
  const signal = AbortSignal.any([context.signal, clock]);
  const stopped = () =>
    context.signal.aborted
      ? new ContentRunError('cancelled', `${label}: the request was cancelled`)
      : new ContentRunError('timeout', `${label} did not answer within ${ms} ms`);
  if (signal.aborted) throw stopped();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(stopped());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const input = async (requests: Readonly<Record<string, InputRequest>>) => {
    const answers = context.answers;
    if (answers === undefined && context.ask) return askEach(label, requests, context.ask, signal);
    if (answers === undefined) {
      throw new ContentRunError(
        'invalid',
        `${label} asked for input, which only a multi round-trip request can be answered with`,
      );
    }
    const missing = Object.keys(requests).filter((key) => !Object.hasOwn(answers, key));
    if (missing.length > 0) {
      throw new ContentInputAsked(Object.fromEntries(missing.map((key) => [key, requests[key] as InputRequest])));
    }
    return checkedAnswers(label, requests, Object.fromEntries(Object.keys(requests).map((key) => [key, answers[key]])));
  };
  try {
    return await Promise.race([
      Promise.resolve()
        .then(() => run({ tenant: context.tenant, signal, input }))
        .catch((error: unknown) => {
          if (signal.aborted) throw stopped();
          // Asked for input, or asked where it cannot: the handler's own doing, said as it is.
          if (error instanceof ContentInputAsked || error instanceof ContentRunError) throw error;
          throw new ContentRunError('failed', `${label} failed`, { cause: error });
        }),
      aborted,
    ]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Every request of one ctx.input() asked of the client at once; the answers by key once all are
 * in, each checked against its request.
 */
async function askEach(
  label: string,
  requests: Readonly<Record<string, InputRequest>>,
  ask: (request: InputRequest, signal: AbortSignal) => Promise<unknown>,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const entries = await Promise.all(
    Object.entries(requests).map(async ([key, request]) => [key, await ask(request, signal)] as const),
  );
  return checkedAnswers(label, requests, Object.fromEntries(entries));
}

/**
 * The answers, once each answers its request (inputAnswersProblem, the check a tool's answers get):
 * a handler never sees an elicitation's content that its requestedSchema refuses, whether it came
 * on the request's stream or in a multi round-trip retry's inputResponses.
 */
function checkedAnswers(
  label: string,
  requests: Readonly<Record<string, InputRequest>>,
  answers: Record<string, unknown>,
): Record<string, unknown> {
  const found = inputAnswersProblem(requests, answers);
  if (found !== null) {
    throw new ContentRunError('refused', `${label}: the client's answer to input ${found.key} ${found.problem}`, {
      key: found.key,
    });
  }
  return answers;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What is wrong with a handler's answer, or its size as JSON when nothing is. */
type Checked = string | { readonly bytes: number };

function tooLarge(bytes: number): string {
  return `returned ${bytes} bytes as JSON, more than the ${MAX_CONTENT_BYTES} one answer may be (a large output belongs in storage the answer links to)`;
}

function contentsProblem(item: unknown): string | null {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return 'is not an object';
  const { uri, mimeType, text, blob, _meta } = item as Record<string, unknown>;
  if (uri !== undefined && typeof uri !== 'string') return 'has a uri that is not a string';
  if (mimeType !== undefined && typeof mimeType !== 'string') return 'has a mimeType that is not a string';
  if (_meta !== undefined && (typeof _meta !== 'object' || _meta === null || Array.isArray(_meta)))
    return 'has a _meta that is not an object';
  if ((text === undefined) === (blob === undefined)) return 'must have exactly one of text and blob';
  if (text !== undefined && typeof text !== 'string') return 'has a text that is not a string';
  if (blob !== undefined && (typeof blob !== 'string' || !BASE64.test(blob))) return 'has a blob that is not base64';
  return null;
}

function promptResultProblem(result: unknown): Checked {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    return `returned ${describe(result)}, not { messages: [...] }`;
  }
  const { messages, description } = result as Record<string, unknown>;
  if (description !== undefined && typeof description !== 'string')
    return 'returned a description that is not a string';
  if (!Array.isArray(messages)) return 'returned no messages array';
  for (const [index, message] of messages.entries()) {
    if (typeof message !== 'object' || message === null) return `messages[${index}] is not an object`;
    const { role, content } = message as Record<string, unknown>;
    if (role !== 'user' && role !== 'assistant')
      return `messages[${index}] has a role other than "user" or "assistant"`;
    const problem = contentBlockProblem(content);
    if (problem !== null) return `messages[${index}].content ${problem}`;
  }
  return jsonProblem(result);
}

/**
 * A value that JSON.stringify would change or refuse (a BigInt, a cycle) cannot be sent as it is;
 * one it takes is measured (the size bound is checked over the whole answer).
 */
function jsonProblem(value: object): Checked {
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return `is not JSON: ${(error as Error).message.split('\n')[0]}`;
  }
  const found = checkJsonValue(value);
  return found === null ? { bytes: Buffer.byteLength(json) } : `cannot be sent: ${found.message}`;
}

function withoutUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  try {
    return JSON.stringify(value)?.slice(0, 60) ?? typeof value;
  } catch {
    return typeof value;
  }
}

export interface PromptArgumentsProblem {
  readonly problem: string;
}

/**
 * prompts/get's params.arguments for `prompt`: an object of strings (absent: none), every required
 * argument given, none it does not declare (a misspelt name is said, not dropped).
 */
export function promptArguments(
  prompt: PromptDefinition,
  given: unknown,
): { readonly values: Readonly<Record<string, string>> } | PromptArgumentsProblem {
  const args = given ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { problem: 'params.arguments must be an object of strings by argument name' };
  }
  const declared = prompt.arguments ?? [];
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(args)) {
    if (!declared.some((arg) => arg.name === name)) {
      const names = declared.map((arg) => arg.name).join(', ');
      return { problem: `it has no argument named ${JSON.stringify(name)} (its arguments: ${names || 'none'})` };
    }
    if (typeof value !== 'string') return { problem: `argument ${name} must be a string, not ${kindOf(value)}` };
    values[name] = value;
  }
  const missing = declared.filter((arg) => arg.required && !Object.hasOwn(values, arg.name)).map((arg) => arg.name);
  if (missing.length > 0)
    return { problem: `missing required argument${missing.length > 1 ? 's' : ''} ${missing.join(', ')}` };
  return { values };
}

function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
