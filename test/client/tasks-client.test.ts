import { TaskgateClient, type TaskState } from '@taskgate/client';
import { isTaskgateError, type TaskgateError } from '@taskgate/errors';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { startRecorder } from '../support/http-recorder.ts';
import { manualTimers } from '../support/manual-timers.ts';
import { endedTaskWith, useServedPlatform, waitForTask } from '../support/task-platform.ts';

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

  // close()'s wait, distinct from every other timer the client arms (polls, the call's clocks).
  const CLOSE_WAIT_MS = 7_000;

  /**
   * A client whose timers run only when the test fires them, behind a recorder that holds every
   * tasks/cancel; `giveUp` starts a task-backed call, aborts it once it is a task, and resolves
   * with the task's id and the held tasks/cancel.
   */
  async function cancelsHeld() {
    const recorder = await startRecorder(served.api.mcpUrl.href, {
      hold: (request) => request.messages.some((message) => message.method === 'tasks/cancel'),
    });
    cleanups.push(() => recorder.close());
    const clock = manualTimers();
    const reported: TaskgateError[] = [];
    const client = await TaskgateClient.connectHttp(
      { url: recorder.url },
      {
        timers: clock.timers,
        closeCancelsMs: CLOSE_WAIT_MS,
        onError: (error) => {
          if (isTaskgateError(error)) reported.push(error);
        },
      },
    );
    const giveUp = async (label: string, seconds = 1) => {
      const controller = new AbortController();
      let handedOver!: (taskId: string) => void;
      const isTask = new Promise<string>((resolve) => {
        handedOver = resolve;
      });
      const call = client.callTool(
        'slow_compute',
        { seconds, label },
        { signal: controller.signal, onTask: (task) => handedOver(task.taskId) },
      );
      call.catch(() => {});
      const taskId = await isTask;
      controller.abort(new Error('stop'));
      await expect(call).rejects.toMatchObject({ code: 'TG_CALL_CANCELLED' });
      return { taskId, cancel: await recorder.nextHeld() };
    };
    return { client, clock, reported, giveUp };
  }

  it('close() stops waiting for a tasks/cancel not answered within closeCancelsMs, and reports it naming the task', async () => {
    const { client, clock, reported, giveUp } = await cancelsHeld();
    const { taskId, cancel } = await giveUp('client-close-unanswered');
    let returned = false;
    const closed = client.close().then(() => {
      returned = true;
    });
    // The cancel is held unanswered; only close()'s clock can end its wait.
    await clock.armed(CLOSE_WAIT_MS);
    await new Promise((resolve) => setImmediate(resolve));
    expect(returned).toBe(false);
    expect(reported).toEqual([]);
    clock.fire(CLOSE_WAIT_MS);
    await closed;
    expect(cancel.record.upstreamEnded).toBe(false);
    expect(reported.map((error) => [error.code, error.message, error.details])).toEqual([
      [
        'TG_TASK_CANCEL_UNCONFIRMED',
        `tasks/cancel for task ${taskId} was not answered within ${CLOSE_WAIT_MS} ms of close(): the task may run to completion; look it up with tasks/get`,
        { taskId, waitedMs: CLOSE_WAIT_MS },
      ],
    ]);
  });

  it('a tasks/cancel the server refuses goes to onError with its answer, naming the task', async () => {
    const { client, reported, giveUp } = await cancelsHeld();
    // Long enough for its ttl to be changed while it still works.
    const { taskId, cancel } = await giveUp('client-close-refused', 3);
    // Before the cancel reaches the server, the task ends and its ttl (made 1 ms) runs out: the
    // server no longer knows it, and refuses the cancel as it does any unknown id.
    await sql`UPDATE tasks SET ttl_ms = 1 WHERE id = ${taskId}::uuid`.execute(served.platform.db);
    await expect(client.getTask(taskId)).resolves.toMatchObject({ status: 'working' });
    const statusOf = async () =>
      (await sql<{ status: string }>`SELECT status FROM tasks WHERE id = ${taskId}::uuid`.execute(served.platform.db))
        .rows[0]?.status;
    expect(await waitForTask(statusOf, (status) => status !== 'working')).toBe('completed');
    await expect(client.getTask(taskId)).rejects.toThrow('no task');
    cancel.release();
    await client.close();
    expect(cancel.record.answer).toContain('no task');
    expect(reported).toHaveLength(1);
    const [error] = reported;
    expect(error?.code).toBe('TG_TASK_CANCEL_UNCONFIRMED');
    expect(error?.message).toBe(
      `tasks/cancel for task ${taskId} was refused: the server answered -32602 (Invalid params: no task "${taskId}"); the task may run to completion: look it up with tasks/get (cancelTask sends the cancel again)`,
    );
    expect(error?.details).toMatchObject({ taskId, answer: { code: -32602, data: { taskId } } });
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
