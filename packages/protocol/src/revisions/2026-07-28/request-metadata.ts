import { decodeHeaderValue } from '../../header-values.ts';
import { ErrorCode, type JsonRpcError } from '../../json-rpc.ts';
import { isLogLevel, LOG_LEVELS, type LogLevel } from '../../logging.ts';
import { PER_REQUEST_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS } from '../registry.ts';
import { META } from './version.ts';

/** Header names lower-cased, as Node gives them; a repeated header arrives as an array. */
export type RequestHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RequestMetadata {
  readonly protocolVersion: string;
  readonly clientCapabilities: Readonly<Record<string, unknown>>;
  readonly clientInfo: unknown;
  /** The request's log level; absent: no notifications/message for it. */
  readonly logLevel?: LogLevel;
}

export type MetadataCheck =
  | { readonly ok: true; readonly metadata: RequestMetadata }
  | { readonly ok: false; readonly httpStatus: 400; readonly error: JsonRpcError };

/** Methods whose target is mirrored into Mcp-Name, and the params field it comes from. */
const NAMED: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  // The Tasks extension ("Streamable HTTP: Routing Headers"): Mcp-Name carries the taskId.
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/**
 * The checks this revision asks of a server for one request POST: the per-request `_meta` fields
 * (basic/index "Per-request protocol fields": missing → -32602), the version (unsupported → -32022
 * with data.supported and data.requested), and the mirrored headers MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name (missing, malformed or different from the body → -32020), all with HTTP
 * 400. Header names are case-insensitive; values are compared exactly, after Base64 decoding.
 */
export function checkRequestMetadata(
  headers: RequestHeaders,
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
): MetadataCheck {
  const fields = checkMetaFields(params, { versionHeader: single(headers['mcp-protocol-version']) });
  if (!fields.ok) return fields;

  const methodHeader = single(headers['mcp-method']);
  if (methodHeader === undefined) return mismatch('the Mcp-Method header is required');
  if (methodHeader !== method) {
    return mismatch(`Mcp-Method header value '${methodHeader}' does not match body value '${method}'`);
  }

  const nameField = NAMED[method];
  if (nameField) {
    const rawName = single(headers['mcp-name']);
    if (rawName === undefined) return mismatch(`the Mcp-Name header is required for ${method}`);
    const name = decodeHeaderValue(rawName);
    if (name === null) return mismatch('the Mcp-Name header holds characters a header may not carry');
    const bodyName = params?.[nameField];
    if (name !== bodyName) {
      // The body's value as the client sent it: a string as is, anything else as its JSON (a body
      // value of any type is named without running code of its own, such as a toString key).
      const sent = typeof bodyName === 'string' ? bodyName : (JSON.stringify(bodyName) ?? 'nothing');
      return mismatch(`Mcp-Name header value '${name}' does not match body value '${sent}'`);
    }
  }
  return fields;
}

/**
 * The per-request `_meta` fields alone (basic/index: missing → -32602) and the version
 * (unsupported → -32022 with data.supported and data.requested): what every transport checks.
 * Over HTTP, `versionHeader` is compared with the body first (missing or different → -32020).
 */
export function checkMetaFields(
  params: Readonly<Record<string, unknown>> | undefined,
  http?: { versionHeader: string | undefined },
): MetadataCheck {
  const meta = (params?._meta ?? {}) as Record<string, unknown>;
  const version = meta[META.protocolVersion];
  const capabilities = meta[META.clientCapabilities];
  if (typeof version !== 'string') {
    return invalidParams(`params._meta["${META.protocolVersion}"] is required and must be a string`);
  }
  if (http) {
    if (http.versionHeader === undefined) return mismatch('the MCP-Protocol-Version header is required');
    if (http.versionHeader !== version) {
      return mismatch(
        `MCP-Protocol-Version header value '${http.versionHeader}' does not match body value '${version}'`,
      );
    }
  }
  if (!PER_REQUEST_VERSIONS.includes(version)) {
    return {
      ok: false,
      httpStatus: 400,
      error: {
        code: ErrorCode.UnsupportedProtocolVersion,
        message: `Unsupported protocol version: ${version}`,
        data: { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: version },
      },
    };
  }
  // After the version: a client of a revision this server does not speak may shape the rest of
  // `_meta` otherwise, and what it needs to hear first is which revisions are spoken here.
  if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) {
    return invalidParams(`params._meta["${META.clientCapabilities}"] is required and must be an object`);
  }
  const logLevel = meta[META.logLevel];
  if (logLevel !== undefined && !isLogLevel(logLevel)) {
    // server/utilities/logging "Error Handling": an unrecognised level is -32602.
    return invalidParams(`params._meta["${META.logLevel}"] must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return {
    ok: true,
    metadata: {
      protocolVersion: version,
      clientCapabilities: capabilities as Record<string, unknown>,
      clientInfo: meta[META.clientInfo],
      ...(logLevel === undefined ? {} : { logLevel }),
    },
  };
}

/** A header sent twice cannot be trusted to mean one value: treat it as malformed (undefined). */
function single(value: string | readonly string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function mismatch(message: string): MetadataCheck {
  return {
    ok: false,
    httpStatus: 400,
    error: { code: ErrorCode.HeaderMismatch, message: `Header mismatch: ${message}` },
  };
}

function invalidParams(message: string): MetadataCheck {
  return {
    ok: false,
    httpStatus: 400,
    error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${message}` },
  };
}
