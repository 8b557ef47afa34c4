import type { ToolDefinition } from '../tool-definition.ts';
import { failingJob, protocolErrorJob } from './failing-job.ts';
import { greet } from './greet.ts';
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

export { chargeAccount, failingJob, greet, protocolErrorJob, reserveInventory, slowCompute };
