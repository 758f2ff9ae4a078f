import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { DEFAULT_EVENT_TYPES, envName, resolveConfig, splitList } from '../../../src/config/config.js';

describe('resolveConfig', () => {
  it('applies the defaults of docs/contracts.md "Options"', () => {
    const c = resolveConfig({});
    expect(c.db).toBe('data/warehouse.duckdb');
    expect(c.exportDir).toBe('data/exports');
    expect(c.environment).toBe('production');
    expect(c.eventType).toEqual([...DEFAULT_EVENT_TYPES]);
    expect(c.eventType).toContain('v1.contactAttempt.created');
    expect(c.eventType).toContain('v1.patient.contactAttempt.created');
    expect(c.pageSize).toBeUndefined();
  });

  it('names every missing option with its env variable, all at once (exit 2)', () => {
    let err: unknown;
    try {
      resolveConfig({ baseUrl: 'http://127.0.0.1:1' }, ['events']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    expect(e.exitCode).toBe(2);
    for (const name of [
      '--auth-url (RECRUIT_ETL_AUTH_URL)',
      '--client-id (RECRUIT_ETL_CLIENT_ID)',
      'RECRUIT_ETL_CLIENT_SECRET_FILE',
      '--audience (RECRUIT_ETL_AUDIENCE)',
      '--trial-id (RECRUIT_ETL_TRIAL_ID)',
    ]) {
      expect(e.message).toContain(name);
    }
    expect(e.message).not.toContain('--base-url');
  });

  it('splits comma-separated lists from env vars and repeated flags', () => {
    expect(splitList('a, b,,c')).toEqual(['a', 'b', 'c']);
    expect(splitList(['a,b', 'c'])).toEqual(['a', 'b', 'c']);
    const c = resolveConfig({ trialId: ['T1,T2'], eventType: 'v1.patient.created' });
    expect(c.trialId).toEqual(['T1', 'T2']);
    expect(c.eventType).toEqual(['v1.patient.created']);
  });

  it('reads the secret from --client-secret-file and never echoes it', () => {
    const c = resolveConfig(
      { baseUrl: 'http://h:1', authUrl: 'http://h:1', clientId: 'id', audience: 'a', trialId: ['T'], clientSecretFile: '/run/secret' },
      ['events'],
      (p) => (p === '/run/secret' ? 'S3CRET\n' : ''),
    );
    expect(c.clientSecret).toBe('S3CRET');
  });

  it('rejects invalid values with the flag and env name', () => {
    expect(() => resolveConfig({ baseUrl: 'ftp://x' })).toThrow(/--base-url \(RECRUIT_ETL_BASE_URL\)/);
    expect(() => resolveConfig({ baseUrl: 'http://user:pw@x' })).toThrow(/without user info/);
    expect(() => resolveConfig({ pageSize: '0' })).toThrow(/--page-size/);
  });

  it('maps option names to env names', () => {
    expect(envName('clientSecretFile')).toBe('RECRUIT_ETL_CLIENT_SECRET_FILE');
    expect(envName('db')).toBe('RECRUIT_ETL_DB');
  });
});
