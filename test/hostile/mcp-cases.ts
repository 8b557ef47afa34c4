import type { InjectOptions } from 'fastify';
import { TOKEN } from './rest-cases.ts';

/** A hostile POST /mcp (or other method on /mcp) and the answer it must get. */
export interface McpCase {
  readonly transport: 'mcp';
  readonly name: string;
  readonly request: InjectOptions;
  readonly status: number;
  readonly rpc: number;
  /** `error.data.code`, where the answer carries a Taskgate code. */
  readonly code?: string;
  /** The id the error must echo. */
  readonly id?: string | number | null;
}

/** A hostile line on stdin and the answer it must get, or null for none (a notification, a response). */
export interface StdioCase {
  readonly transport: 'stdio';
  readonly name: string;
  /** One line; bytes for what a string cannot hold (invalid UTF-8). */
  readonly line: string | Buffer;
  readonly answer: { readonly id: string | number | null; readonly rpc: number; readonly code?: string } | null;
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};
const TASKS_META = {
  ...META,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  authorization: `Bearer ${TOKEN}`,
};
const { authorization: _token, ...UNAUTHENTICATED } = HEADERS;
const UUID = '00000000-0000-4000-8000-000000000000';
const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

/** A 2026-07-28 request with its mirrored headers; `raw` replaces the params' JSON text when given. */
function modern(method: string, params: Record<string, unknown>, id: string | number, meta: object = META) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  return {
    headers: { ...HEADERS, 'mcp-method': method, ...(typeof name === 'string' ? { 'mcp-name': name } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
  };
}

function mcp(
  name: string,
  request: { headers?: Record<string, string>; body: string; method?: InjectOptions['method'] },
  status: number,
  rpc: number,
  expected: { code?: string; id?: string | number | null } = {},
): McpCase {
  return {
    transport: 'mcp',
    name,
    request: {
      method: request.method ?? 'POST',
      url: '/mcp',
      headers: request.headers ?? HEADERS,
      payload: request.body,
    },
    status,
    rpc,
    ...expected,
  };
}

/** Raw messages whose content the decoded-input check refuses (-32602), as text JSON.stringify could not write. */
const unstorable = (id: number): [string, string, string][] => [
  [
    'NUL in an argument',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"name":"a\\u0000"},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'NUL in an argument key',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"\\u0000":"x"},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'NUL in the tool name',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"gr\\u0000eet","arguments":{},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'a lone surrogate in an argument',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"name":"\\ud800"},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'a lone surrogate in a key',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"\\udfff":1},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'a lone surrogate in the method',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/\\ud800","params":{"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'NUL in a task id',
    `{"jsonrpc":"2.0","id":${id},"method":"tasks/get","params":{"taskId":"\\u0000","_meta":${JSON.stringify(TASKS_META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    'NUL in _meta',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":{"_meta":{"x":"\\u0000"}}}`,
    'TG_JSON_STRING_INVALID',
  ],
  [
    '1e400 in arguments',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":1e400},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_NUMBER_INVALID',
  ],
  [
    '-1e400 as a progress token',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"},"_meta":{"progressToken":-1e400}}}`,
    'TG_JSON_NUMBER_INVALID',
  ],
  [
    'inputResponses 10,000 deep',
    `{"jsonrpc":"2.0","id":${id},"method":"tasks/update","params":{"taskId":"${UUID}","inputResponses":{"k":${deepArrays(10_000)}},"_meta":${JSON.stringify(TASKS_META)}}}`,
    'TG_JSON_TOO_DEEP',
  ],
  [
    'arguments 65 deep',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"d":${deepArrays(62)}},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_TOO_DEEP',
  ],
  [
    'arguments 100,000 deep',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":{"d":${deepArrays(100_000)}},"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_TOO_DEEP',
  ],
  [
    '_meta 1,000 deep',
    `{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":{"_meta":{"x":${deepArrays(1_000)}}}}`,
    'TG_JSON_TOO_DEEP',
  ],
  [
    'a string id with NUL',
    `{"jsonrpc":"2.0","id":"a\\u0000","method":"tools/list","params":{"_meta":${JSON.stringify(META)}}}`,
    'TG_JSON_STRING_INVALID',
  ],
];

