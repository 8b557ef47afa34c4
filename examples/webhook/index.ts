import { defineTool } from '@taskgate/sdk';

/**
 * A tool that calls an HTTP API: it POSTs an event to the webhook at TASKGATE_WEBHOOK_URL with
 * the call's idempotency key as its `Idempotency-Key` header (ctx.fetch, `idempotencyKey: true`).
 *
 * The key is what makes the call safe to run again: a worker that dies after the POST leaves the
 * outcome unknown, the task runs again on another worker, and the receiver recognises the second
 * POST by its key. That is why the tool is `conditional` with a required key, and why the POST is
 * not an irreversible step: a receiver that cannot deduplicate would make it one
 * (`ctx.step('deliver', fn, { irreversible: true })`), and a lost outcome a reconciliation item.
 *
 * A cancel, either clock or a worker handing the task back aborts the request (ctx.fetch is bound
 * to the task's signal), and the receiver sees its connection close.
 */
export const sendWebhook = defineTool<{ event: string; payload: Record<string, unknown> }>({
  name: 'send_webhook',
  title: 'Send a webhook',
  description:
    'POSTs {event, payload} as JSON to the webhook at TASKGATE_WEBHOOK_URL, with the call’s idempotency key as its Idempotency-Key header.',
  inputSchema: {
    type: 'object',
    properties: {
      event: { type: 'string', minLength: 1, maxLength: 200, description: 'The event name, e.g. order.paid' },
      payload: { type: 'object', description: 'The event’s data' },
    },
    required: ['event', 'payload'],
    additionalProperties: false,
  },
  annotations: { title: 'Send a webhook', readOnlyHint: false, idempotentHint: true, openWorldHint: true },
  retry: 'conditional',
  idempotencyKey: 'required',
  timeouts: { maxMs: 30_000 },
  async handler({ event, payload }, ctx) {
    const url = process.env.TASKGATE_WEBHOOK_URL;
    if (url === undefined || !/^https?:\/\//.test(url)) {
      return {
        isError: true,
        content: [{ type: 'text', text: 'set TASKGATE_WEBHOOK_URL to the http(s) URL of the webhook to call' }],
      };
    }
    const response = await ctx.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event, payload }),
      idempotencyKey: true,
    });
    const text = (await response.text()).slice(0, 1_000);
    if (!response.ok) {
      // A refusal is the receiver's answer, not a fault of the call: said as a tool error.
      return { isError: true, content: [{ type: 'text', text: `the webhook answered ${response.status}: ${text}` }] };
    }
    return {
      content: [{ type: 'text', text: `delivered ${event} (${response.status})` }],
      structuredContent: { status: response.status },
    };
  },
});

export const name = 'webhook';
export const tools = [sendWebhook];
