import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './free-port.ts';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';
export const HARNESS_APPLICATION = 'taskgate-chaos';

/**
 * A PostgreSQL 15 server of a test's (or the fault suite's) own, in a temp dir on a free port, so
 * it can be fast-stopped, restarted and have its backends terminated without touching any other
 * database (the shared server at 5432 is never stopped). Run as the `postgres` OS user when the
 * tests run as root (initdb refuses root).
 */
export class PostgresCluster {
  readonly dataDir: string;
  readonly logFile: string;
  port = 0;
  readonly maxConnections: number;
  #running = false;

  constructor(root: string, maxConnections: number) {
    this.dataDir = path.join(root, 'pgdata');
    this.logFile = path.join(root, 'postgres.log');
    this.maxConnections = maxConnections;
  }

  /** A cluster in a new temp dir, initialised and started; destroy() removes it all. */
  static async temporary(maxConnections = 60): Promise<PostgresCluster> {
    const cluster = new PostgresCluster(fs.mkdtempSync(path.join(os.tmpdir(), 'taskgate-pg-')), maxConnections);
    try {
      await cluster.init();
      await cluster.start();
    } catch (error) {
      cluster.destroy();
      throw error;
    }
    return cluster;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Stops it at once, whatever its state, and deletes its directory. */
  destroy(): void {
    this.stopNowSync();
    fs.rmSync(path.dirname(this.dataDir), { recursive: true, force: true });
  }

  url(database = 'taskgate'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async init(): Promise<void> {
    const root = path.dirname(this.dataDir);
    fs.mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(this.logFile, '');
    if (isRoot()) {
      fs.chownSync(root, ...postgresIds());
      fs.chownSync(this.dataDir, ...postgresIds());
      fs.chownSync(this.logFile, ...postgresIds());
    }
    await asPostgres('initdb', ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    this.port = await freePort();
  }

  async start(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-k ${this.dataDir}`,
      '-c listen_addresses=127.0.0.1',
      `-c max_connections=${this.maxConnections}`,
      // The machine is shared and small; a stop (fast or immediate) kills processes, not the
      // kernel, so what was written needs no fsync to survive it. A commit must still write its
      // WAL before it answers: an immediate stop (a crash) loses WAL still in shared memory.
      '-c fsync=off',
      '-c synchronous_commit=on',
      '-c full_page_writes=off',
      '-c shared_buffers=64MB',
    ].join(' ');
    await asPostgres('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-o', options, '-w', '-t', '60', 'start']);
    this.#running = true;
  }

  /** `pg_ctl stop -m fast`: every session is terminated (57P01) and the server shuts down cleanly. */
  async fastStop(): Promise<void> {
    this.#running = false;
    await asPostgres('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** `pg_ctl stop -m immediate`: the server quits without a clean shutdown, as on a crash. */
  async immediateStop(): Promise<void> {
    this.#running = false;
    await asPostgres('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '60', 'stop']);
  }

  /** Resolves once a new connection gets an answer; returns when that was. */
  async waitAccepting(timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const client = new pg.Client({
        connectionString: this.url('postgres'),
        application_name: HARNESS_APPLICATION,
        connectionTimeoutMillis: 1_000,
      });
      try {
        await client.connect();
        await client.query('SELECT 1');
        return performance.now();
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`Postgres did not accept connections: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      } finally {
        await client.end().catch(() => {});
      }
    }
  }

  async createDatabase(name: string): Promise<void> {
    const client = this.client('postgres');
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
  }

  /** A client of the harness's own, which the backend-kill storms spare. */
  client(database = 'taskgate', applicationName = HARNESS_APPLICATION): pg.Client {
    const client = new pg.Client({
      connectionString: this.url(database),
      application_name: applicationName,
      connectionTimeoutMillis: 5_000,
    });
    // A fast stop or a storm ends the connection; the caller sees it on its next query.
    client.on('error', () => {});
    return client;
  }

  /** For the exit path: stop now, synchronously, whatever state the server is in. */
  stopNowSync(): void {
    if (!fs.existsSync(path.join(this.dataDir, 'postmaster.pid'))) return;
    const [command, args] = commandAsPostgres('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    spawnSync(command, args, { stdio: 'ignore', timeout: 30_000 });
    this.#running = false;
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function postgresIds(): [number, number] {
  const result = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error('running as root needs a postgres OS user for initdb');
  return [Number(result.stdout.trim()), Number(gid.stdout.trim())];
}

function commandAsPostgres(program: string, args: readonly string[]): [string, string[]] {
  const binary = path.join(BIN, program);
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, [...args]];
}

async function asPostgres(program: string, args: readonly string[]): Promise<void> {
  const [command, commandArgs] = commandAsPostgres(program, args);
  try {
    await run(command, commandArgs, { timeout: 120_000 });
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${program} ${args.at(-1)} failed: ${String(stderr || stdout || error).trim()}`);
  }
}
