/**
 * The one registry of Taskgate error codes, shared by the CLI, the API and the workers.
 *
 * Codes are stable: clients, scripts and dashboards match on them, so a code is never renamed or
 * reused. Every code is documented in docs/errors.md (a test keeps the two in step).
 *
 * `exitCode` follows sysexits(3) so that an operator's supervisor can tell "fix your
 * configuration" (78) from "the database is down, try again" (69) without parsing text.
 * `httpStatus` is what the API answers when the error reaches a client.
 */
export interface ErrorDefinition {
  readonly title: string;
  readonly httpStatus: number;
  readonly exitCode: number;
}

export const errorRegistry = {
  TG_USAGE: { title: 'Invalid command line', httpStatus: 400, exitCode: 64 },
  TG_CONFIG_INVALID: { title: 'Invalid configuration', httpStatus: 500, exitCode: 78 },
  TG_DB_UNREACHABLE: { title: 'Database unreachable', httpStatus: 503, exitCode: 69 },
  TG_MIGRATION_FILES_INVALID: { title: 'Migration files are invalid', httpStatus: 500, exitCode: 65 },
  TG_MIGRATION_DB_AHEAD: { title: 'Database is ahead of this code', httpStatus: 500, exitCode: 65 },
  TG_MIGRATION_CHECKSUM_MISMATCH: { title: 'Applied migration was edited', httpStatus: 500, exitCode: 65 },
  TG_MIGRATION_FAILED: { title: 'Migration failed', httpStatus: 500, exitCode: 65 },
  TG_MIGRATION_PENDING: { title: 'Database schema is behind this code', httpStatus: 503, exitCode: 65 },
  TG_MIGRATION_LOCK_TIMEOUT: { title: 'Timed out waiting for the migration lock', httpStatus: 503, exitCode: 75 },
  TG_TOOL_MODULE_INVALID: { title: 'Tool module cannot be used', httpStatus: 500, exitCode: 78 },
  TG_EMBEDDED_DATA_DIR_LOCKED: { title: 'Embedded data directory in use', httpStatus: 500, exitCode: 75 },
  TG_EMBEDDED_START_FAILED: { title: 'Embedded Postgres failed to start', httpStatus: 500, exitCode: 70 },
  TG_EMBEDDED_TRANSACTION_WAIT: { title: 'Embedded Postgres transaction wait exceeded', httpStatus: 503, exitCode: 75 },
  TG_STARTUP_FAILED: { title: 'A role failed to start', httpStatus: 500, exitCode: 70 },
  TG_SHUTDOWN_TIMEOUT: { title: 'Graceful shutdown exceeded its deadline', httpStatus: 500, exitCode: 70 },
  TG_INSTANCE_NOT_REGISTERED: { title: 'Instance not registered', httpStatus: 500, exitCode: 70 },
  TG_UNAUTHORIZED: { title: 'Missing or invalid bearer token', httpStatus: 401, exitCode: 77 },
  TG_INSUFFICIENT_SCOPE: { title: 'The access token lacks a scope this request needs', httpStatus: 403, exitCode: 77 },
  TG_CSRF_REFUSED: {
    title: 'A signed-in console request that changes state did not come from the console',
    httpStatus: 403,
    exitCode: 77,
  },
  TG_OPERATOR_ONLY: {
    title: 'Only an operator token may name a tenant or read across tenants',
    httpStatus: 403,
    exitCode: 77,
  },
  TG_TENANT_REQUIRED: {
    title: 'An operator did not name the tenant this request acts for',
    httpStatus: 400,
    exitCode: 64,
  },
  TG_SIGN_IN_NOT_NEEDED: {
    title: 'This server asks for no token: there is nothing to sign in to',
    httpStatus: 409,
    exitCode: 65,
  },
  TG_TOKEN_IN_QUERY: { title: 'Access token sent in the URL', httpStatus: 400, exitCode: 64 },
  TG_ISSUER_UNAVAILABLE: {
    title: "The authorization server's metadata or keys cannot be read",
    httpStatus: 503,
    exitCode: 69,
  },
  TG_REQUEST_INVALID: { title: 'Request does not match its schema', httpStatus: 400, exitCode: 65 },
  TG_MALFORMED_JSON: { title: 'Request body is not valid JSON', httpStatus: 400, exitCode: 65 },
  TG_ENCODING_INVALID: { title: 'Request body or line is not valid UTF-8', httpStatus: 400, exitCode: 65 },
  TG_CONTENT_ENCODING_UNSUPPORTED: { title: 'Unsupported request content coding', httpStatus: 415, exitCode: 65 },
  TG_JSON_DUPLICATE_KEY: { title: 'A key appears twice in one JSON object', httpStatus: 400, exitCode: 65 },
  TG_BODY_TOO_LARGE: { title: 'Request body too large', httpStatus: 413, exitCode: 65 },
  TG_UNSUPPORTED_MEDIA_TYPE: { title: 'Unsupported request content type', httpStatus: 415, exitCode: 65 },
  TG_NOT_FOUND: { title: 'No such endpoint', httpStatus: 404, exitCode: 65 },
  TG_JSON_TOO_DEEP: { title: 'JSON nested too deeply', httpStatus: 400, exitCode: 65 },
  TG_JSON_STRING_INVALID: { title: 'String with NUL or an unpaired surrogate', httpStatus: 400, exitCode: 65 },
  TG_JSON_NUMBER_INVALID: { title: 'Number out of range', httpStatus: 400, exitCode: 65 },
  TG_URL_INVALID: { title: 'Request URL is not valid percent-encoded UTF-8', httpStatus: 400, exitCode: 65 },
  TG_URI_TOO_LONG: { title: 'Path parameter too long', httpStatus: 414, exitCode: 65 },
  TG_HEADERS_TOO_LARGE: { title: 'Request headers too large', httpStatus: 431, exitCode: 65 },
  TG_HTTP_MALFORMED: { title: 'Malformed HTTP request', httpStatus: 400, exitCode: 65 },
  TG_HEADER_REPEATED: { title: 'A header that may appear once was sent more than once', httpStatus: 400, exitCode: 65 },
  TG_REQUEST_TIMEOUT: { title: 'Request not received in time', httpStatus: 408, exitCode: 75 },
  TG_HOST_NOT_ALLOWED: { title: 'Host header not allowed', httpStatus: 403, exitCode: 77 },
  TG_ORIGIN_NOT_ALLOWED: { title: 'Origin not allowed', httpStatus: 403, exitCode: 77 },
  TG_TOOL_UNKNOWN: { title: 'Unknown tool', httpStatus: 422, exitCode: 65 },
  TG_TOOL_ARGUMENTS_INVALID: { title: 'Tool arguments do not match its input schema', httpStatus: 422, exitCode: 65 },
  TG_REQUEST_STATE_INVALID: {
    title: 'requestState is not one this server issued for this request',
    httpStatus: 400,
    exitCode: 65,
  },
  TG_INPUT_RESPONSES_INVALID: {
    title: 'inputResponses are not the results of input requests',
    httpStatus: 400,
    exitCode: 65,
  },
  TG_TOOL_VERSION_SKEW: {
    title: "Arguments accepted under another version of the tool do not fit the worker's",
    httpStatus: 422,
    exitCode: 65,
  },
  TG_TASK_NOT_FOUND: { title: 'Task not found', httpStatus: 404, exitCode: 65 },
  TG_ELICITATION_NOT_FOUND: { title: 'No session was sent this elicitation', httpStatus: 404, exitCode: 65 },
  TG_CURSOR_INVALID: { title: 'Invalid pagination cursor', httpStatus: 400, exitCode: 65 },
  TG_IDEMPOTENCY_KEY_MISSING: { title: 'Idempotency key required', httpStatus: 400, exitCode: 65 },
  TG_IDEMPOTENCY_KEY_INVALID: { title: 'Idempotency key not usable here', httpStatus: 400, exitCode: 65 },
  TG_IDEMPOTENCY_KEY_MISMATCH: {
    title: 'Idempotency key reused with different arguments',
    httpStatus: 422,
    exitCode: 65,
  },
  TG_IDEMPOTENCY_KEY_IN_PROGRESS: {
    title: 'A request with this idempotency key is still running',
    httpStatus: 409,
    exitCode: 75,
  },
  TG_IDEMPOTENCY_KEY_NOT_FOUND: { title: 'Idempotency key not found', httpStatus: 404, exitCode: 65 },
  TG_STEP_OUTCOME_UNKNOWN: { title: 'Irreversible step outcome unknown', httpStatus: 409, exitCode: 65 },
  TG_DOWNSTREAM_GONE: { title: 'Downstream server exited or broke off', httpStatus: 502, exitCode: 69 },
  TG_DOWNSTREAM_TASK_ENDED: { title: 'Downstream task ended without a result', httpStatus: 502, exitCode: 69 },
  TG_DOWNSTREAM_UNAVAILABLE: { title: 'Downstream server unavailable', httpStatus: 503, exitCode: 69 },
  TG_RECONCILIATION_ITEM_NOT_FOUND: { title: 'Reconciliation item not found', httpStatus: 404, exitCode: 65 },
  TG_RECONCILIATION_ITEM_RESOLVED: { title: 'Reconciliation item already resolved', httpStatus: 409, exitCode: 65 },
  TG_OUTBOX_EVENT_NOT_FOUND: { title: 'Outbox event not found', httpStatus: 404, exitCode: 65 },
  TG_OUTBOX_EVENT_NOT_DEAD: { title: 'Outbox event is not dead-lettered', httpStatus: 409, exitCode: 65 },
  TG_SERVICE_UNAVAILABLE: { title: 'Service unavailable', httpStatus: 503, exitCode: 69 },
  TG_CALL_TIMEOUT: { title: "A client's clock for the call ran out", httpStatus: 504, exitCode: 75 },
  TG_CALL_CANCELLED: { title: 'The call was cancelled by its caller', httpStatus: 409, exitCode: 75 },
  TG_TASK_CANCELLED: {
    title: 'The task the call became was cancelled by someone else',
    httpStatus: 409,
    exitCode: 75,
  },
  TG_SERVER_UNREACHABLE: { title: 'The MCP server could not be reached', httpStatus: 502, exitCode: 69 },
  TG_CALL_OUTCOME_UNKNOWN: { title: 'The call was sent and its answer lost', httpStatus: 502, exitCode: 75 },
  TG_TASK_CANCEL_UNCONFIRMED: {
    title: "A given-up task's tasks/cancel was refused or not answered",
    httpStatus: 502,
    exitCode: 75,
  },
  TG_INTERNAL: { title: 'Internal error', httpStatus: 500, exitCode: 70 },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof errorRegistry;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(errorRegistry, value);
}
