import { decodeHeaderValue } from '../../header-values.ts';
import type { RequestHeaders } from './request-metadata.ts';

/**
 * `x-mcp-header` (2026-07-28 Streamable HTTP "Custom Headers from Tool Parameters"): a tool
 * parameter a client mirrors into an `Mcp-Param-{Name}` header, so that a load balancer can route
 * on it. The server checks each header against the body, so that nothing in front of it can act
 * on one value while the tool runs with another.
 */
export interface HeaderParameter {
  /** The `{Name}` of `Mcp-Param-{Name}`, as the tool declared it. */
  readonly name: string;
  /** The chain of `properties` keys from the schema root to the parameter. */
  readonly path: readonly string[];
  readonly type: 'string' | 'integer' | 'boolean';
}

const KEYWORD = 'x-mcp-header';
/** RFC 9110 tchar. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TYPES: readonly string[] = ['string', 'integer', 'boolean'];

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The header parameters a tool's inputSchema declares, or what makes its annotations invalid (the
 * tool definition is then invalid: clients drop it from tools/list). Annotated properties must be
 * reachable from the root through `properties` keys only, of type string, integer or boolean, with
 * names that are header tokens, unique without regard to case.
 */
export function headerParametersOf(
  schema: Readonly<Record<string, unknown>>,
): readonly HeaderParameter[] | { readonly problem: string } {
  const found: HeaderParameter[] = [];
  const reachable = new Set<unknown>();
  // The statically reachable property schemas: a chain of `properties` keys from the root.
  const walkProperties = (node: Record<string, unknown>, path: readonly string[]): string | null => {
    const properties = node.properties;
    if (!isRecord(properties)) return null;
    for (const [key, child] of Object.entries(properties)) {
      if (!isRecord(child)) continue;
      reachable.add(child);
      const childPath = [...path, key];
      if (Object.hasOwn(child, KEYWORD)) {
        const name = child[KEYWORD];
        const where = `inputSchema property ${childPath.join('.')}`;
        if (typeof name !== 'string' || !TOKEN.test(name)) {
          return `${where}: x-mcp-header must be a non-empty header name token (RFC 9110 tchar)`;
        }
        if (found.some((other) => other.name.toLowerCase() === name.toLowerCase())) {
          return `${where}: x-mcp-header ${name} is declared twice (names are case-insensitive)`;
        }
        if (typeof child.type !== 'string' || !TYPES.includes(child.type)) {
          return `${where}: x-mcp-header may only annotate a string, integer or boolean parameter`;
        }
        found.push({ name, path: childPath, type: child.type as HeaderParameter['type'] });
      }
      const nested = walkProperties(child, childPath);
      if (nested !== null) return nested;
    }
    return null;
  };
  const problem = walkProperties(schema as Record<string, unknown>, []);
  if (problem !== null) return { problem };
  // Anywhere else (items, oneOf, $defs, if/then, ...) an annotation makes the definition invalid.
  const stack: unknown[] = [schema];
  const seen = new Set<unknown>();
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    if (!Array.isArray(node) && Object.hasOwn(node, KEYWORD) && !reachable.has(node)) {
      return {
        problem: 'inputSchema: x-mcp-header may only annotate a property reachable through properties keys alone',
      };
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  return found;
}

/**
 * What is wrong with a tools/call's `Mcp-Param-*` headers for these parameters and arguments, or
 * null: a value in the body needs its header, equal after decoding (integers compared as numbers);
 * a header needs a value in the body; a header with characters a header may not carry, or bad
 * Base64, is refused. A `null` or absent value expects no header.
 */
export function headerParameterProblem(
  parameters: readonly HeaderParameter[],
  args: Readonly<Record<string, unknown>>,
  headers: RequestHeaders,
): string | null {
  for (const parameter of parameters) {
    const headerName = `mcp-param-${parameter.name.toLowerCase()}`;
    const raw = headers[headerName];
    const label = `Mcp-Param-${parameter.name}`;
    let value: unknown = args;
    for (const key of parameter.path) value = isRecord(value) ? value[key] : undefined;
    const present = value !== undefined && value !== null;
    if (raw === undefined) {
      if (present) return `the ${label} header is required: arguments.${parameter.path.join('.')} has a value`;
      continue;
    }
    const values = Array.isArray(raw) ? raw : [raw];
    if (values.length !== 1) return `the ${label} header is given more than once`;
    const decoded = decodeHeaderValue(values[0] as string);
    if (decoded === null) return `the ${label} header holds characters a header may not carry, or bad Base64`;
    if (!present) return `the ${label} header is given but arguments.${parameter.path.join('.')} has no value`;
    if (!sameValue(decoded, value, parameter.type)) {
      return `${label} header value '${decoded}' does not match body value '${String(value)}'`;
    }
  }
  return null;
}

function sameValue(header: string, value: unknown, type: HeaderParameter['type']): boolean {
  if (type === 'integer') {
    // "Compare numerically": 42.0 and 42 are one value.
    // Only safe integers are carried (the spec's range): beyond it two values compare equal wrongly.
    return /^-?\d+(\.0+)?$/.test(header) && Number.isSafeInteger(value) && Number(header) === value;
  }
  if (type === 'boolean') return typeof value === 'boolean' && header === String(value);
  return typeof value === 'string' && header === value;
}
