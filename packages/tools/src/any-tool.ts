import type { ToolDefinition } from '@taskgate/sdk';

/**
 * A tool of any input and any database interface, as the platform holds it: each tool is typed
 * by its own tables (ToolContext<DB>), and Kysely's types make those incompatible with each other,
 * so the platform erases them. Arguments are checked against the tool's schema before it runs.
 */
// biome-ignore lint/suspicious/noExplicitAny: the tool's own DB type is erased on purpose (see above).
export type AnyTool = ToolDefinition<never, any>;
