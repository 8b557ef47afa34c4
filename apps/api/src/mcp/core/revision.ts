import type { RevisionKind } from '@taskgate/protocol';
import { HANDSHAKE_VERSIONS, LATEST_PROTOCOL_VERSION } from '@taskgate/protocol';
import type { MethodTable } from './method-table.ts';

/** One served revision: its version, its kind and its methods (a method not there is -32601). */
export interface Revision {
  readonly version: string;
  readonly kind: RevisionKind;
  readonly methods: MethodTable;
  /** The HTTP status of -32601 for a method not in `methods` (a handshake revision: 200, as its other errors). */
  readonly methodNotFoundStatus: number;
  /** Status notifications for the tasks a connection created, where the revision sends them. */
  readonly statusWatch?: (tenantId: string, send: (notification: Record<string, unknown>) => void) => StatusWatch;
}

/** Tasks a connection watches for their status notifications: `add` each, `stop` with the connection. */
export interface StatusWatch {
  add(taskId: string): void;
  stop(): void;
}

/** The revision of a request that names none: its kind's latest (callers that predate versions). */
export function defaultVersion(kind: RevisionKind | undefined): string {
  return kind === 'handshake' ? (HANDSHAKE_VERSIONS[0] as string) : LATEST_PROTOCOL_VERSION;
}
