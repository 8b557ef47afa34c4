import { checkJsonValue } from '@taskgate/protocol';

/**
 * The largest result a tool may return, as JSON: it is one jsonb value in the task row, read
 * whole by every poll of tasks/get, and one message on the client's stream (which a slow reader
 * holds in memory). A larger result fails the task, saying so, rather than the row write, the
 * reads or the stream.
 */
export const MAX_TOOL_RESULT_BYTES = 16 * 1024 * 1024;

/**
 * What is wrong with a handler's result, or null. It must be an MCP CallToolResult — `content` an
 * array of the content blocks MCP defines, `structuredContent` an object if present, `isError` a
 * boolean if present — or clients refuse it (the SDK clients throw on a malformed result) after
 * the task already said `completed`. And it must be JSON the task row can hold: a BigInt or a
 * cycle does not serialize, and a NUL or a lone surrogate in a string is refused by jsonb, which
 * would otherwise fail the completion with a driver's message that names no tool.
 */
export function toolResultProblem(result: unknown): string | null {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    return `it returned ${result === undefined ? 'nothing' : describe(result)}, not a { content: [...] } result`;
  }
  const { content, structuredContent, isError } = result as Record<string, unknown>;
  if (!Array.isArray(content)) return 'its result has no content array';
  for (const [index, block] of content.entries()) {
    const problem = contentBlockProblem(block);
    if (problem !== null) return `content[${index}] of its result ${problem}`;
  }
  if (
    structuredContent !== undefined &&
    (typeof structuredContent !== 'object' || structuredContent === null || Array.isArray(structuredContent))
  ) {
    return 'structuredContent of its result is not an object';
  }
  if (isError !== undefined && typeof isError !== 'boolean') return 'isError of its result is not a boolean';
  return storableProblem(result);
}

type Fields = Readonly<Record<string, 'string' | 'string?' | 'integer?'>>;

/** The fields each kind of block must (or, with `?`, may) have, by the MCP schema. */
const BLOCKS: Readonly<Record<string, Fields>> = {
  text: { text: 'string' },
  image: { data: 'string', mimeType: 'string' },
  audio: { data: 'string', mimeType: 'string' },
  resource_link: {
    uri: 'string',
    name: 'string',
    title: 'string?',
    description: 'string?',
    mimeType: 'string?',
    size: 'integer?',
  },
};
const KINDS = [...Object.keys(BLOCKS), 'resource'].join(', ');

/** What is wrong with one MCP content block (a tool result's, a prompt message's), or null. */
export function contentBlockProblem(block: unknown): string | null {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) return 'is not a content block object';
  const { type, annotations, _meta } = block as Record<string, unknown>;
  if (typeof type !== 'string') return 'is not a content block with a type';
  if (annotations !== undefined && !isObject(annotations)) return 'has annotations that are not an object';
  if (_meta !== undefined && !isObject(_meta)) return 'has a _meta that is not an object';
  if (type === 'resource') {
    const { resource } = block as { resource?: unknown };
    if (!isObject(resource)) return 'is a resource block without a resource object';
    const fields = resource as Record<string, unknown>;
    if (typeof fields.uri !== 'string') return 'is a resource block whose resource has no uri string';
    if (typeof fields.text !== 'string' && typeof fields.blob !== 'string')
      return 'is a resource block whose resource has neither a text nor a blob string';
    return null;
  }
  const fields = BLOCKS[type];
  if (fields === undefined) return `has type ${JSON.stringify(type)}, which is not one of ${KINDS}`;
  for (const [field, kind] of Object.entries(fields)) {
    const value = (block as Record<string, unknown>)[field];
    if (value === undefined && kind.endsWith('?')) continue;
    const ok = kind.startsWith('integer') ? Number.isSafeInteger(value) : typeof value === 'string';
    if (!ok)
      return `is a ${type} block whose ${field} is not ${kind.startsWith('integer') ? 'an integer' : 'a string'}`;
  }
  return null;
}

/** Whether the result survives JSON and jsonb as it is. */
function storableProblem(result: object): string | null {
  let json: string;
  try {
    json = JSON.stringify(result);
  } catch (error) {
    // A BigInt ("Do not know how to serialize a BigInt") or a cycle ("Converting circular structure").
    return `its result is not JSON: ${(error as Error).message.split('\n')[0]}`;
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_TOOL_RESULT_BYTES) {
    return `its result is ${bytes} bytes as JSON, more than the ${MAX_TOOL_RESULT_BYTES} a result may be (a large output belongs in storage the result links to)`;
  }
  const found = checkJsonValue(result);
  return found === null ? null : `its result cannot be stored: ${found.message}`;
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 60) ?? String(value);
  } catch {
    return typeof value;
  }
}
