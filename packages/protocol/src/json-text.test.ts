import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type JsonTextProblem, parseJsonText } from './json-text.ts';
import { scanJsonText } from './json-text-scan.ts';

function refusal(text: string): JsonTextProblem {
  const parsed = parseJsonText(text);
  if (parsed.ok) throw new Error(`${text.slice(0, 40)} was accepted`);
  return parsed.problem;
}

function value(text: string): unknown {
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new Error(`${text.slice(0, 40)} was refused: ${parsed.problem.message}`);
  return parsed.value;
}

describe('parseJsonText: prototype keys', () => {
  it('names a prototype key, however it is spelled and however deep', () => {
    expect(refusal('{"a":[{"b":{"__proto__":{}}}]}').message).toContain('"__proto__" key');
    expect(refusal('{"\\u005f\\u005Fproto__" : 1}').message).toContain('"__proto__" key');
    expect(refusal('[{"constructor":{"prototype":{"admin":true}}}]').message).toContain('"constructor" object');
    expect(refusal('')).toEqual({ code: 'TG_MALFORMED_JSON', path: '', message: 'is empty' });
    expect(refusal('{"a":').message).toMatch(/^is not valid JSON: /);
  });

  it('accepts the words where they are not keys, and keys that only look alike', () => {
    expect(value('{"text":"\\"__proto__\\": 1","constructor":"a string"}')).toEqual({
      text: '"__proto__": 1',
      constructor: 'a string',
    });
    expect(value('{"constructor":{"name":"x"},"proto":1}')).toEqual({ constructor: { name: 'x' }, proto: 1 });
  });

  it('walks a wide array and a deep one without running out of stack', () => {
    // The key spelled inside a string value makes the walk run over what follows.
    const wide = `{"s":"\\"__proto__\\":","a":[${Array(500_000).fill(0).join(',')}]}`;
    expect((value(wide) as { a: number[] }).a).toHaveLength(500_000);
    const deep = `{"s":"\\"constructor\\":","d":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(value(deep)).toHaveProperty('d');
  });
});

describe('parseJsonText: duplicate keys', () => {
  it('refuses a key written twice, at the top and at any depth, pointing at the second', () => {
    expect(refusal('{"cents":true,"cents":5}')).toMatchObject({ code: 'TG_JSON_DUPLICATE_KEY', path: '/cents' });
    expect(refusal('{"a":[1,{"x":{}},{"b":{"c":1,"d":[],"c":2}}]}')).toMatchObject({
      code: 'TG_JSON_DUPLICATE_KEY',
      path: '/a/2/b/c',
    });
    expect(refusal('[[{"k":1,"k":1}]]')).toMatchObject({ path: '/0/0/k' });
  });

  it('compares keys decoded: an escaped spelling is the same key', () => {
    expect(refusal('{"a":1,"\\u0061":2}')).toMatchObject({ code: 'TG_JSON_DUPLICATE_KEY', path: '/a' });
    expect(refusal('{"a\\\\b":1,"a\\u005cb":2}')).toMatchObject({ code: 'TG_JSON_DUPLICATE_KEY' });
    expect(refusal('{"~/":1,"~/":2}').path).toBe('/~0~1');
  });

  it('finds a duplicate among many keys, past the linear search', () => {
    const keys = Array.from({ length: 5_000 }, (_, index) => `"k${index}":${index}`);
    expect(Object.keys(value(`{${keys.join(',')}}`) as object)).toHaveLength(5_000);
    expect(refusal(`{${keys.join(',')},"k17":0}`)).toMatchObject({ path: '/k17' });
    expect(refusal(`{${keys.join(',')},"k\\u0031":0}`)).toMatchObject({ path: '/k1' });
  });

  it('accepts the same key in different objects, and keys that differ only inside strings', () => {
    expect(value('{"a":{"a":1},"b":[{"a":2},{"a":3}]}')).toEqual({ a: { a: 1 }, b: [{ a: 2 }, { a: 3 }] });
    expect(value('{"a":"\\"a\\":","b":"}{\\"b\\":[","c":"\\\\"}')).toEqual({ a: '"a":', b: '}{"b":[', c: '\\' });
    expect(value('{"A":1,"a":2,"a ":3}')).toEqual({ A: 1, a: 2, 'a ': 3 });
  });
});

describe('parseJsonText: numbers', () => {
  it('refuses a fraction its double rounds to a whole number', () => {
    for (const literal of [
      '0.9999999999999999999',
      '1.0000000000000001',
      '-2.00000000000000001',
      '4.99999999999999999e1',
    ]) {
      expect(refusal(`{"cents":${literal}}`), literal).toMatchObject({
        code: 'TG_JSON_NUMBER_INVALID',
        path: '/cents',
      });
    }
  });

  it('refuses a whole number past 2^53 that the double rounds, and accepts one it writes back as itself', () => {
    expect(refusal('[9007199254740993]')).toMatchObject({ code: 'TG_JSON_NUMBER_INVALID', path: '/0' });
    expect(refusal('[-9007199254740993]').code).toBe('TG_JSON_NUMBER_INVALID');
    expect(refusal('{"n":123456789012345678901234567890}').code).toBe('TG_JSON_NUMBER_INVALID');
    expect(refusal('{"n":1.00000000000000000001e30}').code).toBe('TG_JSON_NUMBER_INVALID');
    const held = '[9007199254740992,-9007199254740991,18014398509481984,1e22,1E+2,1e23,6.02e23,1.7976931348623157e308]';
    expect(value(held)).toEqual([
      9007199254740992,
      -9007199254740991,
      18014398509481984,
      1e22,
      100,
      1e23,
      6.02e23,
      Number.MAX_VALUE,
    ]);
    // What JSON.stringify writes of any double reads back as it.
    const doubles = [2 ** 53 + 2, -(2 ** 60), 1e21, 123456789e300, Number.MAX_SAFE_INTEGER, 5e-324, -1e-7];
    expect(value(JSON.stringify(doubles))).toEqual(doubles);
  });

  it('refuses a non-zero number that underflows to 0, and accepts zero however written', () => {
    for (const literal of ['1e-400', '-1e-400', '2e-324', `0.${'0'.repeat(400)}1`, '1e-99999999999999999999']) {
      expect(refusal(`{"seconds":${literal}}`), literal).toMatchObject({ code: 'TG_JSON_NUMBER_INVALID' });
    }
    expect(value(`[0, -0, 0.0, 0e-400, 0.000e+999, 0.${'0'.repeat(400)}, 5e-324]`)).toEqual([
      0, -0, 0, 0, 0, 0, 5e-324,
    ]);
  });

  it('accepts ordinary decimals, whole numbers written with a fraction or an exponent, and long fractions', () => {
    expect(value('{"a":0.1,"b":1.0,"c":1e2,"d":-1.5,"e":3.14159265358979323846,"f":12345678901234567890e-5}')).toEqual({
      a: 0.1,
      b: 1,
      c: 100,
      d: -1.5,
      e: Math.PI,
      f: 123456789012345.67,
    });
  });

  it('leaves a number past a double to checkJsonValue, and does not mistake digits in strings for numbers', () => {
    expect(value('[1e400]')).toEqual([Number.POSITIVE_INFINITY]);
    expect(value('{"s":"0.9999999999999999999","1e-400":"9007199254740993"}')).toEqual({
      s: '0.9999999999999999999',
      '1e-400': '9007199254740993',
    });
  });

  it('refuses a bare number body as well as one inside a document', () => {
    expect(refusal('0.9999999999999999999')).toMatchObject({ code: 'TG_JSON_NUMBER_INVALID', path: '' });
  });
});

describe('parseJsonText: the full scan is skipped only where it would find nothing', () => {
  // String contents and number literals that are hard on the one pass that decides: escaped quotes
  // and backslashes, colons and digits inside strings, keys spelled with escapes, long literals.
  const STRINGS = ['a', 'b', 'a ', '\\u0061', 'k\\\\', 'x\\"y', 'c:', '\\":', '1e5', '9007199254740993', 'é'];
  const NUMBERS = ['0', '-0', '12345', '0.1', '1e5', '-1.5E3'];
  const LONG = ['9007199254740993', '9007199254740992', '0.9999999999999999999', '-123456789012345', '1e-400'];
  const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n');
  const { text } = fc.letrec<{ text: string; leaf: string; array: string; object: string }>((tie) => ({
    text: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('array'), tie('object')),
    leaf: fc.oneof(
      fc.constantFrom(...NUMBERS, ...LONG, 'true', 'null'),
      fc.constantFrom(...STRINGS).map((s) => `"${s}"`),
    ),
    array: fc
      .tuple(fc.array(tie('text'), { maxLength: 4 }), space)
      .map(([items, gap]) => `[${gap}${items.join(`${gap},`)}]`),
    object: fc
      .tuple(fc.array(fc.tuple(fc.constantFrom(...STRINGS), tie('text')), { maxLength: 5 }), space)
      .map(([members, gap]) => `{${members.map(([key, item]) => `"${key}"${gap}:${gap}${item}`).join(',')}${gap}}`),
  }));

  it('refuses a repeated key or a rounded number exactly when the scan finds one', () => {
    fc.assert(
      fc.property(text, (document) => {
        const found = scanJsonText(document);
        const parsed = parseJsonText(document);
        expect(parsed.ok ? null : parsed.problem).toEqual(found);
      }),
      { numRuns: 2_000 },
    );
  });
});
