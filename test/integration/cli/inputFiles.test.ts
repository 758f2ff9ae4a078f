/**
 * The CLI as a process, with input files that are not what they should be (issue 25
 * "Secrets", issue 26 "Special files" and "A huge config value"; docs/contracts.md "Input
 * files"): a FIFO, /dev/zero, a folder or an oversized file as `--client-secret-file`,
 * `--config` or `--site-names` is exit 2 naming the option, at once and before the warehouse
 * is created; each child process has a deadline (SIGKILLed after 30 s, which fails the test).
 * Needs dist/ (`make build`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { runCli, type CliResult } from '../../helpers/cli.js';
import { envFor, startSim } from '../../helpers/sim.js';
import { tempDir } from '../../helpers/tmp.js';

const DEADLINE_MS = 30_000;

let api: MockApi;
const tmp = tempDir('recruit-etl-inputs-');
const fifo = join(tmp.dir, 'fifo');
beforeAll(async () => {
  api = await startSim({ seed: 7, patientsPerTrial: 3 });
  execFileSync('mkfifo', [fifo]);
});
afterAll(async () => {
  await api?.close();
  tmp.cleanup();
});

let n = 0;
/** A fresh warehouse path (not created) in its own folder. */
function freshDb(): string {
  const dir = join(tmp.dir, `w${++n}`);
  mkdirSync(dir);
  return join(dir, 'warehouse.duckdb');
}

/** Exit 2 within the deadline, the first stderr line naming `option`, and no warehouse file. */
async function expectRefused(args: string[], env: Record<string, string>, db: string, option: RegExp): Promise<CliResult> {
  const t0 = performance.now();
  const r = await runCli(args, env, { timeoutMs: DEADLINE_MS });
  expect(r.signal, r.stderr).toBeNull();
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(option);
  expect(performance.now() - t0).toBeLessThan(DEADLINE_MS);
  expect(existsSync(db), 'the warehouse was created').toBe(false);
  return r;
}

describe('--client-secret-file', () => {
  const label = /--client-secret-file \(RECRUIT_ETL_CLIENT_SECRET_FILE\): /;

  it('regression: a FIFO or /dev/zero as the secret file is exit 2 at once (was: hung for ever)', async () => {
    await Promise.all(
      [fifo, '/dev/zero'].map(async (path) => {
        const db = freshDb();
        const env = envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET: '', RECRUIT_ETL_CLIENT_SECRET_FILE: path });
        const r = await expectRefused(['extract'], env, db, label);
        expect(r.stderr).toContain(
          path === fifo ? 'is a FIFO (named pipe), not a regular file' : 'is a character device, not a regular file',
        );
      }),
    );
  });

  it('a folder and a file over 64 KiB are exit 2 naming the option', async () => {
    const big = join(tmp.dir, 'big-secret');
    writeFileSync(big, Buffer.alloc(64 * 1024 + 1, 0x61));
    await Promise.all(
      (
        [
          [tmp.dir, 'is a folder'],
          [big, 'over the 64 KiB limit'],
        ] as const
      ).map(async ([path, why]) => {
        const db = freshDb();
        const r = await expectRefused(
          ['extract', '--client-secret-file', path],
          envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET: '' }),
          db,
          label,
        );
        expect(r.stderr).toContain(why);
      }),
    );
  });

  it('regression: --client-secret-file on the command line beats a stale RECRUIT_ETL_CLIENT_SECRET (was: the variable won, exit 3)', async () => {
    const secret = join(tmp.dir, 'secret');
    writeFileSync(secret, `${api.options.clientSecret}\n`, { mode: 0o600 });
    const db = freshDb();
    const env = envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET: 'stale-secret-from-the-environment' });
    const r = await runCli(['extract', '--client-secret-file', secret], env, { timeoutMs: DEADLINE_MS });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(existsSync(db)).toBe(true);
  });

  it('both given at the same level is exit 2 naming both', async () => {
    const db = freshDb();
    const env = envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET_FILE: join(tmp.dir, 'secret') });
    const r = await expectRefused(
      ['extract'],
      env,
      db,
      /--client-secret \(RECRUIT_ETL_CLIENT_SECRET\) and --client-secret-file \(RECRUIT_ETL_CLIENT_SECRET_FILE\) are one setting/,
    );
    expect(r.stderr).not.toContain(api.options.clientSecret);
  });
});

