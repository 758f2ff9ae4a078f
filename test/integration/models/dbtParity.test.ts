/**
 * dbt parity: `dbt build` (dbt-duckdb, via dbt/dbt.sh) on a copy of a warehouse builds the
 * same tables as the job's runner, row for row (EXCEPT ALL both ways), and the dbt tests
 * and unit tests pass. Nothing is skipped: if the venv cannot be made, this test fails.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { runTransform, type TransformResult } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { startMockApi } from '../../../src/simulator/index.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, insertRawEventsSql, type RawEventRow } from './fixture.js';

const DBT_TIMEOUT_MS = 15 * 60_000;

describe('dbt build equals the runner', () => {
  const tmp = tempDir('recruit-etl-dbt-');
  const runnerDb = join(tmp.dir, 'runner.duckdb');
  const dbtDb = join(tmp.dir, 'dbt_copy.duckdb');
  let built: TransformResult;
  let dbt: { status: number | null; stdout: string; stderr: string; ms: number };

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
        for (let i = 0; i < sim.length; i += 500) await wh.run(insertRawEventsSql(sim.slice(i, i + 500)));
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
    const t0 = Date.now();
    const res = spawnSync(join(PACKAGE_ROOT, 'dbt', 'dbt.sh'), ['build'], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, RECRUIT_ETL_DB: dbtDb, DBT_LOG_PATH: join(tmp.dir, 'logs'), DBT_TARGET_PATH: join(tmp.dir, 'target') },
      encoding: 'utf8',
      timeout: DBT_TIMEOUT_MS,
    });
    dbt = { status: res.status, stdout: res.stdout ?? '', stderr: res.stderr ?? String(res.error ?? ''), ms: Date.now() - t0 };
    console.log(`dbt build took ${dbt.ms} ms`);
  }, DBT_TIMEOUT_MS + 60_000);

  afterAll(() => tmp.cleanup());

  test('dbt build succeeds (models, seeds, data tests, unit tests)', () => {
    expect(dbt.status, `${dbt.stdout}\n${dbt.stderr}`).toBe(0);
  });

  test('every seed and model has the same rows in both builds', async () => {
    expect(dbt.status).toBe(0);
    const wh = await Warehouse.open(runnerDb, { threads: 2 });
    try {
      await wh.run(`attach '${dbtDb.replaceAll("'", "''")}' as dbt_build (read_only)`);
      const names = [...built.seeds.map((s) => s.name), ...built.models.map((m) => m.name)];
      expect(names.length).toBeGreaterThan(20);
      // the recruitment teams' views, the site names and their dq model are compared too
      expect(names).toEqual(expect.arrayContaining(['seed_site_names', 'int_site_names', 'int_patient_activities', 'mart_site_activity', 'mart_site_activity_monthly', 'mart_open_referrals', 'dq_unmapped_sites']));
      const diffs: Record<string, unknown> = {};
      for (const name of names) {
        const [row] = await wh.all<{ only_runner: bigint; only_dbt: bigint; runner_rows: bigint; dbt_rows: bigint }>(`
          select
            (select count(*) from (select * from main."${name}" except all select * from dbt_build.main."${name}")) as only_runner,
            (select count(*) from (select * from dbt_build.main."${name}" except all select * from main."${name}")) as only_dbt,
            (select count(*) from main."${name}") as runner_rows,
            (select count(*) from dbt_build.main."${name}") as dbt_rows`);
        const cols = await wh.all<{ db: string; c: string; t: string }>(
          `select table_catalog as db, column_name as c, data_type as t from information_schema.columns
           where table_schema = 'main' and table_name = ? order by table_catalog, ordinal_position`,
          [name],
        );
        const runnerCols = cols.filter((c) => c.db !== 'dbt_build').map((c) => `${c.c}:${c.t}`);
        const dbtCols = cols.filter((c) => c.db === 'dbt_build').map((c) => `${c.c}:${c.t}`);
        if (row?.only_runner !== 0n || row?.only_dbt !== 0n || row?.runner_rows !== row?.dbt_rows || runnerCols.join() !== dbtCols.join()) {
          diffs[name] = { ...row, runnerCols, dbtCols };
        }
      }
      expect(diffs).toEqual({});
    } finally {
      await wh.close();
    }
  });
});
