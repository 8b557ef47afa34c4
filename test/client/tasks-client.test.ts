import { TaskgateClient, type TaskState } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { startRecorder } from '../support/http-recorder.ts';
import { endedTaskWith, useServedPlatform } from '../support/task-platform.ts';

// Calls that become tasks (the Tasks extension, 2026-07-28): the SDK v2 client refuses a
// `resultType: "task"` answer, so @taskgate/client takes it on the wire, polls tasks/get at the
// server's pollIntervalMs and finishes the call with the task's outcome. tasks/cancel is
// acknowledged first; the terminal status comes after, and only it says the work stopped.
const database = useTestDatabase();
const served = useServedPlatform(database);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connected() {
  const recorder = await startRecorder(served.api.mcpUrl.href);
  cleanups.push(() => recorder.close());
  const client = await TaskgateClient.connectHttp({ url: recorder.url });
  cleanups.push(() => client.close());
  const sent = (method: string) =>
    recorder.requests.filter((request) => request.messages.some((message) => message.method === method));
  return { recorder, client, sent };
}

describe('TaskgateClient and tasks', () => {
  it('a call that outlasts the wait becomes a task, polled at pollIntervalMs, and returns its result', async () => {
    const { client, sent } = await connected();
    const seen: TaskState[] = [];
    const times: number[] = [];
    const result = await client.callTool(
      'slow_compute',
      { seconds: 1.5, label: 'client-task' },
      {
        onTask: (task) => {
          seen.push(task);
          times.push(performance.now());
        },
      },
    );
    expect(result.structuredContent).toMatchObject({ seconds: 1.5, steps: 30 });
    expect(seen[0]?.status).toBe('working');
    expect(seen.at(-1)?.status).toBe('completed');
    expect(new Set(seen.map((task) => task.taskId)).size).toBe(1);
    const polls = sent('tasks/get');
    expect(polls.length).toBe(seen.length - 1);
    // Honoured: no two polls closer than the interval the server named (less timer slack).
    const interval = seen[0]?.pollIntervalMs as number;
    expect(interval).toBeGreaterThan(0);
    for (let i = 2; i < times.length; i += 1) {
      expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(interval - 20);
    }
  });

  it('progress goes on once the call is a task: onProgress follows the task row, strictly increasing', async () => {
    const { client } = await connected();
    const updates: { progress: number; afterTask: boolean }[] = [];
    let isTask = false;
    await client.callTool(
      'slow_compute',
      { seconds: 3, label: 'client-task-progress' },
      {
        onTask: () => {
          isTask = true;
        },
        onProgress: (update) => updates.push({ progress: update.progress, afterTask: isTask }),
      },
    );
    const values = updates.map((update) => update.progress);
    for (let i = 1; i < values.length; i += 1) expect(values[i]).toBeGreaterThan(values[i - 1] as number);
    // Polled at 500 ms over the 2 s and more the task still works: a rise at most polls.
    expect(updates.filter((update) => update.afterTask).length).toBeGreaterThanOrEqual(2);
  });

  it('watchTask surfaces the progress the task holds through onProgress', async () => {
    const { client } = await connected();
    let taskId = '';
    let becameTask!: () => void;
    const handedOver = new Promise<void>((resolve) => {
      becameTask = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 3, label: 'client-watch-progress' },
      {
        onTask: (task) => {
          taskId = task.taskId;
          becameTask();
        },
      },
    );
    await handedOver;
    const seen: number[] = [];
    const ended = await client.watchTask(taskId, { onProgress: (update) => seen.push(update.progress) });
    await call;
    expect(ended.status).toBe('completed');
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < seen.length; i += 1) expect(seen[i]).toBeGreaterThan(seen[i - 1] as number);
  });

  it('cancelTask: the acknowledgement first, then the terminal status; the call ends with it', async () => {
    const { client, sent } = await connected();
    let taskId: string | undefined;
    let becameTask!: () => void;
    const handedOver = new Promise<void>((resolve) => {
      becameTask = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 30, label: 'client-cancel' },
      {
        onTask: (task) => {
          taskId = task.taskId;
          becameTask();
        },
      },
    );
    const callOutcome = call.then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    await handedOver;
    const order: string[] = [];
    const cancel = await client.cancelTask(taskId as string);
    order.push('acknowledged');
    expect(cancel.acknowledged).toBe(true);
    const terminal = await cancel.terminal;
    order.push(`terminal ${terminal.status}`);
    expect(order).toEqual(['acknowledged', 'terminal cancelled']);
    expect(await callOutcome).toMatch(/was cancelled/);
    expect(sent('tasks/cancel')).toHaveLength(1);
    expect(sent('notifications/cancelled')).toEqual([]);
  });

  it('aborting a task-backed call and then closing (try … finally) delivers its tasks/cancel: the task ends cancelled', async () => {
    const recorder = await startRecorder(served.api.mcpUrl.href);
    cleanups.push(() => recorder.close());
    const client = await TaskgateClient.connectHttp({ url: recorder.url });
    const controller = new AbortController();
    let handedOver!: () => void;
    const isTask = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    let taskId = '';
    let error: unknown = null;
    try {
      const call = client.callTool(
        'slow_compute',
        { seconds: 4, label: 'client-abort-close' },
        {
          signal: controller.signal,
          onTask: (task) => {
            taskId = task.taskId;
            handedOver();
          },
        },
      );
      call.catch(() => {});
      await isTask;
      controller.abort(new Error('stop'));
      await call;
    } catch (caught) {
      error = caught;
    } finally {
      await client.close();
    }
    // The error says what was done: a cancel of that task, which may yet lose to its completion.
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    expect((error as Error).message).toContain(`tasks/cancel is being sent for task ${taskId}`);
    expect((error as { details?: unknown }).details).toMatchObject({ taskId });
    const answered = recorder.requests.filter(
      (request) => request.upstreamEnded && request.messages.some((message) => message.method === 'tasks/cancel'),
    );
    expect(answered).toHaveLength(1);
    const task = await endedTaskWith(served.platform, 'slow_compute', 'label', 'client-abort-close');
    expect(task.status).toBe('cancelled');
  });

  it("a task's tool error is a result; its protocol error rejects the call", async () => {
    const { client } = await connected();
    const failing = await client.callTool('failing_job', {});
    expect(failing.isError).toBe(true);
    const error = await client.callTool('protocol_error_job', {}).then(
      () => null,
      (reason: unknown) => reason as { code?: number; message: string },
    );
    expect(error?.message).toContain('protocol_error_job failed on purpose');
    expect(error?.code).toBe(-32603);
  });
});
