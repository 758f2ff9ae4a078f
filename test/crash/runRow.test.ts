/**
 * The run row is the truth (docs/contracts.md guarantee 2, "The run row is the truth"): a run
 * is `succeeded` in etl.runs only once everything it does succeeded (checkpoint, published
 * copy, metrics file), and the exit code agrees with the row.
 *
 * - A metrics folder that is read-only (as systemd's `ProtectSystem=strict` makes it; here a
 *   read-only bind mount in a mount namespace of the CLI's own, `unshare -m`) is exit 7 and a
 *   `failed` row; the previous published copy stays.
 * - A transform whose published copy runs out of space (a small tmpfs) is exit 7 and never a
 *   `succeeded` row.
 * - SIGKILL at the failpoints of the finish path leaves the row `running`, which the next
 *   command closes as `abandoned`.
 * - The copy put in place before the live row is recorded: killed there, the next command
 *   puts the previous copy back (none before: removes it); recording the live row fails
 *   (failpoint `run.before-succeeded` armed to throw): the previous copy goes back at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { readSeries } from '../../src/metrics/metricsFile.js';
import { keptCopyPath, publishedCopyPath } from '../../src/warehouse/publishCopy.js';
import { CLI, ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { withReadOnly } from '../helpers/crash.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

interface RunRow {
  run_id: string;
  command: string;
  status: string;
  error: string | null;
}

/** etl.runs of `db`, oldest first. */
function runs(db: string): Promise<RunRow[]> {
  return withReadOnly(db, (wh) => wh.all<RunRow>('select run_id, command, status, error from etl.runs order by started_at'));
}

/** Files beside `db` that keep a previous published copy aside (`<copy>.previous.<runId>`, `….none`). */
function keptFiles(db: string): string[] {
  return readdirSync(dirname(db)).filter((f) => f.includes('.previous.'));
}

/**
 * Run the built CLI in a mount namespace of its own where `setup` (shell commands, run as
 * root before the CLI) changed the mounts: a read-only bind mount, a small tmpfs; `after`
 * runs there once the CLI ended (its exit code is the result's).
 */
