// Real @taskgate/client clients for bench/listen-reconnect.ts, in a process of their own so the
// API's event loop is not shared with them. Driven over the IPC channel:
//   → { open: { url, taskIds: string[], jitter } }   one client per task, each watching its task
//   ← { ready: true }                                 every client subscribed
//   → { collect: { expected, timeoutMs } }
//   ← { resubscribed: number[] }                      when each client was subscribed again
//     (performance.timeOrigin + performance.now(), comparable across processes on one host)
import type { Jitter } from '@taskgate/reliability';
import { TaskgateClient, type TaskSubscription } from '../../packages/client/src/index.ts';

const now = () => performance.timeOrigin + performance.now();
const clients: TaskgateClient[] = [];
const subscriptions: TaskSubscription[] = [];
const resubscribed: number[] = [];

process.on('message', async (message: Record<string, unknown>) => {
  if (message.open) {
    const { url, taskIds, jitter } = message.open as { url: string; taskIds: string[]; jitter: Jitter };
    let subscribed = 0;
    await Promise.all(
      taskIds.map(async (taskId, index) => {
        const client = await TaskgateClient.connectHttp({ url }, { clientId: `bench-${index}` });
        clients.push(client);
        let first = true;
        subscriptions.push(
          client.watchTasks([taskId], {
            onTask: () => {},
            onAcknowledged: () => {
              if (first) {
                first = false;
                subscribed += 1;
                if (subscribed === taskIds.length) process.send?.({ ready: true });
                return;
              }
              resubscribed.push(now());
            },
            reconnect: { jitter, clientId: `bench-${index}` },
          }),
        );
      }),
    );
  } else if (message.collect) {
    const { expected, timeoutMs } = message.collect as { expected: number; timeoutMs: number };
    const deadline = now() + timeoutMs;
    while (resubscribed.length < expected && now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    process.send?.({ resubscribed });
  } else if (message.stop) {
    for (const subscription of subscriptions) subscription.close();
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    process.exit(0);
  }
});
