import { describe, expect, it } from 'vitest';
import { DEFAULTS, loadConfig, parseConfig, SETTINGS } from './config.ts';

describe('parseConfig', () => {
  it('gives the defaults for an empty record', () => {
    const parsed = parseConfig({});
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        host: DEFAULTS.host,
        port: DEFAULTS.port,
        dataDir: DEFAULTS.dataDir,
        shutdownGraceMs: DEFAULTS.shutdownGraceMs,
        workerConcurrency: DEFAULTS.workerConcurrency,
        catalogWindowMs: DEFAULTS.catalogWindowMs,
        requestTimeoutMs: DEFAULTS.requestTimeoutMs,
        logLevel: DEFAULTS.logLevel,
        logFormat: DEFAULTS.logFormat,
        relay: {
          maxAttempts: DEFAULTS.relayMaxAttempts,
          leaseMs: DEFAULTS.relayLeaseMs,
          concurrency: DEFAULTS.relayConcurrency,
        },
      },
      warnings: [],
    });
  });

  it('returns every problem, each naming its variable, instead of throwing', () => {
    expect(parseConfig({ PORT: 'x', TASKGATE_RELAY_LEASE_MS: '5', LOG_FORMAT: 'xml' })).toEqual({
      ok: false,
      problems: [
        { field: 'PORT', message: 'must be an integer from 0 to 65535 (got "x")' },
        { field: 'TASKGATE_RELAY_LEASE_MS', message: 'must be an integer from 1000 to 3600000 (got "5")' },
        { field: 'LOG_FORMAT', message: 'must be one of auto, json, pretty (got "xml")' },
      ],
    });
  });

  it('returns paths as written: only loading knows the working directory', () => {
    const parsed = parseConfig({ TASKGATE_DATA_DIR: 'data', TASKGATE_GATEWAYS: ' gw.json ' });
    expect(parsed.ok && [parsed.config.dataDir, parsed.config.gatewaysFile]).toEqual(['data', 'gw.json']);
    const { config } = loadConfig({ TASKGATE_DATA_DIR: 'data', TASKGATE_GATEWAYS: 'gw.json' }, '/srv');
    expect([config.dataDir, config.gatewaysFile]).toEqual(['/srv/data', '/srv/gw.json']);
    expect(loadConfig({}, '/srv').config.dataDir).toBe(`/srv/${DEFAULTS.dataDir}`);
  });

  it('reads nothing but the record it is given', () => {
    const before = process.env.PORT;
    process.env.PORT = '1';
    try {
      const parsed = parseConfig({});
      expect(parsed.ok && parsed.config.port).toBe(DEFAULTS.port);
    } finally {
      if (before === undefined) delete process.env.PORT;
      else process.env.PORT = before;
    }
  });

  it('warns about an unknown TASKGATE_ variable, but not about one the command reads itself', () => {
    expect(parseConfig({ TASKGATE_URL: 'http://h' })).toMatchObject({
      warnings: ['unknown setting TASKGATE_URL is ignored'],
    });
    expect(parseConfig({ TASKGATE_URL: 'http://h' }, ['TASKGATE_URL'])).toMatchObject({ warnings: [] });
  });
});

describe('the configuration table', () => {
  it('states the defaults the parse falls back to', () => {
    expect(SETTINGS.PORT).toContain(`(default ${DEFAULTS.port})`);
    expect(SETTINGS.HOST).toContain(`(default ${DEFAULTS.host})`);
    expect(SETTINGS.TASKGATE_SHUTDOWN_GRACE_MS).toContain(`(default ${DEFAULTS.shutdownGraceMs})`);
    expect(SETTINGS.TASKGATE_RELAY_CONCURRENCY).toContain(`(default ${DEFAULTS.relayConcurrency})`);
  });
});
