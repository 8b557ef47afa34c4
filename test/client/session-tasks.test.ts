import { TaskgateClient, type TaskState } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type RecordedRequest, startRecorder } from '../support/http-recorder.ts';
import { manualTimers } from '../support/manual-timers.ts';
import { endedTaskWith, useServedPlatform } from '../support/task-platform.ts';

// 2025-11-25's tasks through the client, on a session: a call goes out task-augmented when the tool
// requires it or the caller asks (`asTask`), the `{task}` answer is taken on the wire, tasks/get is
// polled at the task's pollInterval and the result fetched with tasks/result. Giving up on the call
// cancels the task with tasks/cancel, never a notification.
const database = useTestDatabase();
const served = useServedPlatform(database);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function session() {
  const recorder = await startRecorder(served.api.mcpUrl.href);
  cleanups.push(() => recorder.close());
  const client = await TaskgateClient.connectHttp({ url: recorder.url, revision: 'session' });
  cleanups.push(() => client.close());
  const sent = (method: string) =>
    recorder.requests.flatMap((request) => request.messages).filter((message) => message.method === method);
  return { client, sent };
}

describe('2025-11-25 tasks through the client', () => {
  it('a required-task tool is called as a task, and its result comes from tasks/result', async () => {
    const { client, sent } = await session();
    expect(client.server.protocolVersion).toBe('2025-11-25');
    const seen: TaskState[] = [];
    const result = await client.callTool('failing_job', {}, { onTask: (task) => seen.push(task) });
    expect(result.isError).toBe(true);
    expect(seen[0]?.taskId).toEqual(expect.any(String));
    expect((sent('tools/call')[0]?.params as { task?: unknown } | undefined)?.task).toEqual({});
    expect(sent('tasks/result')).toHaveLength(1);
  });

  it('asTask sends an optional-task tool as one; a plain call stays a plain call', async () => {
    const { client, sent } = await session();
    const plain = await client.callTool('slow_compute', { seconds: 0, label: 'session-plain' });
    expect(plain.isError).not.toBe(true);
    const tasked = await client.callTool('slow_compute', { seconds: 0.5, label: 'session-task' }, { asTask: true });
    expect(tasked.structuredContent).toMatchObject({ seconds: 0.5 });
    const calls = sent('tools/call').map((message) => (message.params as { task?: unknown }).task);
    expect(calls).toEqual([undefined, {}]);
  });

  it("a task-augmented call's onProgress follows the task's progress, strictly increasing", async () => {
    const { client } = await session();
    const seen: number[] = [];
    await client.callTool(
      'slow_compute',
      { seconds: 2, label: 'session-progress' },
      { asTask: true, onProgress: (update) => seen.push(update.progress) },
    );
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < seen.length; i += 1) expect(seen[i]).toBeGreaterThan(seen[i - 1] as number);
  });

  it('giving up on a task-backed call sends tasks/cancel, and the task ends cancelled', async () => {
    const { client, sent } = await session();
    const controller = new AbortController();
    let handedOver!: () => void;
    const isTask = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 30, label: 'session-give-up' },
      { asTask: true, signal: controller.signal, onTask: () => handedOver() },
    );
    call.catch(() => {});
    await isTask;
    controller.abort(new Error('stop'));
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    const task = await endedTaskWith(served.platform, 'slow_compute', 'label', 'session-give-up');
    expect(task.status).toBe('cancelled');
    expect(sent('tasks/cancel')).toHaveLength(1);
    expect(sent('notifications/cancelled')).toEqual([]);
  });

  it('aborting a task-backed call and closing at once still cancels its task', async () => {
    const recorder = await startRecorder(served.api.mcpUrl.href);
    cleanups.push(() => recorder.close());
    const client = await TaskgateClient.connectHttp({ url: recorder.url, revision: 'session' });
    const controller = new AbortController();
    let handedOver!: () => void;
    const isTask = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 4, label: 'session-abort-close' },
      { asTask: true, signal: controller.signal, onTask: () => handedOver() },
    );
    call.catch(() => {});
    await isTask;
    controller.abort(new Error('stop'));
    await client.close();
    const task = await endedTaskWith(served.platform, 'slow_compute', 'label', 'session-abort-close');
    expect(task.status).toBe('cancelled');
  });

  /**
   * A session behind a recorder that holds the requests of `method`; onError's reports kept, but
   * for the SDK's AbortErrors as close() cuts its open requests off (a held one, the GET stream).
   */
  async function holding(method: string, timers?: ReturnType<typeof manualTimers>['timers']) {
    const recorder = await startRecorder(served.api.mcpUrl.href, {
      hold: (request: RecordedRequest) => request.messages.some((message) => message.method === method),
    });
    cleanups.push(() => recorder.close());
    const reported: Error[] = [];
    const client = await TaskgateClient.connectHttp(
      { url: recorder.url, revision: 'session' },
      {
        ...(timers ? { timers } : {}),
        onError: (error) => {
          if (error.name !== 'AbortError') reported.push(error);
        },
      },
    );
    const sent = (name: string) =>
      recorder.requests.flatMap((request) => request.messages).filter((message) => message.method === name);
    return { recorder, client, reported, sent };
  }

  it('a tasks/cancel refused because the task had already ended is no error: the cancel was moot', async () => {
    // Timers that never run: close() can only end by the cancel's answer, not by its clock.
    const { recorder, client, reported } = await holding('tasks/cancel', manualTimers().timers);
    const controller = new AbortController();
    let handedOver!: () => void;
    const isTask = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 1, label: 'session-cancel-moot' },
      { asTask: true, signal: controller.signal, onTask: () => handedOver() },
    );
    call.catch(() => {});
    await isTask;
    controller.abort(new Error('stop'));
    await expect(call).rejects.toMatchObject({ code: 'TG_CALL_CANCELLED' });
    // The task finishes before its cancel reaches the server, which then refuses it (2025-11-25).
    const cancel = await recorder.nextHeld();
    const task = await endedTaskWith(served.platform, 'slow_compute', 'label', 'session-cancel-moot');
    expect(task.status).toBe('completed');
    cancel.release();
    await client.close();
    expect(cancel.record.answer).toContain('has already ended (completed) and cannot be cancelled');
    expect(reported).toEqual([]);
  });

  it('giving up on a call whose task the client has seen end sends no tasks/cancel, and the error says so', async () => {
    // 2025-11-25: the task is seen completed, and its result is on its way (tasks/result, held).
    const { recorder, client, reported, sent } = await holding('tasks/result');
    const controller = new AbortController();
    let taskId = '';
    const call = client.callTool(
      'slow_compute',
      { seconds: 1, label: 'session-seen-ended' },
      {
        asTask: true,
        signal: controller.signal,
        onTask: (task) => {
          taskId = task.taskId;
        },
      },
    );
    call.catch(() => {});
    await recorder.nextHeld();
    controller.abort(new Error('stop'));
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    await client.close();
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    expect((error as Error).message).toBe(
      `tools/call was cancelled (stop); task ${taskId} had already ended completed, so no tasks/cancel was sent (look it up with tasks/get)`,
    );
    expect((error as { details?: unknown }).details).toEqual({ reason: 'stop', taskId, ended: 'completed' });
    expect(sent('tasks/cancel')).toEqual([]);
    expect(reported).toEqual([]);
  });
});
