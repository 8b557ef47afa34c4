import type { ProtocolEra } from '@taskgate/protocol';
import type { MethodTable } from '../dispatch/method-table.ts';

/** One served revision: its version, its era and its methods (a method not there is -32601). */
export interface Revision {
  readonly version: string;
  readonly era: ProtocolEra;
  readonly methods: MethodTable;
  /** Status notifications for the tasks a connection created, where the revision sends them. */
  readonly statusWatch?: (tenantId: string, send: (notification: Record<string, unknown>) => void) => StatusWatch;
}

/** Tasks a connection watches for their status notifications: `add` each, `stop` with the connection. */
export interface StatusWatch {
  add(taskId: string): void;
  stop(): void;
}

/**
 * What a handshake-era revision does differently from the others, on top of the methods they
 * share (revisions/handshake/methods.ts). Each revision folder exports one.
 */
export interface HandshakeProfile {
  readonly version: string;
  /** Its own tasks: tools/call's `task` param, tasks/get|result|list|cancel, status notifications. */
  readonly tasks: boolean;
  /** A tools/list entry as the revision defines one: the fields it lacks are removed. */
  readonly toolEntry: (entry: Record<string, unknown>) => Record<string, unknown>;
  /** A CallToolResult as the revision defines one. */
  readonly callResult: (result: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
}

/** Leaves a value as it is (a revision that has every field). */
export function unchanged<T>(value: T): T {
  return value;
}

/** The object without the named fields. */
export function without<T extends Readonly<Record<string, unknown>>>(value: T, fields: readonly string[]): T {
  if (!fields.some((field) => field in value)) return value;
  const copy: Record<string, unknown> = { ...value };
  for (const field of fields) delete copy[field];
  return copy as T;
}