/** JSON that is not a JSON-RPC message (-32600), with the id the error must echo. */
const notJsonRpc: [string, string, string | number | null][] = [
  ['an array (a batch)', '[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', null],
  ['an empty batch', '[]', null],
  ['a number', '1', null],
  ['a string', '"tools/list"', null],
  ['null', 'null', null],
  ['true', 'true', null],
  ['an empty object', '{}', null],
  ['no jsonrpc', '{"id":21,"method":"tools/list"}', 21],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":22,"method":"tools/list"}', 22],
  ['jsonrpc the number 2', '{"jsonrpc":2,"id":23,"method":"tools/list"}', 23],
  ['no method', '{"jsonrpc":"2.0","id":24}', 24],
  ['an empty method', '{"jsonrpc":"2.0","id":25,"method":""}', 25],
  ['a numeric method', '{"jsonrpc":"2.0","id":26,"method":5}', 26],
  ['params an array', '{"jsonrpc":"2.0","id":27,"method":"tools/list","params":[]}', 27],
  ['params a string', '{"jsonrpc":"2.0","id":28,"method":"tools/list","params":"x"}', 28],
  ['params null', '{"jsonrpc":"2.0","id":29,"method":"tools/list","params":null}', 29],
  ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', null],
  ['a null id', '{"jsonrpc":"2.0","id":null,"method":"tools/list"}', null],
  ['an object id', '{"jsonrpc":"2.0","id":{},"method":"tools/list"}', null],
  ['a boolean id', '{"jsonrpc":"2.0","id":true,"method":"tools/list"}', null],
  ['both a method and a result', '{"jsonrpc":"2.0","id":30,"method":"tools/list","result":{}}', 30],
];

/** Messages JSON.parse reads as another: a key twice (-32700), a number rounded (-32602); id null, as not read. */
const misread = (id: number): [string, string, number, string][] => {
  const meta = JSON.stringify(META);
  const call = (args: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"greet","arguments":${args},"_meta":${meta}}}`;
  return [
    ['an argument twice', call('{"name":5,"name":"x"}'), -32700, 'TG_JSON_DUPLICATE_KEY'],
    ['an argument twice, once escaped', call('{"name":"x","\\u006eame":"y"}'), -32700, 'TG_JSON_DUPLICATE_KEY'],
    [
      'the method twice',
      `{"jsonrpc":"2.0","id":${id},"method":"tools/list","method":"ping","params":{"_meta":${meta}}}`,
      -32700,
      'TG_JSON_DUPLICATE_KEY',
    ],
    [
      'a key twice in _meta',
      call('{"name":"x"}').replace('"_meta":{', '"_meta":{"a":1,"a":2,'),
      -32700,
      'TG_JSON_DUPLICATE_KEY',
    ],
    ['a fraction rounded to 1', call('{"name":"x","n":0.9999999999999999999}'), -32602, 'TG_JSON_NUMBER_INVALID'],
    ['1.0000000000000001', call('{"name":"x","n":1.0000000000000001}'), -32602, 'TG_JSON_NUMBER_INVALID'],
    ['1e-400', call('{"name":"x","seconds":1e-400}'), -32602, 'TG_JSON_NUMBER_INVALID'],
    [
      'an id past 2^53',
      `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list","params":{"_meta":${meta}}}`,
      -32602,
      'TG_JSON_NUMBER_INVALID',
    ],
  ];
};

/** Text that is not JSON (-32700). */
const notJson: [string, string][] = [
  ['an unterminated object', '{"jsonrpc":"2.0","id":1,"method":'],
  ['single quotes', "{'jsonrpc':'2.0'}"],
  ['a trailing comma', '{"jsonrpc":"2.0","id":1,"method":"ping",}'],
  ['a NaN literal', '{"jsonrpc":"2.0","id":NaN,"method":"ping"}'],
  ['a raw NUL byte', '{"jsonrpc":"2.0","id":1,"method":"pi\u0000ng"}'],
  ['garbage', 'hello'],
  ['a bad escape', '{"jsonrpc":"2.0","id":1,"method":"\\q"}'],
];

