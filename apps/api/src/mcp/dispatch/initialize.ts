import { type Capabilities, META, negotiateHandshake } from '@taskgate/protocol';
import { initializeResult, type ServerIdentity } from '../core/server-info.ts';

/** What an initialize settles for the connection that sent it (a pipe, a session, an SSE stream). */
export interface Initialized {
  /** The client's revision when this server serves it, else its latest handshake revision. */
  readonly revision: string;
  /** What the client declared; undefined when `capabilities` is not an object. */
  readonly clientCapabilities: Capabilities | undefined;
  /** The initialize result, in that revision. */
  readonly result: Record<string, unknown>;
}

/**
 * An initialize request (basic/lifecycle "Initialization", "Version Negotiation"), the same on
 * every transport: each keeps the revision and the capabilities with its connection and answers
 * with the result. Imports only what StdioFront may load before the rest of the server.
 */
export function initialize(params: Readonly<Record<string, unknown>> | undefined, server: ServerIdentity): Initialized {
  const revision = negotiateHandshake(params?.protocolVersion);
  return {
    revision,
    clientCapabilities: capabilitiesOf(params?.capabilities),
    result: initializeResult(server, revision),
  };
}

function capabilitiesOf(value: unknown): Capabilities | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Capabilities) : undefined;
}

/** Whether a request carries 2026-07-28's per-request version (it then speaks that revision). */
export function hasMetaVersion(params: Readonly<Record<string, unknown>> | undefined): boolean {
  const meta = params?._meta as Record<string, unknown> | undefined;
  return typeof meta?.[META.protocolVersion] === 'string';
}
