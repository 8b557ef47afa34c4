import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskgateError } from '@taskgate/errors';
import { loadToolModules, type ToolModule } from '@taskgate/tools';
import { type Config, NO_TOOLS } from './config.ts';
import { gatewaysFileModule } from './gateways-file.ts';
import type { Logger } from './logger.ts';

/**
 * The tool modules a project serves when none is named, as its package.json declares them:
 * `"taskgate": {"tools": [...], "conformanceTools": "..."}`, paths relative to that file. The CLI
 * itself knows no module: a checkout declares its demo modules so that the README's walkthrough
 * works on a fresh clone, and an installed CLI in a project that declares none loads none (start
 * then refuses a worker role with nothing to serve).
 */
export interface ProjectDefaults {
  /** The package.json that declares them. */
  readonly file: string;
  readonly tools: readonly string[];
  /**
   * Whether every one of `tools` is there. An image built without them (the api target of the
   * Dockerfile has the checkout's package.json but no examples/) serves none, as a CLI that
   * finds no declaration does.
   */
  readonly present: boolean;
  /** The MCP conformance suite's fixtures (TASKGATE_CONFORMANCE=1), or null. */
  readonly conformanceTools: string | null;
}

/**
 * The declaration of the working directory's project: the nearest package.json above `cwd` that
 * has one, else the nearest above this CLI's own files (a checkout's CLI run from elsewhere, as an
 * MCP client's configuration runs it, serves what its checkout declares). Null: none declares.
 */
export function projectDefaults(cwd: string): ProjectDefaults | null {
  return defaultsDeclaredAbove(cwd) ?? defaultsDeclaredAbove(path.dirname(fileURLToPath(import.meta.url)));
}

/** The declaration of the nearest package.json at or above `start` that has one; null: none does. */
export function defaultsDeclaredAbove(start: string): ProjectDefaults | null {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const found = declaredIn(path.join(dir, 'package.json'));
    if (found !== null) return found;
    if (path.dirname(dir) === dir) return null;
  }
}

function declaredIn(file: string): ProjectDefaults | null {
  if (!existsSync(file)) return null;
  let declared: unknown;
  try {
    declared = (JSON.parse(readFileSync(file, 'utf8')) as { taskgate?: unknown }).taskgate;
  } catch {
    // Not ours to judge: a package.json npm cannot read either is npm's to report.
    return null;
  }
  if (declared === undefined) return null;
  const { tools, conformanceTools } = (declared ?? {}) as { tools?: unknown; conformanceTools?: unknown };
  const isPaths = Array.isArray(tools) && tools.every((entry) => typeof entry === 'string' && entry !== '');
  if (!isPaths || (conformanceTools !== undefined && typeof conformanceTools !== 'string')) {
    throw new TaskgateError(
      'TG_CONFIG_INVALID',
      `invalid configuration: ${file} has a "taskgate" field that is not {"tools": ["./module.ts", ...], "conformanceTools": "./module.ts"}`,
    );
  }
  const dir = path.dirname(file);
  const resolved = (tools as string[]).map((entry) => path.resolve(dir, entry));
  return {
    file,
    tools: resolved,
    present: resolved.every((entry) => existsSync(entry)),
    conformanceTools: typeof conformanceTools === 'string' ? path.resolve(dir, conformanceTools) : null,
  };
}

/**
 * The tool modules this process loads: `--tools` if given, else TASKGATE_TOOLS, else the modules
 * the project declares (said in the log, so nobody mistakes them for their own); plus the
 * conformance fixtures with TASKGATE_CONFORMANCE=1. `none` (alone: main.ts and loadConfig refuse
 * it with modules) loads nothing at all, the conformance fixtures included: an API process that
 * offers the tools its workers publish to the catalog, and runs none itself.
 */
export async function toolModulesOf(
  specs: readonly string[],
  config: Pick<Config, 'toolModules' | 'conformanceTools'> & Partial<Pick<Config, 'gatewaysFile'>>,
  cwd: string,
  logger?: Logger,
): Promise<ToolModule[]> {
  const modules = await codeModulesOf(specs, config, cwd, logger);
  if (config.gatewaysFile) {
    const file = await gatewaysFileModule(config.gatewaysFile);
    logger?.info(
      { file: file.file, gateways: (file.gateways ?? []).map((gateway) => gateway.name) },
      'gateways file loaded',
    );
    modules.push(file);
  }
  return modules;
}

async function codeModulesOf(
  specs: readonly string[],
  config: Pick<Config, 'toolModules' | 'conformanceTools'>,
  cwd: string,
  logger?: Logger,
): Promise<ToolModule[]> {
  const given = specs.length > 0 ? specs : config.toolModules;
  if (given.length === 1 && given[0] === NO_TOOLS) {
    logger?.info({}, `${NO_TOOLS}: no tool module loaded; the tools offered are those workers publish to the catalog`);
    return [];
  }
  const defaults = given.length === 0 || config.conformanceTools ? projectDefaults(cwd) : null;
  if (given.length === 0 && (defaults === null || defaults.tools.length === 0)) {
    logger?.info(
      {},
      'no --tools or TASKGATE_TOOLS given, and no package.json here declares default tool modules: none loaded',
    );
    return [];
  }
  if (given.length === 0 && defaults?.present === false) {
    logger?.info(
      { declaredIn: defaults.file },
      'no --tools or TASKGATE_TOOLS given, and the default modules the project declares are not in this installation: none loaded',
    );
    return [];
  }
  const chosen = given.length > 0 ? [...given] : [...(defaults?.tools ?? [])];
  if (config.conformanceTools) {
    if (!defaults?.conformanceTools) {
      throw new TaskgateError(
        'TG_CONFIG_INVALID',
        'invalid configuration: TASKGATE_CONFORMANCE=1 asks for the conformance tools, and no package.json here declares them ("taskgate": {"conformanceTools": ...})',
      );
    }
    chosen.push(defaults.conformanceTools);
  }
  const modules = await loadToolModules(chosen, cwd);
  if (given.length === 0) {
    logger?.info(
      { modules: modules.map((module) => module.name), declaredIn: defaults?.file },
      'no --tools or TASKGATE_TOOLS given: serving the default modules the project declares (package.json "taskgate")',
    );
  }
  for (const module of modules) {
    logger?.info(
      { module: module.name, file: module.file, tools: module.tools.map((tool) => tool.name) },
      'tool module loaded',
    );
  }
  return modules;
}
