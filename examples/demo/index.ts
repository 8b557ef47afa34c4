/**
 * The demo tools: what `npm start` serves when no module is given, and what the README's
 * walkthrough calls. A tool module is any file that exports `tools`; this one also names itself.
 */
import { failingJob, protocolErrorJob } from './failing-job.ts';
import { greet } from './greet.ts';
import { sleepSubprocess } from './sleep-subprocess.ts';
import { slowCompute } from './slow-compute.ts';

export const name = 'demo';
export const tools = [greet, slowCompute, sleepSubprocess, failingJob, protocolErrorJob];
export { failingJob, greet, protocolErrorJob, sleepSubprocess, slowCompute };