function runCliMounted(setup: string, args: string[], env: Record<string, string>, after = ':', timeoutMs = 60_000): Promise<CliResult> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && v !== undefined) base[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(
      'unshare',
      ['-m', 'sh', '-c', `set -e\n${setup}\nset +e\n"$@"\nrc=$?\n${after}\nexit $rc`, 'sh', process.execPath, CLI, ...args],
      {
        cwd: ROOT,
        env: { ...base, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('the run row is the truth: succeeded only after the copy and the metrics file', () => {
  let api: MockApi;
  const tmp = tempDir('recruit-etl-runrow-');
  /** A warehouse after one good `run` (its published copy beside it). */
  const base = join(tmp.dir, 'base', 'warehouse.duckdb');
  const env = (db: string, extra: Record<string, string> = {}): Record<string, string> =>
    envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports'), RECRUIT_ETL_LOG_LEVEL: 'warn', ...extra });

  beforeAll(async () => {
    api = await startSim({ seed: 23, patientsPerTrial: 12 });
    mkdirSync(join(tmp.dir, 'base'));
    const r = await runCli(['run'], env(base));
    if (r.code !== 0) throw new Error(`the base run failed (${r.code}): ${r.stderr}`);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    tmp.cleanup();
  });

  /** A copy of the base warehouse (and of its published copy) in a folder of its own. */
  const fresh = (name: string): string => {
    mkdirSync(join(tmp.dir, name));
    const db = join(tmp.dir, name, 'warehouse.duckdb');
    copyFileSync(base, db);
    copyFileSync(publishedCopyPath(base), publishedCopyPath(db));
    return db;
  };

  it('a successful run: the published copy records it succeeded, the metrics file says exit 0, then the live row', async () => {
    const db = fresh('ok');
    const metrics = join(tmp.dir, 'ok', 'textfile', 'recruit_etl.prom');
    const r = await runCli(['transform'], env(db, { RECRUIT_ETL_METRICS_FILE: metrics }));
    expect(r.code, r.stderr).toBe(0);
    const live = await runs(db);
    expect(live.at(-1)).toMatchObject({ command: 'transform', status: 'succeeded' });
    const inCopy = await runs(publishedCopyPath(db));
    expect(inCopy.at(-1)).toMatchObject({ run_id: live.at(-1)!.run_id, status: 'succeeded' });
    expect(existsSync(`${publishedCopyPath(db)}.wal`)).toBe(false);
    // The previous copy, kept aside until the live row said succeeded, is gone.
    expect(keptFiles(db)).toEqual([]);
    const m = readSeries(readFileSync(metrics, 'utf8'));
    expect(m.get('recruit_etl_last_exit_code')).toEqual([{ labels: { command: 'transform' }, value: 0 }]);
    expect(statSync(metrics).mode & 0o777).toBe(0o644);
  });

  it('a read-only metrics folder (ProtectSystem=strict) is exit 7 and a failed row, no longer a warning with exit 0', async () => {
    const db = fresh('ro');
    const textfile = join(tmp.dir, 'ro', 'textfile');
    mkdirSync(textfile);
    const copyBefore = readFileSync(publishedCopyPath(db));
    const r = await runCliMounted(
      `mount --bind '${textfile}' '${textfile}'\nmount -o remount,bind,ro '${textfile}'`,
      ['run'],
      env(db, { RECRUIT_ETL_METRICS_FILE: join(textfile, 'recruit_etl.prom'), RECRUIT_ETL_LOG_LEVEL: 'info' }),
    );
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/cannot write the metrics file .*recruit_etl\.prom: EROFS/);
    const last = (await runs(db)).at(-1)!;
    expect(last).toMatchObject({ command: 'run', status: 'failed' });
    expect(last.error).toMatch(/metrics file.*EROFS/);
    // The copy is put in place after the metrics file: the previous one stays.
    expect(readFileSync(publishedCopyPath(db)).equals(copyBefore)).toBe(true);
    expect(r.stdout).not.toMatch(/"msg":"run finished"/);
  }, 120_000);

  it('a transform whose published copy runs out of space is exit 7, never a succeeded row', async () => {
    const src = fresh('enospc-src');
    const dir = join(tmp.dir, 'enospc');
    mkdirSync(dir);
    const db = join(dir, 'warehouse.duckdb');
    // Room for the database and its WAL, not for a second copy of it.
    const sizeKiB = Math.ceil((statSync(src).size * 1.5) / 1024) + 256;
    const out = join(tmp.dir, 'enospc-after');
    mkdirSync(out);
    // The tmpfs goes with the namespace: the database (and its WAL) is copied out of it first.
    const r = await runCliMounted(
      `mount -t tmpfs -o size=${sizeKiB}k tmpfs '${dir}'\ncp '${src}' '${db}'`,
      ['transform', '--full-refresh'],
      env(db),
      `cp '${db}' '${out}/'; if [ -f '${db}.wal' ]; then cp '${db}.wal' '${out}/'; fi`,
    );
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/ENOSPC|No space left|disk/i);
    const last = (await runs(join(out, 'warehouse.duckdb'))).at(-1)!;
    expect(last.command).toBe('transform');
    // `failed` when the row could still be written; `running` (closed as abandoned by the next command) when not.
    expect(['failed', 'running']).toContain(last.status);
    if (last.status === 'running') {
      // The next command (with room again) closes it as abandoned, saying why it may be.
      const again = await runCli(['transform'], env(join(out, 'warehouse.duckdb')));
      expect(again.code, again.stderr).toBe(0);
      const closed = (await runs(join(out, 'warehouse.duckdb'))).find((x) => x.run_id === last.run_id)!;
      expect(closed.status).toBe('abandoned');
      expect(closed.error).toMatch(/without recording an outcome \(killed, or the warehouse failed/);
    }
    console.log(`ENOSPC transform: exit ${r.code}, row ${last.status}, stderr: ${r.stderr.trim()}`);
  }, 120_000);

  it('a published copy that cannot be put in place is exit 7, a failed row, and the metrics file says 7', async () => {
    const db = fresh('copy-blocked');
    const metrics = join(tmp.dir, 'copy-blocked', 'recruit_etl.prom');
    const ok = await runCli(['transform'], env(db, { RECRUIT_ETL_METRICS_FILE: metrics }));
    expect(ok.code, ok.stderr).toBe(0);
    const series = (): ReturnType<typeof readSeries> => readSeries(readFileSync(metrics, 'utf8'));
    const lastSuccess = series().get('recruit_etl_last_success_timestamp_seconds');
    expect(lastSuccess).toHaveLength(1);
    rmSync(publishedCopyPath(db));
    mkdirSync(join(publishedCopyPath(db), 'x'), { recursive: true }); // a folder where the copy goes: the rename fails
    const failedStarted = Date.now() / 1000;
    const r = await runCli(['transform'], env(db, { RECRUIT_ETL_METRICS_FILE: metrics }));
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/cannot publish the read-only copy/);
    expect((await runs(db)).at(-1)).toMatchObject({ command: 'transform', status: 'failed' });
    // Written with 0 before the rename, then again with the command's real outcome.
    expect(series().get('recruit_etl_last_exit_code')).toEqual([{ labels: { command: 'transform' }, value: 7 }]);
    // The second write replaces the first one's outcome: the failed run is no success.
    expect(series().get('recruit_etl_last_success_timestamp_seconds')).toEqual(lastSuccess);
    // The warehouse's last success is the first transform (as etl.runs recorded it), not this one.
    expect(series().get('recruit_etl_last_successful_run_timestamp_seconds')![0]!.value).toBeLessThan(failedStarted);
  });

  for (const point of ['run.before-metrics', 'run.before-succeeded'] as const) {
    it(`SIGKILL at ${point}: the row stays running, the next command closes it as abandoned`, async () => {
      const db = fresh(point);
      const metrics = join(tmp.dir, point, 'recruit_etl.prom');
      const killed = await runCli(['transform'], env(db, { RECRUIT_ETL_METRICS_FILE: metrics, RECRUIT_ETL_FAILPOINT: `${point}:1` }));
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      const atKill = (await runs(db)).at(-1)!;
      expect(atKill).toMatchObject({ command: 'transform', status: 'running' });
      // Before the metrics: no file yet; after: it says 0 (the metrics file is written first).
      expect(existsSync(metrics)).toBe(point === 'run.before-succeeded');
      const again = await runCli(['transform'], env(db));
      expect(again.code, again.stderr).toBe(0);
      const after = await runs(db);
      expect(after.find((x) => x.run_id === atKill.run_id)!.status).toBe('abandoned');
      expect(after.at(-1)!.status).toBe('succeeded');
      expect(keptFiles(db)).toEqual([]);
    }, 120_000);
  }

  for (const next of ['export', 'streams retire'] as const) {
    it(`SIGKILL at run.before-succeeded, then \`${next}\` (which publishes no copy): the previous copy is back in place`, async () => {
      const db = fresh(`killed-keep-${next.replace(' ', '-')}`);
      const copy = publishedCopyPath(db);
      const copyBefore = readFileSync(copy);
      const killed = await runCli(['transform'], env(db, { RECRUIT_ETL_FAILPOINT: 'run.before-succeeded:1' }));
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      const atKill = (await runs(db)).at(-1)!;
      expect(atKill).toMatchObject({ command: 'transform', status: 'running' });
      // At the kill, the copy in place calls the run succeeded; the one before is kept aside.
      expect((await runs(copy)).at(-1)).toMatchObject({ run_id: atKill.run_id, status: 'succeeded' });
      expect(keptFiles(db)).toEqual([`${keptCopyPath(copy, atKill.run_id).split('/').pop()}`]);
      expect(readFileSync(keptCopyPath(copy, atKill.run_id)).equals(copyBefore)).toBe(true);
      // Neither command publishes a copy: what readers find is the copy put back.
      const stream = await withReadOnly(
        db,
        async (wh) => (await wh.one<{ id: string }>('select stream_id as id from etl.streams limit 1'))!.id,
      );
      const again = await runCli(next === 'export' ? ['export'] : ['streams', 'retire', stream, '--yes'], env(db));
      expect(again.code, again.stderr).toBe(0);
      // A pipeline command closes the killed run's row; `streams retire` records no run.
      expect((await runs(db)).find((x) => x.run_id === atKill.run_id)!.status).toBe(next === 'export' ? 'abandoned' : 'running');
      expect(readFileSync(copy).equals(copyBefore)).toBe(true);
      expect((await runs(copy)).map((x) => x.run_id)).not.toContain(atKill.run_id);
      expect(keptFiles(db)).toEqual([]);
    }, 120_000);
  }

  it('the live row cannot be recorded succeeded: exit 7, a failed row, the previous copy back in place', async () => {
    const db = fresh('record-fails');
    const metrics = join(tmp.dir, 'record-fails', 'recruit_etl.prom');
    const copy = publishedCopyPath(db);
    const copyBefore = readFileSync(copy);
    const r = await runCli(
      ['transform'],
      env(db, { RECRUIT_ETL_METRICS_FILE: metrics, RECRUIT_ETL_FAILPOINT: 'run.before-succeeded:1:throw' }),
    );
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/failpoint run\.before-succeeded/);
    const last = (await runs(db)).at(-1)!;
    expect(last).toMatchObject({ command: 'transform', status: 'failed' });
    expect(readFileSync(copy).equals(copyBefore)).toBe(true);
    expect((await runs(copy)).map((x) => x.run_id)).not.toContain(last.run_id);
    expect(keptFiles(db)).toEqual([]);
    const m = readSeries(readFileSync(metrics, 'utf8'));
    expect(m.get('recruit_etl_last_exit_code')).toEqual([{ labels: { command: 'transform' }, value: 7 }]);
  }, 120_000);

  for (const mode of ['kill', 'throw'] as const) {
    it(`the first run ever, ${mode === 'kill' ? 'killed' : 'failing to record its live row'} at run.before-succeeded: no copy claims its success`, async () => {
      const dir = join(tmp.dir, `first-${mode}`);
      mkdirSync(dir);
      const db = join(dir, 'warehouse.duckdb');
      const copy = publishedCopyPath(db);
      const failpoint = `run.before-succeeded:1${mode === 'throw' ? ':throw' : ''}`;
      const r = await runCli(['run'], env(db, { RECRUIT_ETL_FAILPOINT: failpoint }));
      const first = (await runs(db)).at(-1)!;
      if (mode === 'kill') {
        expect(r.signal, r.stderr).toBe('SIGKILL');
        // No copy before: a marker says so, and the copy in place is this run's.
        expect(keptFiles(db)).toEqual([`${keptCopyPath(copy, first.run_id).split('/').pop()}.none`]);
        expect((await runs(copy)).at(-1)).toMatchObject({ run_id: first.run_id, status: 'succeeded' });
        const again = await runCli(['export'], env(db));
        expect(again.code, again.stderr).toBe(0);
        expect((await runs(db)).find((x) => x.run_id === first.run_id)!.status).toBe('abandoned');
      } else {
        expect(r.code, r.stderr).toBe(7);
        expect(first.status).toBe('failed');
      }
      expect(existsSync(copy)).toBe(false);
      expect(keptFiles(db)).toEqual([]);
    }, 120_000);
  }
});
