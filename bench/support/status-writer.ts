// Status changes for bench/mcp-task-notifications.ts, written from a process of their own (as a
// worker's are), through the same @taskgate/db functions Taskgate uses, which announce each change
// once it has committed (TaskAnnouncer). Driven over IPC:
//   → { url, ids, rate, change: 'cancel' | 'park' | 'answer', key? }
//   ← { committed: [[taskId, atMs], ...] }   atMs: when the statement returned (after its commit)
// Times are performance.timeOrigin + performance.now(), comparable across processes on one host.
import { randomUUID } from 'node:crypto';
import { answerInput, createKysely, createPool, parkForInput, requestCancel, TaskAnnouncer } from '@taskgate/db';

interface Command {
  readonly url: string;
  readonly ids: readonly string[];
  readonly rate: number;
  readonly change: 'cancel' | 'park' | 'answer';
  readonly key?: string;
  readonly message?: string;
}

const now = () => performance.timeOrigin + performance.now();
let db: ReturnType<typeof createKysely> | null = null;
let announcer: TaskAnnouncer | null = null;

process.on('message', async (command: Command | { stop: true }) => {
  if ('stop' in command) {
    await announcer?.settled();
    await db?.destroy();
    process.exit(0);
  }
  db ??= createKysely(createPool(command.url, { applicationName: 'bench-writer', max: 16 }));
  announcer ??= new TaskAnnouncer(db);
  const writer = announcer.writer(db);
  const key = command.key ?? 'question';
  const change = (id: string) => {
    switch (command.change) {
      case 'cancel':
        return requestCancel(writer, 'default', id, 'bench', { immediately: true });
      case 'park':
        return parkForInput(
          writer,
          id,
          0,
          { [key]: { method: 'elicitation/create', params: {} } },
          command.message ?? '',
        );
      case 'answer':
        // The bench's tasks have no worker: the job id the resumed run would carry is never enqueued.
        return answerInput(writer, 'default', id, { [key]: { action: 'accept' } }, randomUUID());
    }
  };
  const committed: [string, number][] = [];
  const started = performance.now();
  await Promise.all(
    command.ids.map(async (id, n) => {
      const due = started + (n * 1000) / command.rate - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
      await change(id);
      committed.push([id, now()]);
    }),
  );
  process.send?.({ committed });
});
