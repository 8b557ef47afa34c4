import type { ToolDefinition } from '../tool-definition.ts';
import { failingJob, protocolErrorJob } from './failing-job.ts';
import { greet } from './greet.ts';
import { confirmDelete, multiInput, testToolWithTask } from './input-fixtures.ts';
import { chargeAccount, reserveInventory } from './mutations.ts';
import { slowCompute } from './slow-compute.ts';

/** The tools every Taskgate server offers. */
export const builtinTools: readonly ToolDefinition<never>[] = [
  greet,
  slowCompute,
  failingJob,
  protocolErrorJob,
  chargeAccount,
  reserveInventory,
] as unknown as ToolDefinition<never>[];

/** Tools that ask their client for input; offered with TASKGATE_CONFORMANCE=1 (the suite's fixtures). */
export const conformanceTools: readonly ToolDefinition<never>[] = [
  confirmDelete,
  multiInput,
  testToolWithTask,
] as unknown as ToolDefinition<never>[];

export {
  chargeAccount,
  confirmDelete,
  failingJob,
  greet,
  multiInput,
  protocolErrorJob,
  reserveInventory,
  slowCompute,
  testToolWithTask,
};
