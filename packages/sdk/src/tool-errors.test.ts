import { describe, expect, it } from 'vitest';
import {
  TaskCancelledError,
  TaskTimeoutError,
  ToolProtocolError,
  URL_ELICITATION_REQUIRED,
  UrlElicitationRequiredError,
} from './tool-errors.ts';

describe('the SDK errors', () => {
  it('are recognised when thrown by another copy of the package', () => {
    // What a second copy of @taskgate/sdk (a tool module's own) constructs: another class with the
    // same registered brand. The platform's instanceof must still see it.
    const brand: unique symbol = Symbol.for('taskgate.sdk.ToolProtocolError') as never;
    class OtherCopy extends Error {
      readonly [brand] = true;
      readonly code = -32602;
    }
    expect(new OtherCopy('bad') instanceof ToolProtocolError).toBe(true);
    expect(new OtherCopy('bad') instanceof TaskCancelledError).toBe(false);
  });

  it('do not recognise plain errors or values without the brand', () => {
    expect(new Error('x') instanceof ToolProtocolError).toBe(false);
    expect((null as unknown as object) instanceof TaskTimeoutError).toBe(false);
    expect({ code: 1 } instanceof ToolProtocolError).toBe(false);
  });

  it('keep what the platform reads from them', () => {
    const timeout = new TaskTimeoutError('idle', 5_000);
    expect(timeout).toBeInstanceOf(Error);
    expect([timeout.clock, timeout.limitMs, timeout.message]).toEqual([
      'idle',
      5_000,
      'idle timeout: no progress for 5000 ms',
    ]);
    expect(new TaskCancelledError(null).message).toBe('task cancelled');
  });

  it('make a URLElicitationRequiredError of URL elicitations, each with an elicitationId', () => {
    const error = new UrlElicitationRequiredError([
      { url: 'https://pages.example.com/a', message: 'Open a', elicitationId: 'e-a' },
      { url: 'https://pages.example.com/b', message: 'Open b' },
    ]);
    // A protocol error the platform ends the call with, as any ToolProtocolError.
    expect(error).toBeInstanceOf(ToolProtocolError);
    expect(new ToolProtocolError(URL_ELICITATION_REQUIRED, 'x') instanceof UrlElicitationRequiredError).toBe(false);
    expect(error.code).toBe(-32042);
    const made = error.elicitations[1]?.elicitationId;
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    expect(error.data).toEqual({
      elicitations: [
        { mode: 'url', url: 'https://pages.example.com/a', message: 'Open a', elicitationId: 'e-a' },
        { mode: 'url', url: 'https://pages.example.com/b', message: 'Open b', elicitationId: made },
      ],
    });
  });

  it('refuse a URLElicitationRequiredError the client could not act on, naming what is wrong', () => {
    const make = (elicitations: unknown) => () => new UrlElicitationRequiredError(elicitations as never);
    expect(make([])).toThrow('at least one elicitation');
    expect(make([{ url: '/relative', message: 'm' }])).toThrow('elicitations[0].url must be an absolute URL');
    expect(make([{ url: 'https://x.example', message: 'm' }, { url: 'https://y.example' }])).toThrow(
      'elicitations[1].message must be a string',
    );
    expect(make([{ url: 'https://x.example', message: 'm', elicitationId: '' }])).toThrow(
      'elicitations[0].elicitationId must be a non-empty string',
    );
  });
});
