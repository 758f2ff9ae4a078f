/**
 * dbt parity: `dbt build` (dbt-duckdb, via dbt/dbt.sh) on a copy of a warehouse builds the
 * same tables as the job's runner, row for row (EXCEPT ALL both ways), and the dbt tests
 * and unit tests pass. Then a night: more events (late statuses, redeliveries, a new stream)
 * land in both files; the runner's incremental transform and an incremental `dbt run`
 * (is_incremental(), delete+insert, the watermark its on-run-end hook stored) again build the
 * same tables (docs/incremental.md "dbt"). Nothing is skipped: if the venv cannot be made,
 * this test fails.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { runTransform, type TransformResult } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { startMockApi } from '../../../packages/mock-api/src/index.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, insertRawEventsSql, type RawEventRow } from './fixture.js';

const DBT_TIMEOUT_MS = 15 * 60_000;

describe('dbt build equals the runner', () => {
  const tmp = tempDir('recruit-etl-dbt-');
  const runnerDb = join(tmp.dir, 'runner.duckdb');
  const dbtDb = join(tmp.dir, 'dbt_copy.duckdb');
  let built: TransformResult;
  let dbt: { status: number | null; stdout: string; stderr: string; ms: number };
  /** The simulator's events held back for the night. */
  let night: RawEventRow[] = [];

  const dbtRun = (command: string): { status: number | null; stdout: string; stderr: string; ms: number } => {
    const t0 = Date.now();
    const res = spawnSync(join(PACKAGE_ROOT, 'dbt', 'dbt.sh'), [command], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, RECRUIT_ETL_DB: dbtDb, DBT_LOG_PATH: join(tmp.dir, 'logs'), DBT_TARGET_PATH: join(tmp.dir, 'target') },
      encoding: 'utf8',
      timeout: DBT_TIMEOUT_MS,
    });
    const r = { status: res.status, stdout: res.stdout ?? '', stderr: res.stderr ?? String(res.error ?? ''), ms: Date.now() - t0 };
    console.log(`dbt ${command} took ${r.ms} ms`);
    return r;
  };

  /** Models and seeds whose rows or columns differ between the runner's file and dbt's. */
  const differences = async (names: readonly string[]): Promise<Record<string, unknown>> => {
    const wh = await Warehouse.open(runnerDb, { threads: 2 });
    try {
      // attached under its own name: dbt-duckdb's views name their catalog (dbt_copy)
      await wh.run(`attach '${dbtDb.replaceAll("'", "''")}' as dbt_copy (read_only)`);
      const diffs: Record<string, unknown> = {};
      for (const name of names) {
        const [row] = await wh.all<{ only_runner: bigint; only_dbt: bigint; runner_rows: bigint; dbt_rows: bigint }>(`
          select
            (select count(*) from (select * from main."${name}" except all select * from dbt_copy.main."${name}")) as only_runner,
            (select count(*) from (select * from dbt_copy.main."${name}" except all select * from main."${name}")) as only_dbt,
            (select count(*) from main."${name}") as runner_rows,
            (select count(*) from dbt_copy.main."${name}") as dbt_rows`);
        const cols = await wh.all<{ db: string; c: string; t: string }>(
          `select table_catalog as db, column_name as c, data_type as t from information_schema.columns
           where table_schema = 'main' and table_name = ? order by table_catalog, ordinal_position`,
          [name],
        );
        const runnerCols = cols.filter((c) => c.db !== 'dbt_copy').map((c) => `${c.c}:${c.t}`);
        const dbtCols = cols.filter((c) => c.db === 'dbt_copy').map((c) => `${c.c}:${c.t}`);
        if (row?.only_runner !== 0n || row?.only_dbt !== 0n || row?.runner_rows !== row?.dbt_rows || runnerCols.join() !== dbtCols.join()) {
          diffs[name] = { ...row, runnerCols, dbtCols };
        }
      }
      return diffs;
    } finally {
      await wh.close();
    }
  };

  beforeAll(async () => {
    const wh = await Warehouse.open(runnerDb, { threads: 2 });
    try {
      await wh.migrate();
      await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
      await wh.run(SITE_SNAPSHOTS_SQL);
      // Plus the simulator's stream (other trial ids) as a third stream: every edge case at volume.
      const api = await startMockApi({ seed: 11, patientsPerTrial: 80 });
      try {
        const sim: RawEventRow[] = api.truth.events.map((e, i) => ({
          stream_id: 'stream-sim',
          stream_position: i + 1,
          event_id: `sim-${e.id}`,
          event_type: e.eventType,
          published_time: e.publishedTime,
          message: (e.envelope['message'] ?? null) as Record<string, unknown> | null,
          typeKey: e.typeKey,
          extracted_at: '2026-06-01T00:00:00.000Z',
        }));
        // The last fifth waits for the night (below), with a few earlier events delivered again
        // and some on a stream that starts that night.
        const cut = Math.floor(sim.length * 0.8);
        for (let i = 0; i < cut; i += 500) await wh.run(insertRawEventsSql(sim.slice(i, Math.min(i + 500, cut))));
        night = sim.slice(cut).map((e, i) => (i % 3 === 0 ? { ...e, stream_id: 'stream-night', stream_position: i / 3 + 1 } : e));
        night = night.map((e) => ({ ...e, extracted_at: '2026-06-02T00:00:00.000Z' }));
        for (let i = 0; i < 40; i += 1) {
          night.push({
            ...sim[i * 7]!,
            stream_id: 'stream-sim',
            stream_position: sim.length + i + 1,
            extracted_at: '2026-06-02T00:00:00.000Z',
          });
        }
      } finally {
        await api.close();
      }
      await wh.checkpoint();
      copyFileSync(runnerDb, dbtDb);
      built = await runTransform(wh);
      await wh.checkpoint();
    } finally {
      await wh.close();
    }
    dbt = dbtRun('build');
  }, DBT_TIMEOUT_MS + 60_000);

  afterAll(() => tmp.cleanup());

  test('dbt build succeeds (models, seeds, data tests, unit tests)', () => {
    expect(dbt.status, `${dbt.stdout}\n${dbt.stderr}`).toBe(0);
  });

  test('every seed and model has the same rows in both builds', async () => {
    expect(dbt.status).toBe(0);
    const names = [...built.seeds.map((s) => s.name), ...built.models.map((m) => m.name)];
    expect(names.length).toBeGreaterThan(20);
    // the recruitment teams' views, the site names and their dq model are compared too
    expect(names).toEqual(
      expect.arrayContaining([
        'seed_site_names',
        'int_site_names',
        'int_patient_activities',
        'mart_site_activity',
        'mart_site_activity_monthly',
        'mart_open_referrals',
        'dq_unmapped_sites',
      ]),
    );
    expect(await differences(names)).toEqual({});
  });

  test(
    'after a night, the incremental runner and an incremental dbt run build the same tables',
    async () => {
      expect(dbt.status).toBe(0);
      for (const db of [runnerDb, dbtDb]) {
        const wh = await Warehouse.open(db, { threads: 2 });
        try {
          for (let i = 0; i < night.length; i += 500) await wh.run(insertRawEventsSql(night.slice(i, i + 500)));
          // dbt's on-run-end hook stored the watermark of its build, as the runner did
          const [w] = await wh.all<{ n: bigint }>(`select count(*) as n from etl.transform_watermarks`);
          expect(w?.n, db).toBe(3n);
        } finally {
          await wh.close();
        }
      }
      const wh = await Warehouse.open(runnerDb, { threads: 2 });
      let again: TransformResult;
      try {
        again = await runTransform(wh);
        await wh.checkpoint();
      } finally {
        await wh.close();
      }
      expect(again.mode).toBe('incremental');
      expect(again.newDeliveries).toBe(night.length);
      const run = dbtRun('run');
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      const names = [...again.seeds.map((s) => s.name), ...again.models.map((m) => m.name)].filter((n) => !n.startsWith('int_delta_'));
      expect(await differences(names)).toEqual({});
    },
    DBT_TIMEOUT_MS,
  );
});
