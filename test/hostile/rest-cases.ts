import type { InjectOptions } from 'fastify';

/** A hostile REST request and what it must get: its documented status and stable code. */
export interface RestCase {
  readonly transport: 'rest';
  readonly name: string;
  readonly request: InjectOptions;
  readonly status: number;
  readonly code: string;
}

/** Bytes written to a real socket (for what Node's HTTP parser refuses before Fastify sees it). */
export interface SocketCase {
  readonly transport: 'socket';
  readonly name: string;
  readonly bytes: string;
  readonly status: number;
  readonly code: string;
  /** The client keeps its side open after the bytes (an unfinished body), rather than ending it. */
  readonly open?: boolean;
}

export const TOKEN = 'hostile-corpus-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const UUID = '00000000-0000-4000-8000-000000000000';
let key = 0;

function rest(name: string, request: InjectOptions, status: number, code: string): RestCase {
  return { transport: 'rest', name, request, status, code };
}
const post = (url: string, payload: string, headers: Record<string, string> = {}): InjectOptions => ({
  method: 'POST',
  url,
  headers: { ...JSON_AUTH, ...headers },
  payload,
});
const put = (url: string, payload: string): InjectOptions => ({ method: 'PUT', url, headers: JSON_AUTH, payload });
const get = (url: string, headers: Record<string, string> = AUTH): InjectOptions => ({ method: 'GET', url, headers });
const charge = (payload: string) =>
  post('/v1/accounts/acct/charges', payload, { 'idempotency-key': `hostile-${key++}` });

const BAD = 'TG_REQUEST_INVALID';
const STRING = 'TG_JSON_STRING_INVALID';
const NUMBER = 'TG_JSON_NUMBER_INVALID';
const DEEP = 'TG_JSON_TOO_DEEP';
const MALFORMED = 'TG_MALFORMED_JSON';

/** Bodies whose shape is wrong for an integer field, and what each must be refused as. */
const NOT_AN_INTEGER: readonly [string, string][] = [
  ['true', BAD],
  ['false', BAD],
  ['"100"', BAD],
  ['"1"', BAD],
  ['""', BAD],
  ['null', BAD],
  ['[]', BAD],
  ['[1]', BAD],
  ['{}', BAD],
  ['1.5', BAD],
  ['0', BAD],
  ['-1', BAD],
  ['1e308', BAD],
  ['-1e308', BAD],
  ['1e400', NUMBER],
  ['-1e400', NUMBER],
  ['"1e2"', BAD],
  ['"0x10"', BAD],
  // A double reads each of these as a whole number the literal is not (or as 0).
  ['0.9999999999999999999', NUMBER],
  ['1.0000000000000001', NUMBER],
  ['4.99999999999999999999e0', NUMBER],
  ['9007199254740993', NUMBER],
  ['-9007199254740993', NUMBER],
  ['123456789012345678901234567890', NUMBER],
  ['1e-400', NUMBER],
  ['-1e-400', NUMBER],
  // Fractions that stay fractions are the schema's to refuse, as 1.5 is.
  ['0.1', BAD],
  ['1.5e0', BAD],
  ['0.99999999999999', BAD],
];

const NOT_UTF8 = 'TG_ENCODING_INVALID';
const DUPLICATE = 'TG_JSON_DUPLICATE_KEY';
/** A task body with these bytes in the middle of a string value. */
const withBytes = (bytes: number[]) =>
  Buffer.concat([Buffer.from('{"tool":"greet","arguments":{"name":"a'), Buffer.from(bytes), Buffer.from('"}}')]);

