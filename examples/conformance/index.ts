/**
 * The MCP conformance suite's fixtures: tools that ask their client for input, tools that return
 * each kind of content, tools and a prompt that ask in multi round-trips, resources, a resource
 * template and prompts. Served only with
 * TASKGATE_CONFORMANCE=1, next to whatever modules are loaded.
 */
import { prompts as contentPrompts, contentTools, resources, resourceTemplates } from './content-fixtures.ts';
import { diagnosticTools } from './diagnostic-fixtures.ts';
import { confirmDelete, multiInput, testToolWithTask } from './input-fixtures.ts';
import { askingTools, roundTripPrompts, roundTripTools } from './round-trip-fixtures.ts';

export const name = 'conformance';
export const tools = [
  confirmDelete,
  multiInput,
  testToolWithTask,
  ...contentTools,
  ...roundTripTools,
  ...askingTools,
  ...diagnosticTools,
];
export const prompts = [...contentPrompts, ...roundTripPrompts];
export { confirmDelete, multiInput, resources, resourceTemplates, testToolWithTask };
