// Listen streams for bench/mcp-task-notifications.ts, in a process of their own so the API's event
// loop is not shared with its readers. Driven over the IPC channel:
//   → { open: { url, groups: string[][], stall: boolean } }   one subscriptions/listen per group
//   ← { ready: true }                                          every stream acknowledged
//   → { resume: true }                                         stalled streams read again
//   → { report: { expected, timeoutMs } }
//   ← { received: [[taskId, atMs, status, stream], ...], messages: number }
//     once `expected` notifications of a terminal status arrived, or at the timeout
// Times are performance.timeOrigin + performance.now(), comparable across processes on one host.
import http from 'node:http';

interface Open {
  readonly url: string;
  readonly groups: readonly (readonly string[])[];
  readonly stall: boolean;
}

const received: [string, number, string, number][] = [];
let terminal = 0;
const responses: http.IncomingMessage[] = [];
let messages = 0;

function now(): number {
  return performance.timeOrigin + performance.now();
}

function openStream(url: URL, id: number, taskIds: readonly string[], stall: boolean, acked: () => void): void {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications: { taskIds },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      },
    },
  });
  const request = http.request(url, {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      'content-length': Buffer.byteLength(body),
    },
  });
  request.on('response', (response) => {
    responses.push(response);
    let text = '';
    let ready = false;
    response.on('data', (chunk: Buffer) => {
      const at = now();
      text += chunk.toString();
      const frames = text.split('\n\n');
      text = frames.pop() ?? '';
      for (const frame of frames) {
        if (!frame.startsWith('data: ')) continue;
        const message = JSON.parse(frame.slice(6)) as {
          method?: string;
          params?: { taskId?: string; status?: string };
        };
        messages += 1;
        if (message.method === 'notifications/tasks' && message.params?.taskId) {
          const status = message.params.status ?? '';
          received.push([message.params.taskId, at, status, id]);
          if (['completed', 'failed', 'cancelled'].includes(status)) terminal += 1;
        }
        if (!ready && message.method === 'notifications/subscriptions/acknowledged') {
          ready = true;
          // A stalled reader: from here on nothing is read until resume.
          if (stall) response.pause();
          acked();
        }
      }
    });
  });
  request.end(body);
}

process.on('message', (command: { open?: Open; resume?: true; report?: { expected: number; timeoutMs: number } }) => {
  if (command.open) {
    const { url, groups, stall } = command.open;
    let waiting = groups.length;
    for (const [index, taskIds] of groups.entries()) {
      openStream(new URL(url), index + 1, taskIds, stall, () => {
        waiting -= 1;
        if (waiting === 0) process.send?.({ ready: true });
      });
    }
  }
  if (command.resume) for (const response of responses) response.resume();
  if (command.report) {
    const { expected, timeoutMs } = command.report;
    const deadline = Date.now() + timeoutMs;
    const check = () => {
      if (terminal >= expected || Date.now() > deadline) process.send?.({ received, messages }, () => process.exit(0));
      else setTimeout(check, 20);
    };
    check();
  }
});
