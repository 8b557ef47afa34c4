import type { TaskLogMessage, TaskRecord } from '@taskgate/db';
import { describe, expect, it } from 'vitest';
import type { TaskWatcher } from '../../tasks/task-watch.ts';
import type { McpCoreOptions } from '../core-assembly.ts';
import { CallRunner } from './call-runner.ts';
import { TaskLogRelay } from './task-log-relay.ts';

// The relay of a durable task's log messages, with every read held by the test: orders are forced,
// not waited for.

/** A read the test answers by hand. */
function heldReads() {
  const pending: { afterSeq: number; answer: (messages: TaskLogMessage[]) => void; fail: (e: Error) => void }[] = [];
  const read = (afterSeq: number) =>
    new Promise<TaskLogMessage[]>((answer, fail) => {
      pending.push({ afterSeq, answer, fail });
    });
  return { pending, read };
}

const message = (seq: number, level = 'info'): TaskLogMessage => ({
  seq,
  kind: 'log',
  level,
  logger: null,
  data: `m${seq}`,
});
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('TaskLogRelay', () => {
  it('keeps one read in flight, reads on from the last message sent, and sends each message once', async () => {
    const reads = heldReads();
    const sent: unknown[] = [];
    const relay = new TaskLogRelay({ read: reads.read, send: (n) => sent.push(n), level: 'info' });
    relay.seen(2);
    relay.seen(3); // while the first read is under way: no second read, the count is remembered
    expect(reads.pending.map((read) => read.afterSeq)).toEqual([0]);
    reads.pending[0]?.answer([message(1), message(2)]);
    await flush();
    // The count said 3: one more read, after the last sent.
    expect(reads.pending.map((read) => read.afterSeq)).toEqual([0, 2]);
    reads.pending[1]?.answer([message(3)]);
    await flush();
    relay.seen(3); // nothing new: no read
    expect(reads.pending).toHaveLength(2);
    expect(sent.map((n) => (n as { params: { data: string } }).params.data)).toEqual(['m1', 'm2', 'm3']);
    expect(sent[0]).toEqual({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'm1' } });
  });

  it('drops what is below the level, and a drain ends even when a read fails', async () => {
    const reads = heldReads();
    const sent: unknown[] = [];
    const logged: string[] = [];
    const relay = new TaskLogRelay({
      read: reads.read,
      send: (n) => sent.push(n),
      level: 'warning',
      log: (_fields, text) => logged.push(text),
    });
    const drained = relay.drain(3);
    reads.pending[0]?.answer([message(1, 'debug'), message(2, 'error')]);
    await flush();
    reads.pending[1]?.fail(new Error('connection refused'));
    await drained;
    expect(sent.map((n) => (n as { params: { level: string } }).params.level)).toEqual(['error']);
    expect(logged).toEqual(["a durable task's log messages could not be read"]);
  });
});

describe('TaskLogRelay with elicitation completions', () => {
  const completion = (seq: number, elicitationId: string): TaskLogMessage => ({
    seq,
    kind: 'elicitation_complete',
    elicitationId,
  });

  it('sends a completion in order with the log messages, through the completer', async () => {
    const reads = heldReads();
    const order: string[] = [];
    const relay = new TaskLogRelay({
      read: reads.read,
      send: (n) => order.push(`message ${(n.params as { data: string }).data}`),
      level: 'info',
      completeElicitation: (id) => order.push(`complete ${id}`),
    });
    const drained = relay.drain(3);
    reads.pending[0]?.answer([message(1), completion(2, 'e-1'), message(3)]);
    await drained;
    expect(order).toEqual(['message m1', 'complete e-1', 'message m3']);
  });

  it('sends completions to a request that asked for no level, and nothing without a completer', async () => {
    const reads = heldReads();
    const order: string[] = [];
    const noLevel = new TaskLogRelay({
      read: reads.read,
      send: (n) => order.push(`message ${(n.params as { data: string }).data}`),
      completeElicitation: (id) => order.push(`complete ${id}`),
    });
    const drained = noLevel.drain(2);
    reads.pending[0]?.answer([message(1, 'error'), completion(2, 'e-2')]);
    await drained;
    expect(order).toEqual(['complete e-2']);

    const noCompleter = new TaskLogRelay({
      read: reads.read,
      send: (n) => order.push(String(n.method)),
      level: 'info',
    });
    const second = noCompleter.drain(2);
    reads.pending[1]?.answer([completion(1, 'e-3'), message(2)]);
    await second;
    expect(order).toEqual(['complete e-2', 'notifications/message']);
  });
});

describe('CallRunner.await with log messages', () => {
  const task = (status: TaskRecord['status'], logCount: number) =>
    ({
      id: 't1',
      status,
      logLevel: 'info',
      logCount,
      result: { content: [] },
      progress: null,
    }) as unknown as TaskRecord;

  it('answers only after the messages the terminal reading counts have been sent', async () => {
    const reads = heldReads();
    const watcher = {
      untilTerminal: async (_tenant: string, _id: string, options: { onChange?: (task: TaskRecord) => void }) => {
        options.onChange?.(task('working', 1));
        return task('completed', 2);
      },
    } as unknown as TaskWatcher;
    const service = { logMessages: (_t: string, _id: string, afterSeq: number) => reads.read(afterSeq) };
    const runner = new CallRunner(
      { service, server: { name: 'taskgate', version: 'test' }, pollMs: 100 } as unknown as McpCoreOptions,
      watcher,
    );
    const order: string[] = [];
    const answered = runner
      .await(
        task('working', 0),
        {
          tenantId: 'default',
          signal: new AbortController().signal,
          logLevel: 'info',
          onLog: (n) => order.push(`message ${(n.params as { data: string }).data}`),
        },
        null,
      )
      .then((outcome) => order.push(`answer ${outcome?.kind}`));
    await flush();
    expect(order).toEqual([]); // the read the non-terminal reading started holds the answer
    reads.pending[0]?.answer([message(1)]);
    await flush();
    reads.pending[1]?.answer([message(2)]);
    await answered;
    expect(order).toEqual(['message m1', 'message m2', 'answer result']);
  });
});