describe('--config', () => {
  const label = /--config \(RECRUIT_ETL_CONFIG\): /;

  it('regression: a FIFO, /dev/zero, a folder or a file over 1 MiB as --config is exit 2 at once (was: hung for ever)', async () => {
    const big = join(tmp.dir, 'big.json');
    writeFileSync(big, JSON.stringify({ db: 'x'.repeat(1024 * 1024) }));
    await Promise.all(
      [fifo, '/dev/zero', tmp.dir, big].map(async (path) => {
        const db = freshDb();
        await expectRefused(['transform', '--db', db, '--config', path], {}, db, label);
      }),
    );
  });

  it('regression: a 50 MB environment value in --config is exit 2 (was: exit 7, the run row left running)', async () => {
    const huge = join(tmp.dir, 'huge.json');
    writeFileSync(huge, JSON.stringify({ environment: 'p'.repeat(50 * 1024 * 1024) }));
    const db = freshDb();
    // Under the file's limit, the option's own: 64 bytes for a label.
    const long = join(tmp.dir, 'long.json');
    writeFileSync(long, JSON.stringify({ environment: 'p'.repeat(100 * 1024) }));
    const db2 = freshDb();
    const [r, r2] = await Promise.all([
      expectRefused(['transform', '--db', db, '--config', huge], {}, db, label),
      expectRefused(
        ['transform', '--db', db2, '--config', long],
        {},
        db2,
        /--environment \(RECRUIT_ETL_ENVIRONMENT\): must be at most 64 bytes/,
      ),
    ]);
    expect(r.stderr).toContain('over the 1 MiB limit');
    expect(r2.stderr.length).toBeLessThan(2000);
  });
});

describe('--site-names', () => {
  const label = /--site-names \(RECRUIT_ETL_SITE_NAMES\): /;

  it('regression: --site-names /dev/zero is exit 2 before anything is written (was: std::bad_alloc, SIGABRT, run row left running)', async () => {
    await Promise.all(
      ['transform', 'run'].map(async (command) => {
        const db = freshDb();
        const r = await expectRefused([command, '--site-names', '/dev/zero'], envFor(api, db), db, label);
        expect(r.stderr).toContain('is a character device, not a regular file');
      }),
    );
  });

  it('a regular CSV, behind a symlink, is loaded from a private copy that is gone when the process ends', async () => {
    const csv = join(tmp.dir, 'names.csv');
    writeFileSync(csv, 'site_id,trial_id,site_name,sponsor_site_id\nX1,,Northside Clinic,SP-1\n');
    symlinkSync(csv, join(tmp.dir, 'names-link.csv'));
    const scratch = join(tmp.dir, 'scratch');
    mkdirSync(scratch);
    const db = freshDb();
    const r = await runCli(
      ['transform', '--db', db, '--site-names', join(tmp.dir, 'names-link.csv')],
      { TMPDIR: scratch, RECRUIT_ETL_LOG_LEVEL: 'warn' },
      { timeoutMs: DEADLINE_MS },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      expect(await wh.all('select site_id, site_name from main.seed_site_names')).toEqual([
        { site_id: 'X1', site_name: 'Northside Clinic' },
      ]);
    } finally {
      await wh.close();
    }
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('a FIFO, a folder or a CSV over 16 MiB is exit 2 naming the option', async () => {
    const big = join(tmp.dir, 'big.csv');
    writeFileSync(big, `site_id,trial_id,site_name,sponsor_site_id\n${'S,T,N,P\n'.repeat(2_400_000)}`);
    await Promise.all(
      [fifo, tmp.dir, big].map(async (path) => {
        const db = freshDb();
        await expectRefused(['run', '--site-names', path], envFor(api, db), db, label);
      }),
    );
  });
});
