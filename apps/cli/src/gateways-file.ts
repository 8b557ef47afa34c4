import { readFile } from 'node:fs/promises';
import { TaskgateError } from '@taskgate/errors';
import { type GatewayDefinition, gatewayDefinitionProblem } from '@taskgate/sdk';
import type { ToolModule } from '@taskgate/tools';

/** An environment variable's name, as `{"env": "NAME"}` gives it. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * TASKGATE_GATEWAYS: downstream MCP servers declared in a JSON file, for operators who write no
 * code — `{ "gateways": [ <what defineGateway takes>, … ] }` — served as a module of their own
 * (no tools of its own: the worker publishes the downstreams'). A header value, a bearer token
 * or a subprocess variable written `{"env": "NAME"}` is read from the environment, so a secret
 * stays out of the file; one that is unset is an error. Everything else is checked as defineGateway checks it, with the entry's place named.
 */
export async function gatewaysFileModule(
  file: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ToolModule> {
  const fail = (message: string): never => {
    throw new TaskgateError('TG_CONFIG_INVALID', `TASKGATE_GATEWAYS ${file}: ${message}`);
  };
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return fail(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return fail(`is not JSON (${(error as Error).message})`);
  }
  const list = (parsed as { gateways?: unknown } | null)?.gateways;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Array.isArray(list)) {
    return fail('must be an object whose "gateways" is an array of gateway declarations');
  }
  const unknownKeys = Object.keys(parsed).filter((key) => key !== 'gateways');
  if (unknownKeys.length > 0) fail(`has unknown keys: ${unknownKeys.join(', ')}`);
  const gateways: GatewayDefinition[] = [];
  const names = new Set<string>();
  list.forEach((entry, index) => {
    const resolved = fromEnvironment(entry, env, (name) =>
      fail(`gateways[${index}] reads the environment variable ${name}, which is not set`),
    );
    const problem = gatewayDefinitionProblem(resolved);
    if (problem !== null) fail(`gateways[${index}]: ${problem}`);
    const definition = resolved as GatewayDefinition;
    if (names.has(definition.name)) fail(`gateways[${index}]: the name ${definition.name} is declared twice`);
    names.add(definition.name);
    gateways.push(definition);
  });
  return { name: 'gateways-file', file, tools: [], migrationsDir: null, routes: null, errors: {}, gateways };
}

/** The entry with its `{"env": "NAME"}` values (where secrets go) read from the environment. */
function fromEnvironment(
  entry: unknown,
  env: Readonly<Record<string, string | undefined>>,
  unset: (name: string) => never,
): unknown {
  if (typeof entry !== 'object' || entry === null) return entry;
  const read = (value: unknown) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const keys = Object.keys(value);
    const name = (value as { env?: unknown }).env;
    // Anything else stays as it is, for the declaration's own check to name.
    if (keys.length !== 1 || typeof name !== 'string' || !ENV_NAME.test(name)) return value;
    return Object.hasOwn(env, name) && typeof env[name] === 'string' ? (env[name] as string) : unset(name);
  };
  const readAll = (record: unknown) =>
    typeof record === 'object' && record !== null && !Array.isArray(record)
      ? Object.fromEntries(Object.entries(record).map(([key, value]) => [key, read(value)]))
      : record;
  const gateway = { ...(entry as Record<string, unknown>) };
  if (typeof gateway.http === 'object' && gateway.http !== null) {
    const http = { ...(gateway.http as Record<string, unknown>) };
    if (http.headers !== undefined) http.headers = readAll(http.headers);
    if (http.bearerToken !== undefined) http.bearerToken = read(http.bearerToken);
    gateway.http = http;
  }
  if (typeof gateway.stdio === 'object' && gateway.stdio !== null) {
    const stdio = { ...(gateway.stdio as Record<string, unknown>) };
    if (stdio.env !== undefined) stdio.env = readAll(stdio.env);
    gateway.stdio = stdio;
  }
  return gateway;
}
