import type { Capabilities } from './client-capabilities.ts';

/** The Tasks extension (SEP-2663): its identifier in capabilities and its `_meta` keys. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** What -32021 names when a request needs the extension and the client did not declare it. */
export const TASKS_REQUIRED: Capabilities = { extensions: { [TASKS_EXTENSION]: {} } };

/** The methods the extension adds; a client must declare the extension on each such request. */
export const TASK_METHODS: readonly string[] = ['tasks/get', 'tasks/update', 'tasks/cancel'];

/** Whether a request's client capabilities declare the Tasks extension (an object under its id). */
export function declaresTasks(capabilities: Capabilities | undefined): boolean {
  const extensions = capabilities?.extensions;
  if (typeof extensions !== 'object' || extensions === null) return false;
  const declared = (extensions as Record<string, unknown>)[TASKS_EXTENSION];
  return typeof declared === 'object' && declared !== null && !Array.isArray(declared);
}
