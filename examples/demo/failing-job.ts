import { defineTool, ToolProtocolError } from '@taskgate/sdk';

/** A tool error: the call completes, and its result says it failed (`isError: true`). */
export const failingJob = defineTool({
  name: 'failing_job',
  title: 'Failing job',
  description: 'Always fails as a tool error: the result carries isError: true and an explanation.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { title: 'Failing job', readOnlyHint: true, openWorldHint: false },
  retry: 'safe',
  timeouts: { maxMs: 10_000 },
  // Only ever a task: the Tasks extension's required-task case (a client without it gets -32021).
  taskSupport: 'required',
  async handler() {
    return { content: [{ type: 'text', text: 'failing_job failed on purpose' }], isError: true };
  },
});

/** A protocol error: the task ends `failed` with a JSON-RPC error, not a result. */
export const protocolErrorJob = defineTool({
  name: 'protocol_error_job',
  title: 'Protocol error job',
  description: 'Always fails with a JSON-RPC error (internal error), so the task ends failed.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { title: 'Protocol error job', readOnlyHint: true, openWorldHint: false },
  retry: 'safe',
  timeouts: { maxMs: 10_000 },
  taskSupport: 'required',
  async handler() {
    throw new ToolProtocolError(-32603, 'protocol_error_job failed on purpose', { tool: 'protocol_error_job' });
  },
});