const mcpCases: McpCase[] = [
  ...unstorable(1).map(([name, body, code]) =>
    mcp(`unstorable: ${name}`, { body }, 400, -32602, { code, id: name.startsWith('a string id') ? 'a\u0000' : 1 }),
  ),
  ...notJsonRpc.map(([name, body, id]) => mcp(`not JSON-RPC: ${name}`, { body }, 400, -32600, { id })),
  ...notJson.map(([name, body]) =>
    mcp(`not JSON: ${name}`, { body }, 400, -32700, { code: 'TG_MALFORMED_JSON', id: null }),
  ),
  mcp('an empty body', { body: '' }, 400, -32700, { code: 'TG_MALFORMED_JSON', id: null }),
  ...misread(109).map(([name, body, rpc, code]) => mcp(`misread: ${name}`, { body }, 400, rpc, { code, id: null })),
  ...(
    [
      ['FF FE', [0xff, 0xfe]],
      ['overlong C0 80', [0xc0, 0x80]],
      ['a CESU-8 surrogate', [0xed, 0xa0, 0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
    ] as const
  ).map(
    ([name, bytes]): McpCase => ({
      ...mcp(`not UTF-8: ${name}`, { body: '' }, 400, -32700, { code: 'TG_ENCODING_INVALID', id: null }),
      request: {
        method: 'POST',
        url: '/mcp',
        headers: { ...HEADERS, 'mcp-method': 'tools/call', 'mcp-name': 'greet' },
        payload: Buffer.concat([
          Buffer.from(`{"jsonrpc":"2.0","id":110,"method":"tools/call","params":{"name":"greet","arguments":{"name":"`),
          Buffer.from(bytes),
          Buffer.from(`"},"_meta":${JSON.stringify(META)}}}`),
        ]),
      },
    }),
  ),
  ...['iso-8859-1', 'utf-16'].map((charset) =>
    mcp(
      `charset ${charset}`,
      {
        headers: { ...HEADERS, 'content-type': `application/json; charset=${charset}` },
        body: '{"jsonrpc":"2.0","id":111,"method":"ping"}',
      },
      415,
      -32600,
      { code: 'TG_UNSUPPORTED_MEDIA_TYPE' },
    ),
  ),
  mcp(
    'Content-Encoding gzip on a plain body',
    { headers: { ...HEADERS, 'content-encoding': 'gzip' }, body: '{"jsonrpc":"2.0","id":112,"method":"ping"}' },
    415,
    -32600,
    { code: 'TG_CONTENT_ENCODING_UNSUPPORTED' },
  ),
  mcp('a __proto__ key', { body: '{"jsonrpc":"2.0","id":1,"method":"tools/list","__proto__":{"x":1}}' }, 400, -32700, {
    code: 'TG_MALFORMED_JSON',
  }),
  mcp('a response, not a request', { body: '{"jsonrpc":"2.0","id":31,"result":{}}' }, 400, -32600, { id: 31 }),
  mcp(
    'a body over 1 MiB',
    { body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"${'x'.repeat(1_100_000)}"}}` },
    413,
    -32600,
    { code: 'TG_BODY_TOO_LARGE', id: null },
  ),
  mcp('text/plain', { headers: { ...HEADERS, 'content-type': 'text/plain' }, body: '{}' }, 415, -32600, {
    code: 'TG_UNSUPPORTED_MEDIA_TYPE',
  }),
  mcp(
    'form encoded',
    { headers: { ...HEADERS, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' },
    415,
    -32600,
    { code: 'TG_UNSUPPORTED_MEDIA_TYPE' },
  ),
  mcp(
    'no content-type',
    { headers: { accept: HEADERS.accept, authorization: HEADERS.authorization }, body: '{}' },
    415,
    -32600,
    { code: 'TG_UNSUPPORTED_MEDIA_TYPE' },
  ),
  mcp(
    'Accept without text/event-stream',
    { headers: { ...HEADERS, accept: 'application/json' }, body: '{}' },
    406,
    -32600,
  ),
  mcp(
    'Accept without application/json',
    { headers: { ...HEADERS, accept: 'text/event-stream' }, body: '{}' },
    406,
    -32600,
  ),
  mcp(
    'no Accept',
    { headers: { 'content-type': 'application/json', authorization: HEADERS.authorization }, body: '{}' },
    406,
    -32600,
  ),
  mcp('no Authorization', { headers: { ...HEADERS, authorization: '' }, body: '{"jsonrpc":"2.0"' }, 401, -32600, {
    code: 'TG_UNAUTHORIZED',
  }),
  mcp(
    'a wrong token, a body too large',
    { headers: { ...HEADERS, authorization: 'Bearer nope-nope-nope-nope-nope' }, body: 'x'.repeat(1_200_000) },
    401,
    -32600,
    { code: 'TG_UNAUTHORIZED' },
  ),
  mcp('a foreign Host', { headers: { ...HEADERS, host: 'evil.example' }, body: '{}' }, 403, -32600, {
    code: 'TG_HOST_NOT_ALLOWED',
  }),
  mcp('a foreign Origin', { headers: { ...HEADERS, origin: 'http://evil.example' }, body: '{}' }, 403, -32600, {
    code: 'TG_ORIGIN_NOT_ALLOWED',
  }),
  mcp('Origin null', { headers: { ...HEADERS, origin: 'null' }, body: '{}' }, 403, -32600, {
    code: 'TG_ORIGIN_NOT_ALLOWED',
  }),
  mcp('GET', { method: 'GET', headers: { authorization: HEADERS.authorization }, body: '' }, 405, -32600),
  mcp('PUT', { method: 'PUT', headers: HEADERS, body: '{}' }, 405, -32600),
  mcp('PATCH', { method: 'PATCH', headers: HEADERS, body: '{}' }, 405, -32600),
  mcp('OPTIONS', { method: 'OPTIONS', headers: { authorization: HEADERS.authorization }, body: '' }, 405, -32600),

  // Headers that disagree with the body, and the per-request _meta.
  (() => {
    const { headers, body } = modern('tools/list', {}, 40, {
      ...META,
      'io.modelcontextprotocol/protocolVersion': '2099-01-01',
    });
    return mcp(
      'an unsupported protocol version',
      { headers: { ...headers, 'mcp-protocol-version': '2099-01-01' }, body },
      400,
      -32022,
      { id: 40 },
    );
  })(),
  (() => {
    const { headers, body } = modern('tools/list', {}, 41);
    return mcp(
      'Mcp-Method disagrees with the body',
      { headers: { ...headers, 'mcp-method': 'tools/call' }, body },
      400,
      -32020,
      { id: 41 },
    );
  })(),
  (() => {
    const { headers, body } = modern('tools/call', { name: 'greet', arguments: { name: 'x' } }, 42);
    return mcp(
      'Mcp-Name disagrees with the body',
      { headers: { ...headers, 'mcp-name': 'slow_compute' }, body },
      400,
      -32020,
      { id: 42 },
    );
  })(),
  (() => {
    const { headers, body } = modern('tools/list', {}, 39);
    return mcp(
      'the protocol version header disagrees with _meta',
      { headers: { ...headers, 'mcp-protocol-version': '2099-01-01' }, body },
      400,
      -32020,
      { id: 39 },
    );
  })(),
  (() => {
    const { headers, body } = modern('tools/list', {}, 43);
    const { 'mcp-method': _omitted, ...rest } = headers;
    return mcp('no Mcp-Method', { headers: rest, body }, 400, -32020, { id: 43 });
  })(),
  mcp(
    'no _meta fields',
    {
      headers: { ...HEADERS, 'mcp-method': 'tools/list' },
      body: '{"jsonrpc":"2.0","id":44,"method":"tools/list","params":{}}',
    },
    400,
    -32602,
    { id: 44 },
  ),
  (() => {
    const { headers, body } = modern('widgets/list', {}, 45);
    return mcp('an unknown method', { headers, body }, 404, -32601, { id: 45 });
  })(),
  ...[
    // Without a string name there is no Mcp-Name to mirror: the header check answers first.
    ['no name', { arguments: {} }, 400, -32020],
    ['name a number', { name: 5 }, 400, -32020],
    ['an unknown tool', { name: 'launch_rockets', arguments: {} }, 200, -32602],
    ['arguments an array', { name: 'greet', arguments: [] }, 200, -32602],
    ['arguments of the wrong type', { name: 'greet', arguments: { name: 5 } }, 200, -32602],
    ['a charge without a key', { name: 'charge_account', arguments: { account: 'a', cents: 1 } }, 200, -32602],
    [
      'a charge of true cents',
      { name: 'charge_account', arguments: { account: 'a', cents: true, idempotencyKey: 'k' } },
      200,
      -32602,
    ],
    ['a key for a safe tool', { name: 'greet', arguments: { name: 'x', idempotencyKey: 'k' } }, 200, -32602],
    ['a task-only tool without the extension', { name: 'failing_job', arguments: {} }, 400, -32021],
  ].map(([name, params, status, rpc], index) => {
    const { headers, body } = modern('tools/call', params as Record<string, unknown>, 50 + index);
    return mcp(`tools/call: ${name}`, { headers, body }, status as number, rpc as number, { id: 50 + index });
  }),
  ...[
    ['tasks/get without the extension', 'tasks/get', { taskId: UUID }, META, 400, -32021],
    ['tasks/get of an unknown task', 'tasks/get', { taskId: UUID }, TASKS_META, 200, -32602],
    ['tasks/cancel of an unknown task', 'tasks/cancel', { taskId: UUID }, TASKS_META, 200, -32602],
    [
      'tasks/update of an unknown task',
      'tasks/update',
      { taskId: UUID, inputResponses: { k: 1 } },
      TASKS_META,
      200,
      -32602,
    ],
    ['tasks/update without inputResponses', 'tasks/update', { taskId: UUID }, TASKS_META, 400, -32602],
    [
      'tasks/update with inputResponses an array',
      'tasks/update',
      { taskId: UUID, inputResponses: [1] },
      TASKS_META,
      400,
      -32602,
    ],
    ['tasks/get without a taskId', 'tasks/get', {}, TASKS_META, 400, -32020],
    ['tasks/get with a numeric taskId', 'tasks/get', { taskId: 7 }, TASKS_META, 400, -32020],
    [
      'subscriptions/listen with an unknown filter',
      'subscriptions/listen',
      { notifications: { everything: true } },
      META,
      400,
      -32602,
    ],
    [
      'subscriptions/listen of tasks without the extension',
      'subscriptions/listen',
      { notifications: { taskIds: [UUID] } },
      META,
      400,
      -32021,
    ],
  ].map(([name, method, params, meta, status, rpc], index) => {
    const { headers, body } = modern(method as string, params as Record<string, unknown>, 70 + index, meta as object);
    return mcp(name as string, { headers, body }, status as number, rpc as number, { id: 70 + index });
  }),

  // 2025-11-25 requests.
  ...['1e308', '1e20', '604800001', '0', '-1', '2.5', '"60000"', 'null', 'true', '[60000]', '{}'].map((ttl, index) =>
    mcp(
      `2025-11-25 task.ttl ${ttl}`,
      {
        headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
        body: `{"jsonrpc":"2.0","id":${90 + index},"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":1},"task":{"ttl":${ttl}}}}`,
      },
      200,
      -32602,
      { code: 'TG_JSON_NUMBER_INVALID', id: 90 + index },
    ),
  ),
  mcp(
    '2025-11-25 task.ttl 1e400',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":1},"task":{"ttl":1e400}}}',
    },
    400,
    -32602,
    { code: 'TG_JSON_NUMBER_INVALID', id: 101 },
  ),
  mcp(
    '2025-11-25 tasks/list with a bad cursor',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":102,"method":"tasks/list","params":{"cursor":"bm9wZQ"}}',
    },
    200,
    -32602,
    { id: 102 },
  ),
  mcp(
    '2025-11-25 tasks/list with a numeric cursor',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":103,"method":"tasks/list","params":{"cursor":5}}',
    },
    200,
    -32602,
    { id: 103 },
  ),
  mcp(
    '2025-11-25 tasks/result of an unknown task',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: `{"jsonrpc":"2.0","id":104,"method":"tasks/result","params":{"taskId":"${UUID}"}}`,
    },
    200,
    -32602,
    { id: 104 },
  ),
  mcp(
    '2025-11-25 a task for a tool that forbids one',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":105,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"},"task":{}}}',
    },
    200,
    -32601,
    { id: 105 },
  ),
  mcp(
    'an unknown session',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': 'no-such-session' },
      body: '{"jsonrpc":"2.0","id":106,"method":"tools/list"}',
    },
    404,
    -32600,
    { id: 106 },
  ),
  mcp(
    'a protocol version never released',
    {
      headers: { ...HEADERS, 'mcp-protocol-version': '2024-10-07', 'mcp-session-id': 'x' },
      body: '{"jsonrpc":"2.0","id":107,"method":"tools/list"}',
    },
    400,
    -32600,
    { id: 107 },
  ),
  // Two credentials are ambiguous (Node would keep the first and drop the second). IncomingHttpHeaders
  // types `authorization` as one string, hence the capital.
  ...(
    [
      ['two Authorization headers, the first valid', [`Bearer ${TOKEN}`, 'Bearer other-token-0000000000000']],
      ['two Authorization headers, the second valid', ['Basic eDp5', `Bearer ${TOKEN}`]],
    ] as const
  ).map(
    ([name, values]): McpCase => ({
      transport: 'mcp',
      name,
      request: {
        method: 'POST',
        url: '/mcp',
        // light-my-request sends each element of an array as a header line of its own.
        headers: { ...UNAUTHENTICATED, Authorization: [...values] },
        payload: '{"jsonrpc":"2.0","id":108,"method":"tools/list"}',
      },
      status: 400,
      rpc: -32600,
      code: 'TG_HEADER_REPEATED',
    }),
  ),
];

const stdioCases: StdioCase[] = [
  ...unstorable(1).map(([name, line, code], index): StdioCase => {
    const id = name.startsWith('a string id') ? 'a\u0000' : 1000 + index;
    return {
      transport: 'stdio',
      name: `unstorable: ${name}`,
      line: line.replace('"id":1,', `"id":${1000 + index},`),
      answer: { id, rpc: -32602, code },
    };
  }),
  ...notJsonRpc.map(
    ([name, line, id]): StdioCase => ({
      transport: 'stdio',
      name: `not JSON-RPC: ${name}`,
      line,
      answer: { id, rpc: -32600 },
    }),
  ),
  ...notJson.map(
    ([name, line]): StdioCase => ({
      transport: 'stdio',
      name: `not JSON: ${name}`,
      line,
      answer: { id: null, rpc: -32700 },
    }),
  ),
  {
    transport: 'stdio',
    name: 'a line over 1 MiB',
    line: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"${'x'.repeat(1_100_000)}"}}`,
    answer: { id: null, rpc: -32600, code: 'TG_BODY_TOO_LARGE' },
  },
  {
    transport: 'stdio',
    name: 'bytes that are not UTF-8',
    line: Buffer.from([0xff, 0xc3, 0x28, 0x7b, 0x7d]),
    answer: { id: null, rpc: -32700, code: 'TG_ENCODING_INVALID' },
  },
  // Bytes that are not UTF-8 inside a string of a message that is otherwise served.
  ...(
    [
      ['FF FE', [0xff, 0xfe]],
      ['overlong C0 80', [0xc0, 0x80]],
      ['a CESU-8 surrogate pair', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
    ] as const
  ).map(
    ([name, bytes], index): StdioCase => ({
      transport: 'stdio',
      name: `not UTF-8 in an argument: ${name}`,
      line: Buffer.concat([
        Buffer.from(
          `{"jsonrpc":"2.0","id":${1200 + index},"method":"tools/call","params":{"name":"greet","arguments":{"name":"`,
        ),
        Buffer.from(bytes),
        Buffer.from(`"},"_meta":${JSON.stringify(META)}}}`),
      ]),
      answer: { id: null, rpc: -32700, code: 'TG_ENCODING_INVALID' },
    }),
  ),
  ...misread(1210).map(
    ([name, line, rpc, code]): StdioCase => ({
      transport: 'stdio',
      name: `misread: ${name}`,
      line,
      answer: { id: null, rpc, code },
    }),
  ),
  {
    transport: 'stdio',
    // REST and /mcp refuse it: one check for the three.
    name: 'a __proto__ key in params',
    line: `{"jsonrpc":"2.0","id":1220,"method":"tools/list","params":{"__proto__":{"x":1},"_meta":${JSON.stringify(META)}}}`,
    answer: { id: null, rpc: -32700, code: 'TG_MALFORMED_JSON' },
  },
  {
    transport: 'stdio',
    name: 'a constructor.prototype key in arguments',
    line: `{"jsonrpc":"2.0","id":1221,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x","constructor":{"prototype":{}}},"_meta":${JSON.stringify(META)}}}`,
    answer: { id: null, rpc: -32700, code: 'TG_MALFORMED_JSON' },
  },
  {
    transport: 'stdio',
    name: 'a UTF-16 line',
    line: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}', 'utf16le'),
    answer: { id: null, rpc: -32700 },
  },
  {
    transport: 'stdio',
    name: 'a notification with NUL',
    line: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"\\u0000"}}',
    answer: null,
  },
  {
    transport: 'stdio',
    name: 'a notification 1,000 deep',
    line: `{"jsonrpc":"2.0","method":"notifications/x","params":{"d":${deepArrays(1_000)}}}`,
    answer: null,
  },
  {
    transport: 'stdio',
    name: 'a malformed cancel',
    line: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}',
    answer: null,
  },
  {
    transport: 'stdio',
    name: 'a cancel of an unknown request',
    line: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}',
    answer: null,
  },
  { transport: 'stdio', name: 'a response', line: '{"jsonrpc":"2.0","id":5,"result":{}}', answer: null },
  {
    transport: 'stdio',
    name: 'an error response',
    line: '{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}',
    answer: null,
  },
  {
    transport: 'stdio',
    name: 'a request without _meta',
    line: '{"jsonrpc":"2.0","id":1100,"method":"tools/list"}',
    answer: { id: 1100, rpc: -32602 },
  },
  {
    transport: 'stdio',
    // Refused before the pipe would switch to 2025-11-25.
    name: 'an initialize with NUL in clientInfo',
    line: '{"jsonrpc":"2.0","id":1101,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"\\u0000","version":"1"}}}',
    answer: { id: 1101, rpc: -32602, code: 'TG_JSON_STRING_INVALID' },
  },
  ...[
    ['an unknown method', 'widgets/list', {}, META, -32601, undefined],
    ['resources/read with a boolean uri', 'resources/read', { uri: true }, META, -32602, undefined],
    [
      'resources/read of a uri that names nothing',
      'resources/read',
      { uri: 'test://nothing' },
      META,
      -32602,
      undefined,
    ],
    ['prompts/get with a number argument', 'prompts/get', { name: 'x', arguments: { a: 1 } }, META, -32602, undefined],
    ['resources/list with a number cursor', 'resources/list', { cursor: 3 }, META, -32602, undefined],
    [
      'completion/complete without a ref',
      'completion/complete',
      { argument: { name: 'a', value: '' } },
      META,
      -32602,
      undefined,
    ],
    ['tools/call without a name', 'tools/call', { arguments: {} }, META, -32602, undefined],
    ['tools/call of an unknown tool', 'tools/call', { name: 'launch_rockets' }, META, -32602, 'TG_TOOL_UNKNOWN'],
    [
      'tools/call with arguments of the wrong type',
      'tools/call',
      { name: 'greet', arguments: { name: 5 } },
      META,
      -32602,
      'TG_TOOL_ARGUMENTS_INVALID',
    ],
    ['tools/call with arguments an array', 'tools/call', { name: 'greet', arguments: [] }, META, -32602, undefined],
    [
      'a charge without a key',
      'tools/call',
      { name: 'charge_account', arguments: { account: 'a', cents: 1 } },
      META,
      -32602,
      'TG_IDEMPOTENCY_KEY_MISSING',
    ],
    [
      'a charge with cents "1"',
      'tools/call',
      { name: 'charge_account', arguments: { account: 'a', cents: '1', idempotencyKey: 'k' } },
      META,
      -32602,
      'TG_TOOL_ARGUMENTS_INVALID',
    ],
    ['a task-only tool without the extension', 'tools/call', { name: 'failing_job' }, META, -32021, undefined],
    ['tasks/get without the extension', 'tasks/get', { taskId: UUID }, META, -32021, undefined],
    ['tasks/get of an unknown task', 'tasks/get', { taskId: UUID }, TASKS_META, -32602, undefined],
    [
      'tasks/update with inputResponses a string',
      'tasks/update',
      { taskId: UUID, inputResponses: 'yes' },
      TASKS_META,
      -32602,
      undefined,
    ],
    ['tasks/cancel without a taskId', 'tasks/cancel', {}, TASKS_META, -32602, undefined],
    [
      'subscriptions/listen with an unknown filter',
      'subscriptions/listen',
      { notifications: { all: true } },
      META,
      -32602,
      undefined,
    ],
    [
      'an unsupported protocol version',
      'tools/list',
      {},
      { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
      -32022,
      undefined,
    ],
    [
      'clientCapabilities a string',
      'tools/list',
      {},
      { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' },
      -32602,
      undefined,
    ],
  ].map(
    ([name, method, params, meta, rpc, code], index): StdioCase => ({
      transport: 'stdio',
      name: name as string,
      line: JSON.stringify({
        jsonrpc: '2.0',
        id: 1200 + index,
        method,
        params: { ...(params as object), _meta: meta },
      }),
      answer: { id: 1200 + index, rpc: rpc as number, ...(code ? { code: code as string } : {}) },
    }),
  ),
];

export const MCP_CASES: readonly McpCase[] = mcpCases;
export const STDIO_CASES: readonly StdioCase[] = stdioCases;
