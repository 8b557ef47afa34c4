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
 * for, as a tool's arguments match its input schema). Only what MCP's restricted form schema
 * defines is checked (types, required, enums, lengths, bounds, item counts, the four formats): a
 * `pattern` is not (MCP's StringSchema has none, and a client's answer must not be able to run
 * a tool author's backtracking regex on the server), nor `$ref`, `$id` or `$schema`. A schema
 * that cannot be compiled even so is the tool's mistake, not the client's: its content is taken
 * unchecked. A URL elicitation has no content to check.
 */
export function inputAnswerProblem(request: InputRequest, answer: unknown): string | null {
  const shape = inputResultProblem(request.method, answer);
  if (shape !== null || request.method !== 'elicitation/create') return shape;
  const { action, content } = answer as { action: string; content?: unknown };
  const schema = request.params.requestedSchema;
  if (action !== 'accept' || request.params.mode === 'url' || !isRecord(schema)) return null;
  const validate = validatorOf(formSchema(schema));
  if (validate === null || validate(content ?? {})) return null;
  const first = validate.errors?.[0];
  const where =
    first?.keyword === 'required'
      ? `content.${String(first.params.missingProperty)}`
      : `content${(first?.instancePath ?? '').replaceAll('/', '.')}`;
  return `has a ${where} that does not match the requestedSchema: ${first?.message ?? 'invalid'}`;
}

/** The first answer of `answers` that does not answer its request in `requests`, by key. */
export interface InputAnswersProblem {
  readonly key: string;
  readonly problem: string;
}

/**
 * The one check of a handler's answers, whichever asked (a tool's ctx.input(), a resource's or a
 * prompt's, a tool's askFirst) and whichever way they came (a multi round-trip retry, a
 * tasks/update, a response on the request's stream): each answer against its request
 * (inputAnswerProblem). An absent answer is checked as `undefined`, so it fails.
 */
export function inputAnswersProblem(
  requests: Readonly<Record<string, InputRequest>>,
  answers: Readonly<Record<string, unknown>>,
): InputAnswersProblem | null {
  for (const [key, request] of Object.entries(requests)) {
    const problem = inputAnswerProblem(request, answers[key]);
    if (problem !== null) return { key, problem };
  }
  return null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The keywords of MCP's restricted form schema (PrimitiveSchemaDefinition) that are checked. */
const PROPERTY_KEYWORDS = [
  'type',
  'enum',
  'const',
  'oneOf',
  'anyOf',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'format',
  'minimum',
  'maximum',
] as const;

/** A copy of a requestedSchema with only what the restricted form schema defines (see above). */
function formSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  if (isRecord(schema.properties)) {
    for (const [name, property] of Object.entries(schema.properties)) properties[name] = keywordsOf(property, 2);
  }
  return {
    type: 'object',
    properties,
    ...(Array.isArray(schema.required) ? { required: schema.required } : {}),
    ...(typeof schema.additionalProperties === 'boolean' ? { additionalProperties: schema.additionalProperties } : {}),
  };
}

/** A property's checked keywords; `depth` bounds how far enum items and options are followed. */
function keywordsOf(value: unknown, depth: number): unknown {
  if (!isRecord(value)) return {};
  const kept: Record<string, unknown> = {};
  for (const keyword of PROPERTY_KEYWORDS) {
    const inner = value[keyword];
    if (inner === undefined) continue;
    if (keyword === 'items') kept.items = depth > 0 ? keywordsOf(inner, depth - 1) : {};
    else if (keyword === 'oneOf' || keyword === 'anyOf') {
      if (Array.isArray(inner) && depth > 0)
        kept[keyword] = inner.slice(0, 1_000).map((option) => keywordsOf(option, depth - 1));
    } else kept[keyword] = inner;
  }
  return kept;
}

/**
 * Compiled form schemas by their JSON, most recently used last (a handler asks the same form
 * again). Compiling leaves state in its Ajv instance that removing the schema does not free, so an
 * instance compiles at most COMPILES_PER_INSTANCE schemas and is then replaced; an old one goes
 * once the last of its validators leaves the cache. Memory stays bounded however many distinct
 * forms (a dynamic enum) clients answer.
 */
const validators = new Map<string, ValidateFunction | null>();
const MAX_VALIDATORS = 64;
const COMPILES_PER_INSTANCE = 64;
let ajv = newAjv();
let compiles = 0;

function newAjv(): Ajv2020 {
  const instance = new Ajv2020({ allErrors: false, strict: false });
  (addFormats as unknown as (target: Ajv2020, formats: readonly string[]) => void)(instance, [
    'date',
    'date-time',
    'email',
    'uri',
  ]);
  return instance;
}

/** The validator of a form schema, or null when it does not compile. */
function validatorOf(schema: Record<string, unknown>): ValidateFunction | null {
  const key = JSON.stringify(schema);
  if (validators.has(key)) {
    const cached = validators.get(key) ?? null;
    validators.delete(key);
    validators.set(key, cached);
    return cached;
  }
  if (compiles >= COMPILES_PER_INSTANCE) {
    ajv = newAjv();
    compiles = 0;
  }
  compiles += 1;
  let validate: ValidateFunction | null;
  try {
    validate = ajv.compile(schema);
  } catch {
    validate = null;
  }
  validators.set(key, validate);
  if (validators.size > MAX_VALIDATORS) validators.delete(validators.keys().next().value as string);
  return validate;
}
