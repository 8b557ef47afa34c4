import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, SETTINGS } from '../../apps/cli/src/config.ts';
import { REPO_ROOT, type RunningProcess, runCommand, startCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';

// No Docker engine runs here, so the files are checked statically: against the Compose
// Specification's JSON schema (as shipped by dclint), by dclint's rules, and for what Taskgate needs.
const composeText = readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true }) as {
  services: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
};
const dockerfile = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');

type Service = {
  image?: string;
  build?: { context?: string; target?: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  deploy?: { replicas?: number };
  ports?: string[];
  healthcheck?: { test: string[] };
};
const service = (name: string) => compose.services[name] as Service;
const TASKGATE_ROLES = ['api', 'worker', 'relay'];
/** The API that loads the ledger module, to serve its routes (they are the module's code). */
const LEDGER_API = 'ledger-api';

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const schema = JSON.parse(
      readFileSync(path.join(REPO_ROOT, 'node_modules/dclint/schemas/compose.schema.json'), 'utf8'),
    );
    const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
    const validate = ajv.compile(schema);
    // Compose resolves YAML merge keys (<<) before it validates, and so does this check.
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('passes dclint with no errors and no warnings', () => {
    const bin = path.join(REPO_ROOT, 'node_modules/dclint/bin/dclint.cjs');
    const result = spawnSync(process.execPath, [bin, 'docker-compose.yml', '--max-warnings', '0', '--color', 'false'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).not.toMatch(/warning|error/i);
    expect(result.status).toBe(0);
  });

  it('runs postgres, a one-shot migrate job, the api, two workers, the relay and the ledger api', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'ledger-api',
      'migrate',
      'postgres',
      'relay',
      'worker',
    ]);
    expect(service('postgres').healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(service('migrate')).toMatchObject({
      command: ['migrate', 'up'],
      restart: 'no',
      depends_on: { postgres: { condition: 'service_healthy' } },
    });
    for (const role of TASKGATE_ROLES) {
      expect(service(role).command, role).toEqual(['start', '--role', role, '--no-migrate']);
      expect(service(role).depends_on, role).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    }
    // The API and the relay run no tool module: they are built from the image without any.
    const targets = Object.fromEntries(
      ['migrate', LEDGER_API, ...TASKGATE_ROLES].map((name) => [name, service(name).build]),
    );
    expect(targets).toEqual({
      migrate: { context: '.', target: 'worker' },
      [LEDGER_API]: { context: '.', target: 'worker' },
      worker: { context: '.', target: 'worker' },
      api: { context: '.', target: 'api' },
      relay: { context: '.', target: 'api' },
    });
    expect(service('worker').deploy?.replicas).toBe(2);
    // A split deployment: the API holds no user code and offers the catalog the workers publish.
    expect(service('api').environment?.TASKGATE_TOOLS).toBe('none');
    expect(service('worker').environment?.TASKGATE_TOOLS).toBe(service('migrate').environment?.TASKGATE_TOOLS);
    expect(service('api').ports).toEqual(['127.0.0.1:8080:8080']);
    // The ledger's routes, the module's code, on a port of their own (README, "Containers").
    expect(service(LEDGER_API).ports).toEqual(['127.0.0.1:8081:8080']);
    expect(service(LEDGER_API).command).toEqual(['start', '--role', 'api', '--no-migrate']);
    expect(service('api').healthcheck?.test.join(' ')).toContain('/readyz');
  });

  it('gives every Taskgate service a configuration that Taskgate accepts', () => {
    for (const name of ['migrate', LEDGER_API, ...TASKGATE_ROLES]) {
      const environment = service(name).environment ?? {};
      for (const key of Object.keys(environment)) expect(Object.keys(SETTINGS), `${name}: ${key}`).toContain(key);
      expect(environment.DATABASE_URL).toBe('postgres://taskgate:taskgate@postgres:5432/taskgate');
      expect(() => loadConfig(resolvedEnvironment(name), '/app'), name).not.toThrow();
    }
  });

  it('gives the api, the workers and the relay a readiness healthcheck on a port the service listens on', () => {
    for (const role of TASKGATE_ROLES) {
      const { config } = loadConfig(resolvedEnvironment(role), '/app');
      const test = service(role).healthcheck?.test ?? [];
      expect(test.slice(0, 3), role).toEqual(['CMD', 'node', '-e']);
      const target = new URL(/fetch\('([^']+)'\)/.exec(test[3] ?? '')?.[1] ?? 'http://invalid');
      expect(target.pathname, role).toBe('/readyz');
      // HOST is 0.0.0.0 in the container, so its loopback reaches the listener.
      expect(config.host, role).toBe('0.0.0.0');
      expect(target.hostname, role).toBe('127.0.0.1');
      // Workers and the relay have no API: their probe is TASKGATE_HEALTH_PORT's.
      expect(Number(target.port), role).toBe(role === 'api' ? config.port : config.healthPort);
    }
  });
});

