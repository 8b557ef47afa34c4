import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { prompts, resources, resourceTemplates } from '../../examples/conformance/content-fixtures.ts';
import { useTestDatabase } from '../support/databases.ts';
import { startRecorder } from '../support/http-recorder.ts';
import { endedTaskWith, useServedPlatform } from '../support/task-platform.ts';

// The client against Taskgate's own /mcp, both HTTP revisions, through a recording proxy: the
// cancel reaches the worker (the task ends `cancelled`) in the way the revision defines.
const database = useTestDatabase();
const served = useServedPlatform(database, { api: { content: [{ prompts, resources, resourceTemplates }] } });

async function cancelRunningCall(revision: 'auto' | 'session', label: string) {
  const recorder = await startRecorder(served.api.mcpUrl.href);
  const client = await TaskgateClient.connectHttp({ url: recorder.url, revision });
  try {
    const controller = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 30, label },
      { signal: controller.signal, onProgress: () => started() },
    );
    call.catch(() => {});
    await running;
    controller.abort(new Error('stop'));
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    const task = await endedTaskWith(served.platform, 'slow_compute', 'label', label);
    expect(task.status).toBe('cancelled');
    return { recorder, protocolVersion: client.server.protocolVersion };
  } finally {
    await client.close();
    await recorder.close();
  }
}

describe('TaskgateClient against Taskgate /mcp', () => {
  it('2026-07-28: the cancel is the close of the call’s stream; no cancel is POSTed', async () => {
    const { recorder, protocolVersion } = await cancelRunningCall('auto', 'client-modern');
    expect(protocolVersion).toBe('2026-07-28');
    const messages = recorder.requests.flatMap((request) => request.messages);
    expect(messages.map((message) => message.method)).not.toContain('notifications/cancelled');
    const call = recorder.requests.find((request) => request.messages.some((m) => m.method === 'tools/call'));
    expect(call?.clientClosedEarly).toBe(true);
    expect(recorder.requests.filter((request) => 'last-event-id' in request.headers)).toEqual([]);
  });

  it('2025-11-25: the cancel is a POSTed notifications/cancelled with the call’s id', async () => {
    const { recorder, protocolVersion } = await cancelRunningCall('session', 'client-session');
    expect(protocolVersion).toBe('2025-11-25');
    const messages = recorder.requests.flatMap((request) => request.messages);
    const call = messages.find((message) => message.method === 'tools/call');
    const cancels = messages.filter((message) => message.method === 'notifications/cancelled');
    expect(cancels.map((message) => (message.params as { requestId?: unknown }).requestId)).toEqual([call?.id]);
    expect(recorder.requests.filter((request) => 'last-event-id' in request.headers)).toEqual([]);
  });
});

describe('TaskgateClient reads resources and prompts', () => {
  it.each(['auto', 'session'] as const)(
    'over HTTP (%s): lists and gets prompts, lists and reads resources',
    async (revision) => {
      const client = await TaskgateClient.connectHttp({ url: served.api.mcpUrl.href, revision });
      try {
        expect((await client.listPrompts()).map((prompt) => prompt.name)).toContain('test_prompt_with_arguments');
        const prompt = await client.getPrompt('test_prompt_with_arguments', { arg1: 'a', arg2: 'b' });
        expect(prompt.messages).toEqual([
          { role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='a', arg2='b'" } },
        ]);
        expect((await client.listResources()).map((resource) => resource.uri)).toContain('test://static-text');
        expect((await client.listResourceTemplates()).map((template) => template.uriTemplate)).toContain(
          'test://template/{id}/data',
        );
        const read = await client.readResource('test://static-text');
        expect(read.contents).toEqual([
          {
            uri: 'test://static-text',
            mimeType: 'text/plain',
            text: 'This is the content of the static text resource.',
          },
        ]);
        // A prompt that does not exist is the server's refusal, as a tool's would be.
        await expect(client.getPrompt('no_such_prompt')).rejects.toThrow();
      } finally {
        await client.close();
      }
    },
  );
});
