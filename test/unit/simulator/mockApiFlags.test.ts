import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../../src/cli/main.js';
import { ConfigError } from '../../../packages/mock-api/src/errors.js';
import { mockApiParser, mockApiValues } from '../../../packages/mock-api/src/main.js';
import { FAULT_PHASE } from '../../../packages/mock-api/src/faults.js';
import {
  MOCK_API_FAULT_HELP,
  MOCK_API_FLAGS,
  MOCK_API_USAGE,
  mockApiOptionsFromFlags,
} from '../../../packages/mock-api/src/mockApiFlags.js';
import { MockApiOptionsSchema } from '../../../packages/mock-api/src/options.js';

describe('mockApiOptionsFromFlags', () => {
  it('maps every flag onto MockApiOptions', () => {
    const o = mockApiOptionsFromFlags({
      port: 8080,
      seed: 3,
      trials: 4,
      sitesPerTrial: 2,
      patientsPerTrial: 10,
      tokenLifetime: 2,
      releaseFraction: 0.5,
      growEveryMs: 1000,
      growEvents: 5,
      fault: ['events:status=503:times=3', 'token:status=400'],
      syntheticEvents: 1000,
      allowedOrigin: ['https://a.example,https://b.example'],
      drift: false,
    });
    expect(o).toEqual({
      port: 8080,
      seed: 3,
      trials: 4,
      sitesPerTrial: 2,
      patientsPerTrial: 10,
      tokenLifetimeSeconds: 2,
      releaseFraction: 0.5,
      growEvery: { intervalMs: 1000, events: 5 },
      faults: [
        { endpoint: 'events', kind: 'status', code: 503, times: 3 },
        { endpoint: 'token', kind: 'status', code: 400 },
      ],
      syntheticEvents: 1000,
      allowedOrigins: ['https://a.example', 'https://b.example'],
      drift: false,
    });
    expect(mockApiOptionsFromFlags({})).toEqual({});
  });

  it('--trusted-issuer and --trusted-jwks-uri make trustedIssuer; either alone is refused', () => {
    expect(mockApiOptionsFromFlags({ trustedIssuer: 'http://127.0.0.1:9/', trustedJwksUri: 'http://127.0.0.1:9/jwks' })).toEqual({
      trustedIssuer: { issuer: 'http://127.0.0.1:9/', jwksUri: 'http://127.0.0.1:9/jwks' },
    });
    expect(() => mockApiOptionsFromFlags({ trustedIssuer: 'http://127.0.0.1:9/' })).toThrow(ConfigError);
  });

  it('refuses --grow-events alone and bad fault specs', () => {
    expect(() => mockApiOptionsFromFlags({ growEvents: 3 })).toThrow(ConfigError);
    expect(() => mockApiOptionsFromFlags({ fault: 'events:bogus' })).toThrow(ConfigError);
  });

  it('documents the flags the CLI needs', () => {
    for (const f of [
      '--port',
      '--seed',
      '--trials',
      '--sites-per-trial',
      '--patients-per-trial',
      '--token-lifetime',
      '--release-fraction',
      '--grow-every-ms',
      '--grow-events',
      '--fault',
      '--synthetic-events',
    ]) {
      expect(MOCK_API_FLAGS.some((x) => x.flag === f)).toBe(true);
      expect(MOCK_API_USAGE).toContain(f);
    }
  });
});

describe('mock-api --help', () => {
  it('names every fault kind and key', () => {
    for (const kind of Object.keys(FAULT_PHASE)) expect(MOCK_API_FAULT_HELP, kind).toContain(kind);
    for (const key of ['event', 'length', 'bytes', 'longCycle', 'crlf', 'nonAscii', 'tooLong']) expect(MOCK_API_FAULT_HELP).toContain(key);
    expect(MOCK_API_USAGE).toContain(MOCK_API_FAULT_HELP);
  });

  it('prints the fault kinds in the command help', async () => {
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
    try {
      await run(['mock-api', '--help'], { handleSignals: false });
    } finally {
      log.mockRestore();
    }
    const help = out.join('\n');
    expect(help).toContain('--synthetic-events');
    expect(help).toContain('padEvents=<bytes>');
    expect(help).toContain('badToken=<crlf|nonAscii|tooLong>');
  });
});

