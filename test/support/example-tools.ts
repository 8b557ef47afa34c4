import { defineTool } from '@taskgate/sdk';
import { tools as conformance } from '../../examples/conformance/index.ts';
import { tools as demo } from '../../examples/demo/index.ts';
import { tools as ledger } from '../../examples/ledger/index.ts';

/** What `taskgate start` serves with no module given: the demo and ledger example modules. */
export const builtinTools = [...demo, ...ledger];
/** The MCP conformance fixtures (TASKGATE_CONFORMANCE=1). */
export const conformanceTools = conformance;

/**
 * Content of every type 2025-06-18 has, with annotations and structured content: what a client
 * of an older revision must get down-shaped (its schema refuses a content type it lacks).
 */
export const linkedReport = defineTool({
  name: 'linked_report',
  description: 'A report with a link to its data, a recording, and structured content.',
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object', properties: { rows: { type: 'integer' } } },
  annotations: { readOnlyHint: true },
  retry: 'safe',
  inline: true,
  async handler() {
    return {
      content: [
        { type: 'text', text: 'report ready' },
        { type: 'resource_link', uri: 'file:///reports/r.csv', name: 'r.csv', mimeType: 'text/csv' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
      ],
      structuredContent: { rows: 3 },
    };
  },
});
