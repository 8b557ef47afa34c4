import type { TaskSupport } from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';

/** A tool's task support with its default: optional, except inline tools, which have no task row. */
export function taskSupportOf(tool: Pick<AnyTool, 'taskSupport' | 'inline'>): TaskSupport {
  return tool.inline ? 'forbidden' : (tool.taskSupport ?? 'optional');
}
