import { describe, expect, it } from 'vitest';
import { prettyLine } from './log-format.ts';

const record = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ level: 'info', time: '2026-12-04T20:21:05.123Z', service: 'taskgate', pid: 7, ...fields })}\n`;

describe('prettyLine', () => {
  it('shows time, level, component and message, then the other fields as key=value', () => {
    expect(
      prettyLine(record({ component: 'worker', msg: 'task done', taskId: 'a1', tools: ['x', 'y'] }), { color: false }),
    ).toBe('20:21:05.123 INFO  [worker] task done taskId=a1 tools=["x","y"]\n');
  });

  it('writes a request as what was asked and answered, in one line', () => {
    const line = record({
      msg: 'request',
      reqId: 'req-1',
      http: { method: 'GET', url: '/v1/tasks?limit=2', status: 200, ms: 3.214 },
    });
    expect(prettyLine(line, { color: false })).toBe(
      '20:21:05.123 INFO  GET /v1/tasks?limit=2 200 3.2 ms reqId=req-1\n',
    );
    const slow = record({ msg: 'request', http: { method: 'POST', url: '/mcp', status: 200, ms: 1520.4 } });
    expect(prettyLine(slow, { color: false })).toBe('20:21:05.123 INFO  POST /mcp 200 1520 ms\n');
  });

  it('quotes a value with spaces or control characters, and cuts a long one', () => {
    const line = prettyLine(record({ msg: 'm', note: 'two words', nul: 'a\u0000b', big: 'x'.repeat(1000) }), {
      color: false,
    });
    expect(line).toContain('note="two words"');
    expect(line).toContain('nul="a\\u0000b"');
    expect(line).toMatch(/ big=x{300}…\n$/);
    expect(line.split('\n')).toHaveLength(2);
  });

  it("puts an error's message on the line and, at error level, its stack under it", () => {
    const err = { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)' };
    expect(prettyLine(record({ level: 'error', msg: 'failed', err }), { color: false })).toBe(
      '20:21:05.123 ERROR failed err=boom\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)\n',
    );
    expect(prettyLine(record({ level: 'warn', msg: 'retrying', err }), { color: false })).toBe(
      '20:21:05.123 WARN  retrying err=boom\n',
    );
  });

  it('paints only with colour on, and passes a line that is not a JSON object through', () => {
    expect(prettyLine(record({ msg: 'hi' }), { color: true })).toBe(
      '\u001b[90m20:21:05.123\u001b[0m \u001b[32mINFO \u001b[0m hi\n',
    );
    expect(prettyLine('not json', { color: false })).toBe('not json\n');
    expect(prettyLine('[1,2]\n', { color: false })).toBe('[1,2]\n');
  });
});
