import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, SETTINGS } from '../../apps/cli/src/config.ts';
import { REPO_ROOT } from '../support/cli.ts';

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

  it('runs postgres, a one-shot migrate job, the api, two workers and the relay', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'relay', 'worker']);
    expect(service('postgres').healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(service('migrate')).toMatchObject({
      command: ['migrate', 'up'],
      restart: 'no',
      depends_on: { postgres: { condition: 'service_healthy' } },
    });
    for (const role of TASKGATE_ROLES) {
      expect(service(role).command, role).toEqual(['start', '--role', role, '--no-migrate']);
      expect(service(role).depends_on, role).toEqual({ migrate: { condition: 'service_completed_successfully' } });
      expect(service(role).image, role).toBe(service('migrate').image);
    }
    expect(service('worker').deploy?.replicas).toBe(2);
    expect(service('api').ports).toEqual(['127.0.0.1:8080:8080']);
    expect(service('api').healthcheck?.test.join(' ')).toContain('/readyz');
  });

  it('gives every Taskgate service a configuration that Taskgate accepts', () => {
    for (const name of ['migrate', ...TASKGATE_ROLES]) {
      const environment = service(name).environment ?? {};
      for (const key of Object.keys(environment)) expect(Object.keys(SETTINGS), `${name}: ${key}`).toContain(key);
      expect(environment.DATABASE_URL).toBe('postgres://taskgate:taskgate@postgres:5432/taskgate');
      // Interpolate as `docker compose` would, with the variables the file's header asks for.
      const resolved = Object.fromEntries(
        Object.entries(environment).map(([key, value]) => [
          key,
          String(value).replace(/\$\{(\w+):[?-]([^}]*)\}/g, (_, variable: string) =>
            variable === 'TASKGATE_TOKENS' ? 'change-me-to-a-long-token:acme' : 'info',
          ),
        ]),
      );
      expect(() => loadConfig(resolved, '/app'), name).not.toThrow();
    }
  });
});

describe('Dockerfile', () => {
  const instructions = dockerfile
    .split('\n')
    .filter((line) => /^[A-Z]+\s/.test(line))
    .map((line) => line.trim());

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
  });
});
