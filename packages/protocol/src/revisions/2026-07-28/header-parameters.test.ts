import { describe, expect, it } from 'vitest';
import { type HeaderParameter, headerParameterProblem, headerParametersOf } from './header-parameters.ts';

const schema = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
    nested: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
    query: { type: 'string' },
  },
};

describe('headerParametersOf', () => {
  it('finds each annotated property on a properties-only chain', () => {
    expect(headerParametersOf(schema)).toEqual([
      { name: 'Region', path: ['region'], type: 'string' },
      { name: 'Count', path: ['count'], type: 'integer' },
      { name: 'Dry-Run', path: ['dry'], type: 'boolean' },
      { name: 'Zone', path: ['nested', 'zone'], type: 'string' },
    ]);
    expect(headerParametersOf({ type: 'object' })).toEqual([]);
  });

  it('refuses what the spec does not allow', () => {
    const one = (property: Record<string, unknown>) => ({ type: 'object', properties: { p: property } });
    const cases: [Record<string, unknown>, string][] = [
      [one({ type: 'string', 'x-mcp-header': '' }), 'header name token'],
      [one({ type: 'string', 'x-mcp-header': 'Bad Name' }), 'header name token'],
      [one({ type: 'string', 'x-mcp-header': 'A\nB' }), 'header name token'],
      [one({ type: 'string', 'x-mcp-header': 7 }), 'header name token'],
      [one({ type: 'number', 'x-mcp-header': 'N' }), 'string, integer or boolean'],
      [one({ type: ['string', 'null'], 'x-mcp-header': 'N' }), 'string, integer or boolean'],
      [
        {
          type: 'object',
          properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } },
        },
        'declared twice',
      ],
      [
        { type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'X' } } } },
        'reachable',
      ],
      [{ type: 'object', oneOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'X' } } }] }, 'reachable'],
      [{ type: 'object', $defs: { a: { type: 'string', 'x-mcp-header': 'X' } } }, 'reachable'],
    ];
    for (const [bad, message] of cases) {
      const found = headerParametersOf(bad);
      expect(found, JSON.stringify(bad)).toHaveProperty('problem');
      expect((found as { problem: string }).problem).toContain(message);
    }
  });
});

describe('headerParameterProblem', () => {
  const parameters = headerParametersOf(schema) as HeaderParameter[];
  const good = {
    'mcp-param-region': 'us-west1',
    'mcp-param-count': '42.0',
    'mcp-param-dry-run': 'false',
    'mcp-param-zone': '=?base64?IGEg?=',
  };
  const args = { region: 'us-west1', count: 42, dry: false, nested: { zone: ' a ' }, query: 'x' };

  it('accepts headers that carry the body’s values, decoded and integers compared as numbers', () => {
    expect(headerParameterProblem(parameters, args, good)).toBeNull();
    // No value (absent or null): no header expected.
    expect(headerParameterProblem(parameters, { query: 'x', region: null }, {})).toBeNull();
    // A literal that only looks like the start or the end of an encoding is taken as it is.
    expect(
      headerParameterProblem(parameters, { region: '=?base64?SGVsbG8=' }, { 'mcp-param-region': '=?base64?SGVsbG8=' }),
    ).toBeNull();
  });

  it('refuses a missing, extra, different, repeated or malformed header', () => {
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [args, { ...good, 'mcp-param-region': undefined }, 'is required'],
      [{ ...args, region: undefined }, good, 'has no value'],
      [args, { ...good, 'mcp-param-region': 'us-east1' }, 'does not match'],
      [args, { ...good, 'mcp-param-count': '43' }, 'does not match'],
      [args, { ...good, 'mcp-param-count': '42abc' }, 'does not match'],
      [args, { ...good, 'mcp-param-dry-run': 'False' }, 'does not match'],
      [{ ...args, region: 5 }, { ...good, 'mcp-param-region': '5' }, 'does not match'],
      [args, { ...good, 'mcp-param-region': ['us-west1', 'us-west1'] }, 'more than once'],
      [{ ...args, count: 1e300 }, { ...good, 'mcp-param-count': `1${'0'.repeat(300)}` }, 'does not match'],
      [args, { ...good, 'mcp-param-zone': '=?base64?IGE?=' }, 'bad Base64'],
      [args, { ...good, 'mcp-param-zone': '=?base64?IG!!E=?=' }, 'bad Base64'],
      [args, { ...good, 'mcp-param-region': 'caf\u00e9' }, 'bad Base64'],
    ];
    for (const [body, headers, message] of cases) {
      expect(headerParameterProblem(parameters, body, headers as never), message).toContain(message);
    }
  });
});
