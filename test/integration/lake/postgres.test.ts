import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgBinDir, startPostgres, type PgCluster } from '../../helpers/postgres.js';

describe('private PostgreSQL cluster (test/helpers/postgres.ts)', () => {
  let pg: PgCluster;
  beforeAll(async () => {
    pg = await startPostgres();
  }, 120_000);
  afterAll(() => pg?.stop());

  it('serves SQL on a loopback port and its folder goes when stopped', () => {
    pg.createDb('probe');
    const out = execFileSync(
      join(pgBinDir(), 'psql'),
      ['-h', '127.0.0.1', '-p', String(pg.port), '-U', pg.user, '-d', 'probe', '-Atc', 'select 40 + 2'],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('42');
    const dir = pg.dir;
    pg.stop();
    expect(existsSync(dir)).toBe(false);
  });
});
