import { definePrompt, defineResource, defineResourceTemplate, defineTool } from '@taskgate/sdk';

// The MCP conformance suite's server fixtures (its scenarios' "Server Implementation
// Requirements"): tools that return each kind of content, resources, a resource template and
// prompts. Offered only with TASKGATE_CONFORMANCE=1; they act on nothing.

/** A 1x1 red PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A 44-byte WAV header with no samples: the smallest file a player accepts. */
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=';

const NO_ARGUMENTS = { type: 'object', properties: {}, additionalProperties: false } as const;
const FIXTURE = { readOnlyHint: true, openWorldHint: false } as const;

function fixedTool(name: string, description: string, content: readonly Record<string, unknown>[], isError?: true) {
  return defineTool({
    name,
    description,
    inputSchema: NO_ARGUMENTS,
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler() {
      return { content: content as never, ...(isError ? { isError } : {}) };
    },
  });
}

export const contentTools = [
  fixedTool('test_simple_text', 'Returns one text block.', [
    { type: 'text', text: 'This is a simple text response for testing.' },
  ]),
  fixedTool('test_image_content', 'Returns a 1x1 PNG.', [{ type: 'image', data: PNG, mimeType: 'image/png' }]),
  fixedTool('test_audio_content', 'Returns an empty WAV.', [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }]),
  fixedTool('test_embedded_resource', 'Returns an embedded text resource.', [
    {
      type: 'resource',
      resource: {
        uri: 'test://embedded-resource',
        mimeType: 'text/plain',
        text: 'This is an embedded resource content.',
      },
    },
  ]),
  fixedTool('test_multiple_content_types', 'Returns text, an image and an embedded resource.', [
    { type: 'text', text: 'Multiple content types test:' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
    {
      type: 'resource',
      resource: {
        uri: 'test://mixed-content-resource',
        mimeType: 'application/json',
        text: JSON.stringify({ test: 'data', value: 123 }),
      },
    },
  ]),
  fixedTool(
    'test_error_handling',
    'Always answers with a tool error (isError: true).',
    [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
    true,
  ),
  defineTool({
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50 and 100 of 100, 50 ms apart.',
    inputSchema: NO_ARGUMENTS,
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler(_input, ctx) {
      ctx.progress(0, 100);
      await ctx.sleep(50);
      ctx.progress(50, 100);
      await ctx.sleep(50);
      ctx.progress(100, 100);
      return { content: [{ type: 'text', text: 'Progress reported: 0, 50 and 100 of 100.' }] };
    },
  }),
  defineTool({
    name: 'json_schema_2020_12_tool',
    description: 'Takes arguments described with JSON Schema 2020-12 ($defs, $anchor, allOf/anyOf, if/then/else).',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          $anchor: 'addressDef',
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } },
        },
      },
      properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' },
      },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, in a plain schema object.
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false,
    },
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler(input) {
      return { content: [{ type: 'text', text: `Accepted: ${JSON.stringify(input)}` }] };
    },
  }),
];

export const resources = [
  defineResource({
    uri: 'test://static-text',
    name: 'static-text',
    description: 'A fixed text resource.',
    mimeType: 'text/plain',
    read: () => [{ mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }),
  defineResource({
    uri: 'test://static-binary',
    name: 'static-binary',
    description: 'A fixed binary resource (a 1x1 PNG).',
    mimeType: 'image/png',
    read: () => [{ mimeType: 'image/png', blob: PNG }],
  }),
  defineResource({
    uri: 'test://watched-resource',
    name: 'watched-resource',
    description: 'A resource clients subscribe to.',
    mimeType: 'text/plain',
    read: () => [{ mimeType: 'text/plain', text: 'Watched resource content.' }],
  }),
];

export const resourceTemplates = [
  defineResourceTemplate({
    uriTemplate: 'test://template/{id}/data',
    name: 'template-data',
    description: 'Data for an id.',
    mimeType: 'application/json',
    complete: { id: (value) => ['123', '124', '200'].filter((id) => id.startsWith(value)) },
    read: (uri, { id }) => [
      {
        uri,
        mimeType: 'application/json',
        text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
      },
    ],
  }),
];

const CITIES = ['paris', 'park', 'party', 'portland', 'prague'];

export const prompts = [
  definePrompt({
    name: 'test_simple_prompt',
    description: 'A prompt without arguments.',
    get: () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
  }),
  definePrompt({
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two required arguments.',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    complete: { arg1: (value) => CITIES.filter((city) => city.startsWith(value)) },
    get: ({ arg1, arg2 }) => ({
      messages: [
        { role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } },
      ],
    }),
  }),
  definePrompt({
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds a resource.',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri as string,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  }),
  definePrompt({
    name: 'test_prompt_with_image',
    description: 'A prompt with an image.',
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  }),
];
