/**
 * The MCP conformance suite's fixtures: tools that ask their client for input, tools that return
 * each kind of content, resources, a resource template and prompts. Served only with
 * TASKGATE_CONFORMANCE=1, next to whatever modules are loaded.
 */
import { contentTools, prompts, resources, resourceTemplates } from './content-fixtures.ts';
import { confirmDelete, multiInput, testToolWithTask } from './input-fixtures.ts';

export const name = 'conformance';
export const tools = [confirmDelete, multiInput, testToolWithTask, ...contentTools];
export { confirmDelete, multiInput, prompts, resources, resourceTemplates, testToolWithTask };
