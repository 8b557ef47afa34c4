import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadToolModules, type ToolModule } from '@taskgate/tools';
import { type Config, NO_TOOLS } from './config.ts';
import { gatewaysFileModule } from './gateways-file.ts';
import type { Logger } from './logger.ts';

/**
 * The modules served when none is given, so the README's walkthrough works on a fresh clone. They
 * exist only in a checkout: an installed @taskgate/cli has no examples/ beside it, and there a
 * process given no module loads none (start then refuses a worker role with nothing to serve).
 */
export const DEFAULT_MODULES = [
  fileURLToPath(new URL('../../../examples/demo/index.ts', import.meta.url)),
  fileURLToPath(new URL('../../../examples/ledger/index.ts', import.meta.url)),
];
const CONFORMANCE_MODULE = fileURLToPath(new URL('../../../examples/conformance/index.ts', import.meta.url));

/**
 * The tool modules this process loads: `--tools` if given, else TASKGATE_TOOLS, else the demo
 * modules (said in the log, so nobody mistakes them for their own); plus the conformance fixtures
 * with TASKGATE_CONFORMANCE=1. `none` (alone: main.ts and loadConfig refuse it with modules)
 * loads nothing at all, the conformance fixtures included: an API process that offers the tools
 * its workers publish to the catalog, and runs none itself.
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
  if (given.length === 0 && !examplesPresent()) {
    logger?.info({}, 'no --tools or TASKGATE_TOOLS given, and this installation has no example modules: none loaded');
    return [];
  }
  const chosen = given.length > 0 ? [...given] : [...DEFAULT_MODULES];
  if (config.conformanceTools) chosen.push(CONFORMANCE_MODULE);
  const modules = await loadToolModules(chosen, cwd);
  if (given.length === 0) {
    logger?.info(
      { modules: modules.map((module) => module.name) },
      'no --tools or TASKGATE_TOOLS given: serving the demo modules from examples/',
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

/** Whether this CLI runs from a checkout, with examples/ beside it (see DEFAULT_MODULES). */
export function examplesPresent(): boolean {
  return DEFAULT_MODULES.every((file) => existsSync(file));
}