describe("the compose file's healthchecks, run against real processes", () => {
  const running: RunningProcess[] = [];
  const databases: TestDatabase[] = [];
  afterEach(async () => {
    for (const process of running.splice(0)) process.kill();
    await Promise.all(databases.splice(0).map((database) => database.drop()));
  });

  for (const role of TASKGATE_ROLES) {
    it(`the ${role}'s passes once it started and fails once it stopped`, async () => {
      const database = await createTestDatabase();
      databases.push(database);
      const environment = resolvedEnvironment(role);
      // The service's own environment, on this machine: the test database, loopback, free ports.
      const env: Record<string, string> = {
        ...environment,
        PATH: process.env.PATH ?? '',
        DATABASE_URL: database.url,
        HOST: '127.0.0.1',
        PORT: '0',
        ...(environment.TASKGATE_HEALTH_PORT === undefined ? {} : { TASKGATE_HEALTH_PORT: '0' }),
      };
      const taskgate = startCli(service(role).command ?? [], env);
      running.push(taskgate);
      const listening =
        role === 'api'
          ? ((await taskgate.waitForLog((line) => line.msg === 'taskgate started')).url as string)
          : ((await taskgate.waitForLog((line) => line.msg === 'health probe listening')).url as string);
      await taskgate.waitForLog((line) => line.msg === 'taskgate started');
      const [, , , script] = service(role).healthcheck?.test ?? [];
      const check = () =>
        runCommand(process.execPath, ['-e', (script ?? '').replace(/http:\/\/127\.0\.0\.1:\d+/, listening)], {});
      expect(await check()).toMatchObject({ code: 0 });
      expect((await taskgate.stop('SIGTERM')).code).toBe(0);
      expect(await check()).toMatchObject({ code: 1 });
    });
  }
});

describe("the README's ledger examples on the compose stack", () => {
  const running: RunningProcess[] = [];
  let database: TestDatabase | null = null;
  afterEach(async () => {
    for (const process of running.splice(0)) process.kill();
    await database?.drop();
    database = null;
  });

  it('are answered by ledger-api, which loads the module, and not by the api, which holds no user code', async () => {
    database = await createTestDatabase();
    const base = async (name: string) => {
      const env = {
        ...resolvedEnvironment(name),
        PATH: process.env.PATH ?? '',
        DATABASE_URL: (database as TestDatabase).url,
        HOST: '127.0.0.1',
        PORT: '0',
      };
      const taskgate = startCli(service(name).command ?? [], env);
      running.push(taskgate);
      return (await taskgate.waitForLog((line) => line.msg === 'taskgate started')).url as string;
    };
    const [ledger, api] = await Promise.all([base(LEDGER_API), base('api')]);
    // The README's first ledger call, with the token the compose file's header sets.
    const setStock = (url: string) =>
      fetch(`${url}/v1/inventory/sku-1`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: 'Bearer change-me-to-a-long-token' },
        body: JSON.stringify({ available: 10 }),
      });
    const served = await setStock(ledger);
    expect(served.status, await served.clone().text()).toBeLessThan(300);
    const refused = await setStock(api);
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { code: string }).code).toBe('TG_NOT_FOUND');
  });
});

/** A service's environment interpolated as `docker compose` would, with the variables the file's header asks for. */
function resolvedEnvironment(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([key, value]) => [
      key,
      String(value).replace(/\$\{(\w+):[?-]([^}]*)\}/g, (_, variable: string) =>
        variable === 'TASKGATE_TOKENS' ? 'change-me-to-a-long-token:acme' : 'info',
      ),
    ]),
  );
}

/** The Dockerfile's stages in order: each one's base (an image or an earlier stage) and its instructions. */
function dockerStages(text: string): { name: string; base: string; instructions: string[] }[] {
  const stages: { name: string; base: string; instructions: string[] }[] = [];
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^[A-Z]+\s/.test(line));
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) stages.push({ name: from[2] ?? String(stages.length), base: from[1] as string, instructions: [] });
    else stages.at(-1)?.instructions.push(line);
  }
  return stages;
}

/** What a target's image is made of: the instructions of the stages it is built FROM, then its own. */
function targetInstructions(stages: ReturnType<typeof dockerStages>, name: string): string[] {
  const stage = stages.find((each) => each.name === name);
  if (stage === undefined) return [];
  return [...targetInstructions(stages, stage.base), ...stage.instructions];
}