describe('one schema for options, defaults and flags', () => {
  it('derives the same flags, types and defaults as before', () => {
    expect(MOCK_API_FLAGS.map((f) => [f.flag, f.key, f.type, f.default])).toEqual([
      ['--host', 'host', 'string', '127.0.0.1'],
      ['--port', 'port', 'number', 0],
      ['--seed', 'seed', 'number', 1],
      ['--trials', 'trials', 'number', 2],
      ['--sites-per-trial', 'sitesPerTrial', 'number', 4],
      ['--patients-per-trial', 'patientsPerTrial', 'number', 150],
      ['--start-time', 'startTime', 'string', '2026-01-05T08:00:00.000Z'],
      ['--client-id', 'clientId', 'string', 'demo-client-id'],
      ['--client-secret', 'clientSecret', 'string', 'demo-client-secret'],
      ['--audience', 'audience', 'string', 'https://reporting.example-recruit.test'],
      ['--trusted-issuer', 'trustedIssuer', 'string', undefined],
      ['--trusted-jwks-uri', 'trustedJwksUri', 'string', undefined],
      ['--token-lifetime', 'tokenLifetime', 'number', 3600],
      ['--default-limit', 'defaultLimit', 'number', 100],
      ['--max-limit', 'maxLimit', 'number', 1000],
      ['--microsite-id', 'micrositeId', 'string', 'ms-demo'],
      ['--allowed-origin', 'allowedOrigin', 'array', 'https://study.example.org'],
      ['--drift', 'drift', 'boolean', true],
      ['--release-fraction', 'releaseFraction', 'number', 1],
      ['--grow-every-ms', 'growEveryMs', 'number', undefined],
      ['--grow-events', 'growEvents', 'number', 10],
      ['--synthetic-events', 'syntheticEvents', 'number', undefined],
      ['--synthetic-late-tail', 'syntheticLateTail', 'number', undefined],
      ['--fault', 'fault', 'array', undefined],
    ]);
    for (const f of MOCK_API_FLAGS) expect(f.description.length, f.flag).toBeGreaterThan(10);
    expect(MOCK_API_FLAGS.find((f) => f.flag === '--seed')!.description).toBe(MockApiOptionsSchema.shape.seed.description);
  });

  it('resolves the documented defaults', () => {
    expect(MockApiOptionsSchema.parse({})).toEqual({
      host: '127.0.0.1',
      port: 0,
      seed: 1,
      trials: 2,
      sitesPerTrial: 4,
      patientsPerTrial: 150,
      startTime: '2026-01-05T08:00:00.000Z',
      clientId: 'demo-client-id',
      clientSecret: 'demo-client-secret',
      audience: 'https://reporting.example-recruit.test',
      tokenLifetimeSeconds: 3600,
      defaultLimit: 100,
      maxLimit: 1000,
      micrositeId: 'ms-demo',
      allowedOrigins: ['https://study.example.org'],
      drift: true,
      releaseFraction: 1,
    });
    expect(MockApiOptionsSchema.parse({ growEvery: { intervalMs: 50 } }).growEvery).toEqual({ intervalMs: 50, events: 10 });
  });

  it('names every invalid option at once', () => {
    const r = MockApiOptionsSchema.safeParse({ trials: 0, port: 1.5, startTime: 'yesterday', releaseFraction: 2, defaultLimit: 5000 });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['defaultLimit', 'port', 'releaseFraction', 'startTime', 'trials']);
  });

  it('yargs declarations from the flags read flags, RECRUIT_ETL_* variables and the --config file, in that order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mockapi-flags-'));
    try {
      const file = join(dir, 'options.json');
      writeFileSync(file, JSON.stringify({ seed: 9, trials: 5, 'token-lifetime': 99 }));
      const env = { RECRUIT_ETL_TOKEN_LIFETIME: '7', RECRUIT_ETL_CONFIG: file, RECRUIT_ETL_SERVICE_HOST: '10.0.0.1' };
      const y = mockApiParser(
        [
          '--seed',
          '3',
          '--grow-every-ms',
          '100',
          '--fault',
          'events:drip=5',
          '--allowed-origin',
          'https://a.example,https://b.example',
          '--no-drift',
        ],
        'mock-api',
      );
      const argv = (await y.parseAsync()) as Record<string, unknown>;
      const { flags, logLevel } = mockApiValues(argv, env);
      expect(logLevel).toBe('info');
      expect(mockApiOptionsFromFlags(flags)).toEqual({
        port: 8787,
        seed: 3,
        trials: 5,
        tokenLifetimeSeconds: 7,
        growEvery: { intervalMs: 100 },
        faults: [{ endpoint: 'events', kind: 'drip', ms: 5 }],
        allowedOrigins: ['https://a.example', 'https://b.example'],
        drift: false,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
