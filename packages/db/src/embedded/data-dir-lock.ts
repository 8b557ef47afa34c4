import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TaskgateError } from '@taskgate/errors';

/**
 * One process per embedded data directory. PGlite has no postmaster.pid of its own, and two PGlite
 * instances writing one directory corrupt it, so the directory carries a pid file.
 */
export interface DataDirLock {
  /** The pid of a previous run that ended without releasing the lock (it crashed or was killed). */
  readonly stalePid: number | null;
  release(): Promise<void>;
}

const LOCK_FILE = 'taskgate.pid';

/** Directories this process holds: the pid file cannot tell this process's two openers apart. */
const heldHere = new Set<string>();

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, LOCK_FILE);
  // Claimed before the first await, so two openers in this process cannot both get through.
  if (heldHere.has(file)) {
    throw new TaskgateError(
      'TG_EMBEDDED_DATA_DIR_LOCKED',
      `the embedded data directory ${dataDir} is already open in this process`,
      { details: { dataDir, pid: process.pid } },
    );
  }
  heldHere.add(file);
  try {
    await mkdir(dataDir, { recursive: true });
    const stalePid = await claimPidFile(file, dataDir);
    return { stalePid, release: () => releaseIfOurs(file) };
  } catch (error) {
    heldHere.delete(file);
    if (error instanceof TaskgateError) throw error;
    // Not writable, not a directory, no space: the usual cause is a working directory the process
    // may not write to (an MCP client launching `taskgate mcp-stdio` from / or $HOME elsewhere).
    throw new TaskgateError(
      'TG_EMBEDDED_START_FAILED',
      `the embedded data directory ${dataDir} cannot be used (${(error as Error).message}); set TASKGATE_DATA_DIR to a writable directory, or DATABASE_URL`,
      { cause: error, details: { dataDir } },
    );
  }
}

/**
 * Exclusive create is atomic; a stale file (a run that was killed) is removed and the create is
 * tried once more, so of two processes racing over a stale file at most one gets through.
 * Resolves with the stale pid, if there was one.
 */
async function claimPidFile(file: string, dataDir: string): Promise<number | null> {
  let stalePid: number | null = null;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      return stalePid;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number.parseInt((await readFile(file, 'utf8').catch(() => '')) || '', 10);
    // Our own pid in a file this process does not hold was written by an earlier process that had
    // the same pid: stale.
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new TaskgateError(
        'TG_EMBEDDED_DATA_DIR_LOCKED',
        `the embedded data directory ${dataDir} is in use by process ${pid}; stop it, or set TASKGATE_DATA_DIR to another directory`,
        { details: { dataDir, pid } },
      );
    }
    stalePid = Number.isInteger(pid) ? pid : null;
    await rm(file, { force: true });
  }
  throw new TaskgateError(
    'TG_EMBEDDED_DATA_DIR_LOCKED',
    `the embedded data directory ${dataDir} was claimed by another process while this one started`,
    { details: { dataDir } },
  );
}

async function releaseIfOurs(file: string): Promise<void> {
  heldHere.delete(file);
  const current = await readFile(file, 'utf8').catch(() => null);
  if (current !== null && Number.parseInt(current, 10) === process.pid) await rm(file, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
