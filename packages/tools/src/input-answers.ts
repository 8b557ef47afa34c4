import type { InputRequest } from '@taskgate/sdk';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Whether a client's answer to an input request has the shape of that request's result (the MCP
 * schema's ElicitResult, CreateMessageResult, ListRootsResult), or what is wrong with it.
 */
export function inputResultProblem(method: string, result: unknown): string | null {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return 'is not an object';
  const fields = result as Record<string, unknown>;
  if (method === 'elicitation/create') {
    if (!['accept', 'decline', 'cancel'].includes(fields.action as string)) {
      return 'has no action of "accept", "decline" or "cancel"';
    }
    const content = fields.content;
    if (content !== undefined && (typeof content !== 'object' || content === null || Array.isArray(content))) {
      return 'has a content that is not an object';
    }
    return null;
  }
  if (method === 'sampling/createMessage') {
    if (fields.role !== 'user' && fields.role !== 'assistant') return 'has no role of "user" or "assistant"';
    if (typeof fields.model !== 'string') return 'has no model string';
    if (typeof fields.content !== 'object' || fields.content === null) return 'has no content';
    return null;
  }
  if (method === 'roots/list') {
    const roots = fields.roots;
    if (!Array.isArray(roots)) return 'has no roots array';
    if (roots.some((root) => typeof (root as { uri?: unknown } | null)?.uri !== 'string')) {
      return 'has a root without a uri string';
    }
    return null;
  }
  return null;
}

/**
 * What is wrong with a client's answer to `request`, or null: its shape (inputResultProblem), and
 * for an accepted form elicitation its content against the request's `requestedSchema` (client
 * capabilities say a client validates, but nothing makes it: a handler must get what it asked
 * for, as a tool's arguments match its input schema). A URL elicitation has no content to check.
 */
export function inputAnswerProblem(request: InputRequest, answer: unknown): string | null {
  const shape = inputResultProblem(request.method, answer);
  if (shape !== null || request.method !== 'elicitation/create') return shape;
  const { action, content } = answer as { action: string; content?: unknown };
  const schema = request.params.requestedSchema;
  if (action !== 'accept' || request.params.mode === 'url' || typeof schema !== 'object' || schema === null) {
    return null;
  }
  let validate: ValidateFunction;
  try {
    validate = validatorOf(schema as Record<string, unknown>);
  } catch (error) {
    return `cannot be checked: the requestedSchema does not compile (${(error as Error).message})`;
  }
  if (validate(content ?? {})) return null;
  const first = validate.errors?.[0];
  const where =
    first?.keyword === 'required'
      ? `content.${String(first.params.missingProperty)}`
      : `content${(first?.instancePath ?? '').replaceAll('/', '.')}`;
  return `has a ${where} that does not match the requestedSchema: ${first?.message ?? 'invalid'}`;
}

const ajv = new Ajv2020({ allErrors: false, strict: false });
(addFormats as unknown as (instance: Ajv2020) => void)(ajv);
/** Compiled requestedSchemas by their JSON, most recently used last; a handler asks the same form again. */
const validators = new Map<string, ValidateFunction>();
const MAX_VALIDATORS = 64;

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const cached = validators.get(key);
  if (cached) {
    validators.delete(key);
    validators.set(key, cached);
    return cached;
  }
  const validate = ajv.compile(structuredClone(schema));
  validators.set(key, validate);
  if (validators.size > MAX_VALIDATORS) {
    const [oldestKey, oldest] = validators.entries().next().value as [string, ValidateFunction];
    validators.delete(oldestKey);
    ajv.removeSchema(oldest.schema as object);
  }
  return validate;
}
