/**
 * The MCP conformance suite's fixtures: tools that ask their client for input. Served only with
 * TASKGATE_CONFORMANCE=1, next to whatever modules are loaded.
 */
import { confirmDelete, multiInput, testToolWithTask } from './input-fixtures.ts';

export const name = 'conformance';
export const tools = [confirmDelete, multiInput, testToolWithTask];
export { confirmDelete, multiInput, testToolWithTask };