describe('Dockerfile', () => {
  const instructions = dockerfile
    .split('\n')
    .filter((line) => /^[A-Z]+\s/.test(line))
    .map((line) => line.trim());

  it('builds an api target with no examples/ in it, and a worker target (the default) that adds them', () => {
    const stages = dockerStages(dockerfile);
    const copied = (target: string) =>
      targetInstructions(stages, target)
        .filter((line) => line.startsWith('COPY '))
        .map((line) => line.split(/\s+/).slice(1))
        .map((words) => ({
          from: words.find((word) => word.startsWith('--from')),
          sources: words.filter((word) => !word.startsWith('--')).slice(0, -1),
        }));
    const api = copied('api');
    expect(api.length, 'the api target exists').toBeGreaterThan(0);
    // Nothing from another stage, no whole build context, no glob and nothing under examples/.
    for (const { from, sources } of api) {
      expect(from, sources.join(' ')).toBeUndefined();
      for (const source of sources) expect(source).not.toMatch(/^(\.\/?|examples(\/.*)?|.*[*?[].*)$/);
    }
    expect(api.flatMap((copy) => copy.sources)).toEqual(expect.arrayContaining(['apps', 'migrations', 'packages']));
    const worker = copied('worker');
    expect(worker.flatMap((copy) => copy.sources)).toContain('examples');
    // `docker build .` (and `docker run` of every role with the demo tools) builds the last stage.
    expect(stages.at(-1)?.name).toBe('worker');
    // Every service runs only modules its image has: none in the api image, examples in the worker's.
    for (const [name, definition] of Object.entries(compose.services)) {
      const { build, environment } = definition as Service;
      if (build === undefined) continue;
      const tools = environment?.TASKGATE_TOOLS ?? '';
      if (build.target === 'api') expect(tools, name).toBe('none');
      else for (const file of tools.split(',')) expect(file, name).toMatch(/^\.\/examples\//);
    }
  });

  it('uses a Node that satisfies the engines field', () => {
    const from = instructions.find((line) => line.startsWith('FROM '));
    const major = Number(/node:(\d+)/.exec(from ?? '')?.[1]);
    const engines = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).engines.node as string;
    expect(engines).toBe('>=22.12');
    expect(major).toBeGreaterThanOrEqual(23);
  });

  it('copies every workspace package.json before npm ci, and every COPY source exists', () => {
    const copies = instructions
      .filter((line) => line.startsWith('COPY '))
      .map((line) => line.split(/\s+/).slice(1, -1));
    const sources = copies.flat();
    for (const parent of ['apps', 'packages']) {
      for (const entry of readdirSync(path.join(REPO_ROOT, parent))) {
        expect(sources, `${parent}/${entry}`).toContain(`${parent}/${entry}/package.json`);
      }
    }
    for (const source of sources) expect(existsSync(path.join(REPO_ROOT, source)), source).toBe(true);
    const npmCi = instructions.findIndex((line) => line.includes('npm ci'));
    const firstSourceCopy = instructions.findIndex((line) => line.startsWith('COPY packages ./'));
    expect(npmCi).toBeGreaterThan(0);
    expect(firstSourceCopy).toBeGreaterThan(npmCi);
  });

  it('runs the CLI directly as an unprivileged user, so SIGTERM reaches the graceful shutdown', () => {
    expect(instructions).toContain('ENTRYPOINT ["node", "apps/cli/bin/taskgate.js"]');
    expect(instructions).toContain('CMD ["start"]');
    expect(instructions).toContain('USER node');
    // npm ci --omit=dev leaves out the `node` package, so the image has no node_modules/.bin/node
    // and bin/taskgate.js runs the CLI in the entrypoint process instead of starting a child.
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(manifest.devDependencies.node).toBeDefined();
    expect(manifest.dependencies?.node).toBeUndefined();
    expect(instructions.find((line) => line.includes('npm ci'))).toContain('--omit=dev');
  });

  it('gives the unprivileged user a data directory of its own for the embedded mode', () => {
    const env = Object.fromEntries(
      instructions
        .filter((line) => line.startsWith('ENV '))
        .flatMap((line) => line.slice(4).trim().split(/\s+/))
        .map((pair) => pair.split('=') as [string, string]),
    );
    const dataDir = env.TASKGATE_DATA_DIR ?? '';
    const user = instructions.findLast((line) => line.startsWith('USER '))?.slice(5);
    expect(path.isAbsolute(dataDir)).toBe(true);
    // Not under WORKDIR /app, which COPY leaves to root.
    expect(dataDir.startsWith('/app')).toBe(false);
    const prepared = instructions.findIndex(
      (line) =>
        line.startsWith('RUN ') &&
        line.includes(`mkdir -p ${dataDir}`) &&
        line.includes(`chown ${user}:${user} ${dataDir}`),
    );
    expect(prepared, `a RUN that creates ${dataDir} and gives it to ${user}`).toBeGreaterThan(0);
    // Done as root, before the switch to the runtime user.
    expect(prepared).toBeLessThan(instructions.indexOf(`USER ${user}`));
  });
});