const restCases: RestCase[] = [
  // Integer fields: no coercion of booleans, strings or null, and ranges are the schema's.
  ...NOT_AN_INTEGER.map(([value, code]) => rest(`charge cents ${value}`, charge(`{"cents":${value}}`), 400, code)),
  rest('charge cents past its maximum', charge('{"cents":100000001}'), 400, BAD),
  rest(
    'task seconds 1e-400 in arguments',
    post('/v1/tasks', '{"tool":"greet","arguments":{"seconds":1e-400}}'),
    400,
    NUMBER,
  ),
  rest(
    'task ttlMs 1000.0000000000000001',
    post('/v1/tasks', '{"tool":"greet","ttlMs":1000.0000000000000001}'),
    400,
    NUMBER,
  ),

  // Keys written twice (JSON.parse keeps the last; I-JSON refuses them), at any depth.
  rest('charge cents twice, the first a boolean', charge('{"cents":true,"cents":5}'), 400, DUPLICATE),
  rest('charge cents twice, the same value', charge('{"cents":5,"cents":5}'), 400, DUPLICATE),
  rest('charge cents twice, once escaped', charge('{"cents":"x","\\u0063ents":5}'), 400, DUPLICATE),
  rest('restock available twice', put('/v1/inventory/sku-h', '{"available":1, "available" :2}'), 400, DUPLICATE),
  rest('task tool twice', post('/v1/tasks', '{"tool":"launch_rockets","tool":"greet"}'), 400, DUPLICATE),
  rest('task argument twice', post('/v1/tasks', '{"tool":"greet","arguments":{"name":5,"name":"x"}}'), 400, DUPLICATE),
  rest(
    'a key twice deep in arguments',
    post('/v1/tasks', '{"tool":"greet","arguments":{"name":"x","a":[1,{"b":[{"c":1,"d":{},"c":2}]}]}}'),
    400,
    DUPLICATE,
  ),

  // Bytes that are not UTF-8, refused rather than stored as U+FFFD; charsets and codings.
  ...(
    [
      ['FF FE', [0xff, 0xfe]],
      ['a lone continuation byte', [0x80]],
      ['overlong NUL (C0 80)', [0xc0, 0x80]],
      ['overlong slash (E0 80 AF)', [0xe0, 0x80, 0xaf]],
      ['a CESU-8 surrogate pair', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]],
      ['a truncated three-byte sequence', [0xe2, 0x82]],
      ['a truncated four-byte sequence', [0xf0, 0x9f, 0x98]],
      ['past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
      ['Latin-1 e-acute', [0xe9]],
    ] as const
  ).map(([name, bytes]) =>
    rest(`body not UTF-8: ${name}`, { ...post('/v1/tasks', ''), payload: withBytes([...bytes]) }, 400, NOT_UTF8),
  ),
  rest(
    'a UTF-16 body',
    { ...post('/v1/tasks', ''), payload: Buffer.from('{"tool":"greet"}', 'utf16le') },
    400,
    MALFORMED,
  ),
  ...['iso-8859-1', 'utf-16', '"UTF-16LE"', 'us-ascii', 'utf8, utf-8'].map((charset) =>
    rest(
      `charset ${charset}`,
      post('/v1/tasks', '{"tool":"greet"}', { 'content-type': `application/json; charset=${charset}` }),
      415,
      'TG_UNSUPPORTED_MEDIA_TYPE',
    ),
  ),
  rest(
    'two charsets that disagree',
    post('/v1/tasks', '{"tool":"greet"}', { 'content-type': 'application/json; charset=utf-8; charset=latin1' }),
    415,
    'TG_UNSUPPORTED_MEDIA_TYPE',
  ),
  ...['gzip', 'deflate', 'br', 'zstd', 'gzip, identity', 'x-unknown'].map((coding) =>
    rest(
      `Content-Encoding ${coding} on a plain body`,
      post('/v1/tasks', '{"tool":"greet"}', { 'content-encoding': coding }),
      415,
      'TG_CONTENT_ENCODING_UNSUPPORTED',
    ),
  ),
  rest(
    'Content-Encoding gzip on a charge',
    post('/v1/accounts/acct/charges', '{"cents":1}', { 'idempotency-key': 'coded', 'content-encoding': 'gzip' }),
    415,
    'TG_CONTENT_ENCODING_UNSUPPORTED',
  ),
  rest('charge with an extra field', charge('{"cents":1,"currency":"EUR"}'), 400, BAD),
  rest('charge with no cents', charge('{}'), 400, BAD),
  rest('charge body an array', charge('[{"cents":1}]'), 400, BAD),
  rest('charge body a JSON string', charge('"cents"'), 400, BAD),
  rest('charge body a number', charge('100'), 400, BAD),
  rest('charge body null', charge('null'), 400, BAD),
  // 0 is a valid stock level.
  ...NOT_AN_INTEGER.filter(([value]) => value !== '0').map(([value, code]) =>
    rest(`restock available ${value}`, put('/v1/inventory/sku-h', `{"available":${value}}`), 400, code),
  ),
  rest('restock available past its maximum', put('/v1/inventory/sku-h', '{"available":2000000001}'), 400, BAD),
  rest('restock with an extra field', put('/v1/inventory/sku-h', '{"available":1,"reserved":0}'), 400, BAD),
  ...[
    ['0', BAD],
    ['"1"', BAD],
    ['true', BAD],
    ['null', BAD],
    ['1.5', BAD],
    ['1000001', BAD],
    ['1e400', NUMBER],
  ].map(([value, code]) =>
    rest(
      `reserve quantity ${value}`,
      post('/v1/inventory/sku-h/reservations', `{"quantity":${value}}`),
      400,
      code as string,
    ),
  ),

  // POST /v1/tasks: shapes.
  rest('task without tool', post('/v1/tasks', '{"arguments":{}}'), 400, BAD),
  rest('task tool a number', post('/v1/tasks', '{"tool":5}'), 400, BAD),
  rest('task tool empty', post('/v1/tasks', '{"tool":""}'), 400, BAD),
  rest('task tool null', post('/v1/tasks', '{"tool":null}'), 400, BAD),
  rest('task tool an array', post('/v1/tasks', '{"tool":["greet"]}'), 400, BAD),
  rest('task tool 129 characters', post('/v1/tasks', JSON.stringify({ tool: 'g'.repeat(129) })), 400, BAD),
  rest('task arguments an array', post('/v1/tasks', '{"tool":"greet","arguments":[]}'), 400, BAD),
  rest('task arguments a string', post('/v1/tasks', '{"tool":"greet","arguments":"name=x"}'), 400, BAD),
  rest('task arguments null', post('/v1/tasks', '{"tool":"greet","arguments":null}'), 400, BAD),
  rest('task arguments a number', post('/v1/tasks', '{"tool":"greet","arguments":1}'), 400, BAD),
  ...['"1000"', '0', '-1', '1.5', '604800001', '1e308', 'true', 'null', '[1000]'].map((value) =>
    rest(
      `task ttlMs ${value}`,
      post('/v1/tasks', `{"tool":"greet","arguments":{"name":"x"},"ttlMs":${value}}`),
      400,
      BAD,
    ),
  ),
  rest('task ttlMs 1e400', post('/v1/tasks', '{"tool":"greet","arguments":{"name":"x"},"ttlMs":1e400}'), 400, NUMBER),
  rest('task with an extra field', post('/v1/tasks', '{"tool":"greet","priority":9}'), 400, BAD),
  rest('task body an array', post('/v1/tasks', '[]'), 400, BAD),
  rest('task body a string', post('/v1/tasks', '"greet"'), 400, BAD),
  rest('task body true', post('/v1/tasks', 'true'), 400, BAD),
  rest('task of an unknown tool', post('/v1/tasks', '{"tool":"launch_rockets"}'), 422, 'TG_TOOL_UNKNOWN'),
  rest(
    'task with arguments of the wrong type',
    post('/v1/tasks', '{"tool":"greet","arguments":{"name":5}}'),
    422,
    'TG_TOOL_ARGUMENTS_INVALID',
  ),
  rest(
    'task with a name past maxLength',
    post('/v1/tasks', JSON.stringify({ tool: 'greet', arguments: { name: 'n'.repeat(201) } })),
    422,
    'TG_TOOL_ARGUMENTS_INVALID',
  ),
  rest(
    'task with an unknown argument',
    post('/v1/tasks', '{"tool":"greet","arguments":{"name":"x","x":1}}'),
    422,
    'TG_TOOL_ARGUMENTS_INVALID',
  ),
  rest(
    'task with a key for a safe tool',
    post('/v1/tasks', '{"tool":"greet","arguments":{"name":"x"}}', { 'idempotency-key': 'k' }),
    400,
    'TG_IDEMPOTENCY_KEY_INVALID',
  ),
  rest(
    'charge task without a key',
    post('/v1/tasks', '{"tool":"charge_account","arguments":{"account":"a","cents":1}}'),
    400,
    'TG_IDEMPOTENCY_KEY_MISSING',
  ),
  rest(
    'header and argument keys disagree',
    post('/v1/tasks', '{"tool":"charge_account","arguments":{"account":"a","cents":1,"idempotencyKey":"a"}}', {
      'idempotency-key': 'b',
    }),
    400,
    'TG_IDEMPOTENCY_KEY_INVALID',
  ),
  rest(
    'argument key not a string',
    post('/v1/tasks', '{"tool":"charge_account","arguments":{"account":"a","cents":1,"idempotencyKey":7}}'),
    422,
    'TG_TOOL_ARGUMENTS_INVALID',
  ),
  rest(
    'argument key empty',
    post('/v1/tasks', '{"tool":"reserve_inventory","arguments":{"sku":"a","quantity":1,"idempotencyKey":""}}'),
    422,
    'TG_TOOL_ARGUMENTS_INVALID',
  ),
  rest(
    'empty Idempotency-Key header',
    post('/v1/accounts/acct/charges', '{"cents":1}', { 'idempotency-key': '' }),
    400,
    BAD,
  ),
  rest(
    'Idempotency-Key header of 256 characters',
    post('/v1/accounts/acct/charges', '{"cents":1}', { 'idempotency-key': 'k'.repeat(256) }),
    400,
    BAD,
  ),
  rest(
    'charge without Idempotency-Key',
    post('/v1/accounts/acct/charges', '{"cents":1}'),
    400,
    'TG_IDEMPOTENCY_KEY_MISSING',
  ),

  // Strings Postgres cannot store, numbers a double cannot hold, and nesting, in every place.
  ...[
    ['NUL in an argument', '{"tool":"greet","arguments":{"name":"a\\u0000b"}}', STRING],
    ['NUL alone as an argument', '{"tool":"greet","arguments":{"name":"\\u0000"}}', STRING],
    ['NUL in an argument key', '{"tool":"greet","arguments":{"na\\u0000me":"x"}}', STRING],
    ['NUL in the tool name', '{"tool":"greet\\u0000"}', STRING],
    ['a lone high surrogate', '{"tool":"greet","arguments":{"name":"\\ud800"}}', STRING],
    ['a lone low surrogate', '{"tool":"greet","arguments":{"name":"x\\udfff"}}', STRING],
    ['surrogates in the wrong order', '{"tool":"greet","arguments":{"name":"\\udc00\\ud800"}}', STRING],
    ['a high surrogate at the end', '{"tool":"greet","arguments":{"name":"ok\\ud83d"}}', STRING],
    ['a lone surrogate in a key', '{"tool":"greet","arguments":{"\\ud800":"x"}}', STRING],
    ['a lone surrogate in the tool name', '{"tool":"\\udbff"}', STRING],
    ['NUL deep inside arguments', '{"tool":"greet","arguments":{"name":"x","a":[{"b":["\\u0000"]}]}}', STRING],
    ['NUL in a cancel reason', '{"reason":"late\\u0000"}', STRING],
    ['1e400 in arguments', '{"tool":"greet","arguments":{"name":"x","n":1e400}}', NUMBER],
    ['-1e400 deep in arguments', '{"tool":"greet","arguments":{"name":"x","n":[[-1e400]]}}', NUMBER],
    ['arrays 65 deep', `{"tool":"greet","arguments":{"d":${deepArrays(63)}}}`, DEEP],
    ['objects 65 deep', `{"tool":"greet","arguments":${deepObjects(64)}}`, DEEP],
    ['arrays 1,000 deep', `{"tool":"greet","arguments":{"d":${deepArrays(1_000)}}}`, DEEP],
    ['arrays 100,000 deep', `{"tool":"greet","arguments":{"d":${deepArrays(100_000)}}}`, DEEP],
    ['objects 10,000 deep', `{"tool":"greet","arguments":${deepObjects(10_000)}}`, DEEP],
    ['a deep body that is not an object', deepArrays(500), DEEP],
  ].map(([name, payload, code]) =>
    rest(
      name as string,
      post(name === 'NUL in a cancel reason' ? `/v1/tasks/${UUID}/cancel` : '/v1/tasks', payload as string),
      400,
      code as string,
    ),
  ),
  rest('NUL in a charge body', charge('{"cents":1,"x":"\\u0000"}'), 400, STRING),
  rest('deep restock body', put('/v1/inventory/sku-h', `{"available":${deepArrays(70)}}`), 400, DEEP),
  rest(
    'surrogate in a reservation body',
    post('/v1/inventory/sku-h/reservations', '{"quantity":1,"\\udc00":1}'),
    400,
    STRING,
  ),

  // Bodies that are not JSON, or not JSON the parser accepts.
  ...[
    ['an unterminated object', '{"tool":"greet",'],
    ['an empty body', ''],
    ['whitespace only', '   '],
    ['single quotes', "{'tool':'greet'}"],
    ['a trailing comma', '{"tool":"greet",}'],
    ['a second closing brace', '{"tool":"greet"}}'],
    ['a NaN literal', '{"tool":"greet","ttlMs":NaN}'],
    ['an Infinity literal', '{"tool":"greet","ttlMs":Infinity}'],
    ['a raw control character in a string', '{"tool":"gr\u0001eet"}'],
    ['a raw NUL byte in a string', '{"tool":"gr\u0000eet"}'],
    ['a __proto__ key', '{"tool":"greet","__proto__":{"admin":true}}'],
    ['a __proto__ key spelled with escapes', '{"tool":"greet","\\u005f_proto\\u005F_":{"admin":true}}'],
    ['a constructor.prototype key', '{"tool":"greet","constructor":{"prototype":{"admin":true}}}'],
    ['an unquoted key', '{tool:"greet"}'],
    ['a bad escape', '{"tool":"\\x41"}'],
    ['a truncated unicode escape', '{"tool":"\\u12"}'],
    ['JavaScript, not JSON', '({"tool":"greet"})'],
  ].map(([name, payload]) => rest(`body: ${name}`, post('/v1/tasks', payload as string), 400, MALFORMED)),
  rest(
    'body too large',
    post('/v1/tasks', JSON.stringify({ tool: 'greet', arguments: { name: 'x'.repeat(1_100_000) } })),
    413,
    'TG_BODY_TOO_LARGE',
  ),
  rest('charge body too large', charge(`{"cents":1,"pad":"${'x'.repeat(1_100_000)}"}`), 413, 'TG_BODY_TOO_LARGE'),

  // Content types: JSON only.
  ...[
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'text/json',
  ].map((type) =>
    rest(
      `content-type ${type}`,
      post('/v1/tasks', '{"tool":"greet"}', { 'content-type': type }),
      415,
      'TG_UNSUPPORTED_MEDIA_TYPE',
    ),
  ),
  rest(
    'a body without a content-type',
    { method: 'POST', url: '/v1/tasks', headers: AUTH, payload: '{"tool":"greet"}' },
    415,
    'TG_UNSUPPORTED_MEDIA_TYPE',
  ),

  // Query strings are text, parsed explicitly.
  ...[
    '1e400',
    '1.0',
    'true',
    '',
    '+5',
    '0x10',
    '05',
    ' 5',
    '1e2',
    '1001',
    '0',
    '-1',
    'NaN',
    'Infinity',
    '1,2',
    '١',
  ].map((limit) => rest(`limit=${limit}`, get(`/v1/tasks?limit=${encodeURIComponent(limit)}`), 400, BAD)),
  rest('limit given twice', get('/v1/tasks?limit=5&limit=6'), 400, BAD),
  rest('limit as an array', get('/v1/tasks?limit[]=5'), 400, BAD),
  ...['paused', '', 'WORKING', 'working,failed'].map((status) =>
    rest(`status=${status}`, get(`/v1/tasks?status=${encodeURIComponent(status)}`), 400, BAD),
  ),
  rest('status given twice', get('/v1/tasks?status=working&status=failed'), 400, BAD),
  rest('an unknown query parameter', get('/v1/tasks?sort=asc'), 400, BAD),
  rest('NUL in a query value', get('/v1/tasks?status=%00'), 400, STRING),
  rest('an empty cursor', get('/v1/tasks?cursor='), 400, BAD),
  rest('a cursor past 512 characters', get(`/v1/tasks?cursor=${'A'.repeat(513)}`), 400, BAD),
  rest('NUL in a cursor', get('/v1/tasks?cursor=ab%00cd'), 400, STRING),
  ...[
    ['not base64', '!!!!'],
    ['base64 of text', Buffer.from('not a cursor').toString('base64url')],
    ['base64 of an object', cursorOf({ createdAt: '2026-01-01 00:00:00+00', id: UUID })],
    ['base64 of one element', cursorOf(['2026-01-01 00:00:00+00'])],
    ['base64 of three elements', cursorOf(['2026-01-01 00:00:00+00', UUID, 1])],
    ['base64 of numbers', cursorOf([1, 2])],
    ['base64 of null', cursorOf(null)],
    ['a bad id', cursorOf(['2026-01-01 00:00:00+00', 'not-a-uuid'])],
    ['an ISO timestamp', cursorOf(['2026-01-01T00:00:00Z', UUID])],
    ['month 13, day 45, 99:99:99', cursorOf(['2026-13-45 99:99:99+00', UUID])],
    ['29 February of a common year', cursorOf(['2026-02-29 00:00:00+00', UUID])],
    ['29 February 1900', cursorOf(['1900-02-29 00:00:00+00', UUID])],
    ['31 April', cursorOf(['2026-04-31 00:00:00+00', UUID])],
    ['year zero', cursorOf(['0000-01-01 00:00:00+00', UUID])],
    ['hour 24', cursorOf(['2026-01-01 24:00:00+00', UUID])],
    ['a leap second', cursorOf(['2026-06-30 23:59:60+00', UUID])],
    ['an offset of 16 hours', cursorOf(['2026-01-01 00:00:00+16', UUID])],
    ['offset minutes 60', cursorOf(['2026-01-01 00:00:00+05:60', UUID])],
    ['seven fractional digits', cursorOf(['2026-01-01 00:00:00.1234567+00', UUID])],
    ['a time zone name', cursorOf(['2026-01-01 00:00:00 UTC', UUID])],
    ['infinity', cursorOf(['infinity', UUID])],
    ['a NUL in the timestamp', cursorOf(['2026-01-01 00:00:00+00\u0000', UUID])],
  ].map(([name, cursor]) => rest(`cursor: ${name}`, get(`/v1/tasks?cursor=${cursor}`), 400, 'TG_CURSOR_INVALID')),

  // Path parameters and URLs.
  rest('NUL task id', get('/v1/tasks/%00'), 400, STRING),
  rest('NUL in a SKU', get('/v1/inventory/a%00b'), 400, STRING),
  rest('NUL in a restocked SKU', put('/v1/inventory/a%00', '{"available":1}'), 400, STRING),
  rest(
    'NUL in an account',
    post('/v1/accounts/a%00/charges', '{"cents":1}', { 'idempotency-key': 'nul-account' }),
    400,
    STRING,
  ),
  rest('NUL in a key lookup', get('/v1/idempotency-keys/%00'), 400, STRING),
  rest('a task id past maxParamLength', get(`/v1/tasks/${'a'.repeat(101)}`), 414, 'TG_URI_TOO_LONG'),
  rest('a SKU past maxParamLength', get(`/v1/inventory/${'s'.repeat(200)}`), 414, 'TG_URI_TOO_LONG'),
  rest(
    'an account past maxParamLength',
    post(`/v1/accounts/${'a'.repeat(101)}/charges`, '{"cents":1}'),
    414,
    'TG_URI_TOO_LONG',
  ),
  rest('a truncated percent escape', get('/v1/tasks/%E0%A4%A'), 400, 'TG_URL_INVALID'),
  rest('a percent escape that is not hex', get('/v1/inventory/%ZZ'), 400, 'TG_URL_INVALID'),
  rest('an encoded lone surrogate', get('/v1/inventory/%ED%A0%80'), 400, 'TG_URL_INVALID'),
  rest('overlong UTF-8', get('/v1/inventory/%C0%AF'), 400, 'TG_URL_INVALID'),
  rest('a lone continuation byte', get('/v1/tasks/%80'), 400, 'TG_URL_INVALID'),
  rest('a task id that is not a UUID', get('/v1/tasks/not-a-uuid'), 404, 'TG_TASK_NOT_FOUND'),
  rest('an unknown task', get(`/v1/tasks/${UUID}`), 404, 'TG_TASK_NOT_FOUND'),
  rest('cancel an unknown task', post(`/v1/tasks/${UUID}/cancel`, '{}'), 404, 'TG_TASK_NOT_FOUND'),
  rest('an unknown SKU', get('/v1/inventory/no-such-sku'), 404, 'LEDGER_SKU_NOT_FOUND'),
  rest('an unknown key', get('/v1/idempotency-keys/no-such-key'), 404, 'TG_IDEMPOTENCY_KEY_NOT_FOUND'),
  rest('an unknown route', get('/v2/tasks'), 404, 'TG_NOT_FOUND'),
  rest('a method the route lacks', { method: 'DELETE', url: '/v1/tasks', headers: AUTH }, 404, 'TG_NOT_FOUND'),
  rest(
    'PATCH a task',
    { method: 'PATCH', url: `/v1/tasks/${UUID}`, headers: JSON_AUTH, payload: '{}' },
    404,
    'TG_NOT_FOUND',
  ),
  rest('a path with a dot segment', get('/v1/tasks/../accounts'), 404, 'TG_NOT_FOUND'),

  // Authentication, before anything else is looked at.
  ...[
    ['no Authorization', {}],
    ['Basic credentials', { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }],
    ['a wrong token', { authorization: 'Bearer wrong-token-000000000000' }],
    ['Bearer without a token', { authorization: 'Bearer' }],
    ['two tokens', { authorization: `Bearer ${TOKEN} ${TOKEN}` }],
  ].flatMap(([name, headers]) => [
    rest(
      `${name}: create`,
      {
        method: 'POST',
        url: '/v1/tasks',
        headers: { 'content-type': 'application/json', ...(headers as object) },
        payload: '{"tool":5}',
      },
      401,
      'TG_UNAUTHORIZED',
    ),
    rest(`${name}: list`, get('/v1/tasks?limit=1e400', headers as Record<string, string>), 401, 'TG_UNAUTHORIZED'),
    rest(
      `${name}: charge`,
      {
        method: 'POST',
        url: '/v1/accounts/a/charges',
        headers: { 'content-type': 'text/plain', ...(headers as object) },
        payload: 'x',
      },
      401,
      'TG_UNAUTHORIZED',
    ),
  ]),
  rest(
    'no Authorization, a body too large',
    {
      method: 'POST',
      url: '/v1/tasks',
      headers: { 'content-type': 'application/json' },
      payload: 'x'.repeat(1_200_000),
    },
    401,
    'TG_UNAUTHORIZED',
  ),
  rest('no Authorization, NUL in a path', get('/v1/inventory/%00', {}), 401, 'TG_UNAUTHORIZED'),

  // DNS rebinding: the server under test is bound to loopback.
  ...[
    'evil.example',
    'evil.example:8080',
    '127.0.0.1.evil.example',
    'localhost.evil.example',
    '10.0.0.1',
    '[::2]:8080',
  ].map((host) =>
    rest(
      `Host ${host}`,
      post('/v1/accounts/acct/charges', '{"cents":1}', { host, 'idempotency-key': `host-${host}` }),
      403,
      'TG_HOST_NOT_ALLOWED',
    ),
  ),
  rest('a foreign Host on /healthz', get('/healthz', { host: 'evil.example' }), 403, 'TG_HOST_NOT_ALLOWED'),
  rest('a foreign Host on an unknown path', get('/nothing', { host: 'evil.example' }), 403, 'TG_HOST_NOT_ALLOWED'),
  ...['http://evil.example', 'null', 'file://', 'http://localhost.evil.example', 'https://127.0.0.1.evil.example'].map(
    (origin) =>
      rest(
        `Origin ${origin}`,
        { method: 'PUT', url: '/v1/inventory/sku-h', headers: { ...JSON_AUTH, origin }, payload: '{"available":1}' },
        403,
        'TG_ORIGIN_NOT_ALLOWED',
      ),
  ),
];

