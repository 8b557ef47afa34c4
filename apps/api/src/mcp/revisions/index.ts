import { HANDSHAKE_VERSIONS, LATEST_PROTOCOL_VERSION } from '@taskgate/protocol';
import type { TaskWatcher } from '../../tasks/task-watch.ts';
import type { Revision } from '../core/revision.ts';
import type { CallRunner } from '../methods/call-runner.ts';
import type { ContentMethodsOptions } from '../methods/content-methods.ts';
import { PROFILE as R2024_11_05 } from './2024-11-05/revision.ts';
import { PROFILE as R2025_03_26 } from './2025-03-26/revision.ts';
import { PROFILE as R2025_06_18 } from './2025-06-18/revision.ts';
import { PROFILE as R2025_11_25 } from './2025-11-25/revision.ts';
import { statusWatch } from './2025-11-25/status-notifications.ts';
import { perRequestMethods } from './2026-07-28/methods.ts';
import { handshakeMethods } from './handshake/methods.ts';

/**
 * Every revision served, by version, each with its method table. The handshake revisions share
 * their methods and differ by profile; the list of versions is the protocol registry's
 * (packages/protocol/src/revisions/), which a test holds these to.
 */
export function servedRevisions(
  runner: CallRunner,
  watcher: TaskWatcher,
  content: ContentMethodsOptions,
): ReadonlyMap<string, Revision> {
  const revisions = new Map<string, Revision>([
    [
      LATEST_PROTOCOL_VERSION,
      {
        version: LATEST_PROTOCOL_VERSION,
        kind: 'per-request',
        methods: perRequestMethods(runner, content),
        methodNotFoundStatus: 404,
      },
    ],
  ]);
  for (const profile of [R2025_11_25, R2025_06_18, R2025_03_26, R2024_11_05]) {
    revisions.set(profile.version, {
      version: profile.version,
      kind: 'handshake',
      methods: handshakeMethods(runner, watcher, profile, content),
      methodNotFoundStatus: 200,
      ...(profile.tasks ? { statusWatch: statusWatch(watcher, runner.options.pollMs) } : {}),
    });
  }
  for (const version of HANDSHAKE_VERSIONS) {
    if (!revisions.has(version)) throw new Error(`revision ${version} is in the registry but has no methods`);
  }
  return revisions;
}
