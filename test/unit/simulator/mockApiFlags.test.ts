import { describe, expect, it, vi } from 'vitest';
import { run } from '../../../src/cli/main.js';
import { ConfigError } from '../../../src/errors.js';
import { FAULT_PHASE } from '../../../src/simulator/faults.js';
import { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, MOCK_API_USAGE, mockApiOptionsFromFlags } from '../../../src/simulator/mockApiFlags.js';

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

  it('refuses --grow-events alone and bad fault specs', () => {
    expect(() => mockApiOptionsFromFlags({ growEvents: 3 })).toThrow(ConfigError);
    expect(() => mockApiOptionsFromFlags({ fault: 'events:bogus' })).toThrow(ConfigError);
  });

  it('documents the flags the CLI needs', () => {
    for (const f of ['--port', '--seed', '--trials', '--sites-per-trial', '--patients-per-trial', '--token-lifetime', '--release-fraction', '--grow-every-ms', '--grow-events', '--fault', '--synthetic-events']) {
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