const socketCases: SocketCase[] = [
  [
    'headers past 16 KiB',
    `GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
    431,
    'TG_HEADERS_TOO_LARGE',
  ],
  [
    'a request line past 16 KiB',
    `GET /v1/tasks?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    431,
    'TG_HEADERS_TOO_LARGE',
  ],
  ['bytes that are not HTTP', 'HELLO\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  [
    'a Content-Length that is not a number',
    'POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n',
    400,
    'TG_HTTP_MALFORMED',
  ],
  [
    'two Content-Lengths',
    'POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    400,
    'TG_HTTP_MALFORMED',
  ],
  [
    'a bad chunk size',
    'POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    400,
    'TG_HTTP_MALFORMED',
  ],
  ['a space in the request target', 'GET /v1/ta sks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  [
    'a NUL in a header value',
    'GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: a\u0000b\r\n\r\n',
    400,
    'TG_HTTP_MALFORMED',
  ],
  ['a header without a colon', 'GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nBroken\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  ['an empty Host', 'GET /v1/tasks HTTP/1.1\r\nHost:\r\n\r\n', 403, 'TG_HOST_NOT_ALLOWED'],
  ['no Host (HTTP/1.0)', 'GET /healthz HTTP/1.0\r\n\r\n', 403, 'TG_HOST_NOT_ALLOWED'],
  [
    'a foreign Host over the wire',
    `POST /v1/accounts/acct/charges HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer ${TOKEN}\r\nIdempotency-Key: wire-1\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"cents":1}`,
    403,
    'TG_HOST_NOT_ALLOWED',
  ],
  ['an unknown HTTP version', 'GET /v1/tasks HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  // RFC 9112 section 3.2: 400 for HTTP/1.1 without Host, or with two Host lines.
  ['no Host (HTTP/1.1)', 'GET /v1/tasks HTTP/1.1\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  ['no Host on an unknown path', 'GET /nothing HTTP/1.1\r\nAccept: */*\r\n\r\n', 400, 'TG_HTTP_MALFORMED'],
  [
    'two Host headers, the first loopback',
    'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n',
    400,
    'TG_HTTP_MALFORMED',
  ],
  // Node keeps the first Authorization line and drops the rest: two credentials are ambiguous.
  [
    'two Authorization headers, the first valid',
    `POST /v1/accounts/acct/charges HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer other-token-0000000000000\r\nIdempotency-Key: wire-2\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"cents":1}`,
    400,
    'TG_HEADER_REPEATED',
  ],
  [
    'two Authorization headers, both valid',
    `POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nauthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"tool":"greet"}`,
    400,
    'TG_HEADER_REPEATED',
  ],
].map(([name, bytes, status, code]) => ({
  transport: 'socket' as const,
  name: name as string,
  bytes: bytes as string,
  status: status as number,
  code: code as string,
}));

// Bodies that never finish, on a socket the client keeps open: the server under test bounds a
// request's arrival (TASKGATE_REQUEST_TIMEOUT_MS) to a short time, so each is answered 408.
const WIRE_HEAD = `Host: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n`;
const unfinishedCases: SocketCase[] = [
  ['a body of 10 of its 100 bytes', `POST /v1/tasks HTTP/1.1\r\n${WIRE_HEAD}Content-Length: 100\r\n\r\n{"tool":"g`],
  [
    'a chunked body never ended',
    `POST /v1/tasks HTTP/1.1\r\n${WIRE_HEAD}Transfer-Encoding: chunked\r\n\r\n5\r\n{"too\r\n`,
  ],
  ['headers never ended', `POST /v1/tasks HTTP/1.1\r\n${WIRE_HEAD}Content-Length: 2\r\n`],
  [
    'an MCP body of 10 of its 100 bytes',
    `POST /mcp HTTP/1.1\r\n${WIRE_HEAD}Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`,
  ],
].map(([name, bytes]) => ({
  transport: 'socket' as const,
  name: `unfinished: ${name}`,
  bytes: bytes as string,
  status: 408,
  code: 'TG_REQUEST_TIMEOUT',
  open: true,
}));

export const REST_CASES: readonly (RestCase | SocketCase)[] = [...restCases, ...socketCases, ...unfinishedCases];
