import { describe, expect, it } from 'vitest';
import {
  checkTransition,
  isTaskStatus,
  isTerminalStatus,
  TASK_STATUSES,
  type TaskStatus,
  TERMINAL_STATUSES,
} from './task-state.ts';

const LEGAL: ReadonlyArray<readonly [TaskStatus, TaskStatus]> = [
  ['working', 'input_required'],
  ['working', 'completed'],
  ['working', 'failed'],
  ['working', 'cancelled'],
  ['input_required', 'working'],
  ['input_required', 'completed'],
  ['input_required', 'failed'],
  ['input_required', 'cancelled'],
];

function isLegal(from: TaskStatus, to: TaskStatus): boolean {
  return LEGAL.some(([legalFrom, legalTo]) => legalFrom === from && legalTo === to);
}

describe('task state machine', () => {
  it('knows exactly five statuses, three of them terminal', () => {
    expect([...TASK_STATUSES].sort()).toEqual(['cancelled', 'completed', 'failed', 'input_required', 'working']);
    expect([...TERMINAL_STATUSES].sort()).toEqual(['cancelled', 'completed', 'failed']);
    expect(TASK_STATUSES.filter((status) => isTerminalStatus(status))).toEqual(['completed', 'failed', 'cancelled']);
  });

  describe('every pair of statuses', () => {
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const legal = isLegal(from, to);
        it(`${legal ? 'allows' : 'refuses'} ${from} → ${to}`, () => {
          const check = checkTransition(from, to);
          expect(check.ok).toBe(legal);
          if (!check.ok) expect(check.reason).toMatch(/\S/);
        });
      }
    }
  });

  it('allows exactly eight of the twenty-five pairs', () => {
    const allowed = TASK_STATUSES.flatMap((from) =>
      TASK_STATUSES.filter((to) => checkTransition(from, to).ok).map((to) => `${from}→${to}`),
    );
    expect(allowed).toHaveLength(8);
  });

  it('says a terminal task never changes, whatever the target', () => {
    for (const from of TERMINAL_STATUSES) {
      for (const to of TASK_STATUSES) {
        expect(checkTransition(from, to)).toEqual({
          ok: false,
          reason: `task is already ${from}; a terminal task never changes`,
        });
      }
    }
  });

  it('refuses a transition from a live status to itself', () => {
    expect(checkTransition('working', 'working')).toEqual({
      ok: false,
      reason: 'task is already working; a status does not transition to itself',
    });
    expect(checkTransition('input_required', 'input_required').ok).toBe(false);
  });

  it('refuses unknown statuses on either side and names them', () => {
    expect(checkTransition('running', 'completed')).toEqual({ ok: false, reason: 'unknown task status "running"' });
    expect(checkTransition('working', 'done')).toEqual({ ok: false, reason: 'unknown target task status "done"' });
    expect(checkTransition('', '').ok).toBe(false);
    expect(checkTransition('Working', 'completed').ok).toBe(false);
    expect(checkTransition('completed', 'bogus').ok).toBe(false);
  });

  it('recognises statuses only among strings it knows', () => {
    for (const status of TASK_STATUSES) expect(isTaskStatus(status)).toBe(true);
    for (const value of ['WORKING', 'toString', 'constructor', '', 42, null, undefined, {}, ['working']]) {
      expect(isTaskStatus(value)).toBe(false);
    }
  });

  it('does not call an unknown string terminal', () => {
    expect(isTerminalStatus('done')).toBe(false);
    expect(isTerminalStatus('working')).toBe(false);
    expect(isTerminalStatus('input_required')).toBe(false);
  });
});
