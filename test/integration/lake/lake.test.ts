/**
 * Publishing into a DuckLake whose catalog is a real, private PostgreSQL (docs/lakehouse.md):
 * the CLI runs as a child process; this process reads the lake with its own DuckDB instance,
 * as an analyst on another machine would.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { Warehouse, sqlString } from '../../../src/warehouse/Warehouse.js';
import { runCli, type CliResult } from '../../helpers/cli.js';
import type { PgCluster } from '../../helpers/postgres.js';
import { envFor } from '../../helpers/sim.js';
import { loadLakeExtensions } from '../../../src/publish/lake.js';
import { tempDir } from '../../helpers/tmp.js';
import { startLake, stopLake } from '../../helpers/lake.js';

const RUN_TIMEOUT_MS = 120_000;

describe('publish into a DuckLake on a private PostgreSQL (docs/lakehouse.md)', { timeout: 300_000 }, () => {
  let pg: PgCluster;
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  let reader: Warehouse;
  let lake: string;
  let dataPath: string;

  const env = (pipeline: string, extra: Record<string, string> = {}): Record<string, string> =>
    envFor(api, join(tmp.dir, pipeline, 'warehouse.duckdb'), {
      RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, pipeline, 'exports'),
      RECRUIT_ETL_LAKE: lake,
      RECRUIT_ETL_LAKE_DATA_PATH: dataPath,
      RECRUIT_ETL_LAKE_SCHEMA: pipeline,
      RECRUIT_ETL_LOG_LEVEL: 'info',
      ...extra,
    });
  const run = (pipeline: string, extra: Record<string, string> = {}, command = 'run'): Promise<CliResult> =>
    runCli([command], env(pipeline, extra), { timeoutMs: RUN_TIMEOUT_MS });
  const ok = (r: CliResult): void => {
    expect(r.code, `exit ${r.code} ${r.signal ?? ''}\n${r.stderr}\n${r.stdout.slice(-3000)}`).toBe(0);
  };
  const n = async (sql: string): Promise<number> => Number((await reader.one<{ n: bigint }>(sql))?.n ?? -1);
  /** What the local warehouse of `pipeline` holds: raw events and rows per exported model. */
  const local = async (pipeline: string): Promise<{ events: number; models: Record<string, number> }> => {
    const wh = await Warehouse.open(join(tmp.dir, pipeline, 'warehouse.duckdb'), { readOnly: true });
    try {
      const events = Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))?.n);
      const names = await wh.all<{ t: string }>(
        "select table_name as t from information_schema.tables where table_schema = 'main' and regexp_matches(table_name, '^(fct|dim|mart|dq)_') order by 1",
      );
      const models: Record<string, number> = {};
      for (const { t } of names) models[t] = Number((await wh.one<{ n: bigint }>(`select count(*) as n from main."${t}"`))?.n);
      return { events, models };
    } finally {
      await wh.close();
    }
  };
  /** Rows that differ, either way, between each exported model of `pipeline`'s warehouse and its lake table (0: the same). */
  const differences = async (pipeline: string): Promise<Record<string, number>> => {
    const { models } = await local(pipeline);
    await reader.run(`attach ${sqlString(join(tmp.dir, pipeline, 'warehouse.duckdb'))} as loc (read_only)`);
    try {
      const out: Record<string, number> = {};
      for (const m of Object.keys(models)) {
        const a = `rl.${pipeline}."${m}"`;
        const b = `loc.main."${m}"`;
        out[m] = await n(
          `select (select count(*) from (select * from ${a} except all select * from ${b})) + (select count(*) from (select * from ${b} except all select * from ${a})) as n`,
        );
      }
      return out;
    } finally {
      await reader.run('detach loc');
    }
  };
  /** What the last run of `pipeline` recorded of its publish. */
  const lastPublish = async (pipeline: string): Promise<{ models: string[]; merged: string[] }> => {
    const wh = await Warehouse.open(join(tmp.dir, pipeline, 'warehouse.duckdb'), { readOnly: true });
    try {
      const row = await wh.one<{ s: string }>('select summary::varchar as s from etl.runs order by started_at desc limit 1');
      return (JSON.parse(row?.s ?? '{}') as { publish: { models: string[]; merged: string[] } }).publish;
    } finally {
      await wh.close();
    }
  };
  const snapshots = async (): Promise<number> => n('select max(snapshot_id) as n from rl.snapshots()');

  beforeAll(async () => {
    ({ pg, api, tmp, reader, lake } = await startLake('recruit-etl-lake-', { seed: 23, patientsPerTrial: 80, releaseFraction: 0.5 }));
    dataPath = join(tmp.dir, 'lake-data');
  }, 120_000);

  afterAll(async () => {
    await stopLake({ pg, api, tmp, reader });
  });

  it('a run publishes raw events and models; a second process reads the same counts', async () => {
    ok(await run('alpha'));
    // The reader attaches after the first publish created the lake (no DATA_PATH needed then).
    await reader.run(`attach ${sqlString(lake)} as rl (read_only)`);
    const mine = await local('alpha');
    expect(mine.events).toBeGreaterThan(0);
    expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(mine.events);
    expect(await n('select count(distinct (stream_id, stream_position)) as n from rl.alpha.raw_events')).toBe(mine.events);
    expect(Object.keys(mine.models).length).toBeGreaterThan(3);
    for (const [model, rows] of Object.entries(mine.models))
      expect(await n(`select count(*) as n from rl.alpha."${model}"`), model).toBe(rows);
    // The publish is one snapshot, named after the run; a new pipeline's views follow in one more.
    const msgs = await reader.all<{ m: string }>('select commit_message as m from rl.snapshots() order by snapshot_id desc limit 2');
    expect(msgs[1]?.m).toMatch(/^publish alpha run /);
    expect(msgs[0]?.m).toMatch(/^all_pipelines views after publish alpha run /);
  });

  it('a reader holding a snapshot keeps reading it while a publish commits; time travel reaches it after', async () => {
    const before = await n('select count(*) as n from rl.alpha.raw_events');
    const version = await snapshots();
    await reader.run('begin transaction');
    try {
      expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(before);
      expect(api.grow(150)).toBeGreaterThan(0);
      ok(await run('alpha'));
      // Same transaction: the snapshot it began with, not the new one.
      expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(before);
    } finally {
      await reader.run('commit');
    }
    const after = await n('select count(*) as n from rl.alpha.raw_events');
    expect(after).toBe((await local('alpha')).events);
    expect(after).toBeGreaterThan(before);
    expect(await n(`select count(*) as n from rl.alpha.raw_events at (version => ${version})`)).toBe(before);
    // A night merges the incremental facts by key and replaces the rest; both equal the local models row for row.
    const published = await lastPublish('alpha');
    expect(published.merged).toEqual(expect.arrayContaining(['fct_contact_attempts', 'fct_patient_status_history']));
    expect(published.models.length).toBeGreaterThan(published.merged.length);
    expect(
      Object.values(await differences('alpha')).every((d) => d === 0),
      JSON.stringify(await differences('alpha')),
    ).toBe(true);
  });

  it('two pipelines publish into one lake side by side; all_pipelines reads across them', async () => {
    ok(await run('beta', { RECRUIT_ETL_ENVIRONMENT: 'production' }));
    const a = (await local('alpha')).events;
    const b = (await local('beta')).events;
    expect(await n('select count(*) as n from rl.beta.raw_events')).toBe(b);
    expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(a);
    const per = await reader.all<{ pipeline: string; n: bigint }>(
      'select pipeline, count(*) as n from rl.all_pipelines.raw_events group by 1 order by 1',
    );
    expect(per.map((r) => [r.pipeline, Number(r.n)])).toEqual([
      ['alpha', a],
      ['beta', b],
    ]);
    const marts = await reader.all<{ pipeline: string }>('select distinct pipeline from rl.all_pipelines.fct_patient_funnel order by 1');
    expect(marts.map((r) => r.pipeline)).toEqual(['alpha', 'beta']);
    // Both publish again at the same time, each into its own schema: both succeed.
    api.grow(100);
    const [ra, rb] = await Promise.all([run('alpha'), run('beta', { RECRUIT_ETL_ENVIRONMENT: 'production' })]);
    ok(ra);
    ok(rb);
    expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe((await local('alpha')).events);
    expect(await n('select count(*) as n from rl.beta.raw_events')).toBe((await local('beta')).events);
  });

  it('a second publisher on the same schema fails with exit 5 and loses nothing', async () => {
    api.grow(50);
    ok(await run('alpha', {}, 'extract'));
    // Another publisher of schema alpha holds its lock (inside its transaction).
    const holder = await Warehouse.open(':memory:');
    try {
      await loadLakeExtensions(holder, true);
      await holder.run(`attach ${sqlString(pg.conninfo('lake'))} as lockpg (type postgres)`);
      await holder.run('begin transaction');
      const got = await holder.one<{ got: boolean }>(
        "select got from postgres_query('lockpg', 'select pg_try_advisory_xact_lock(hashtext(''recruit-etl publish alpha'')) as got')",
      );
      expect(got?.got).toBe(true);
      const before = await snapshots();
      const refused = await run('alpha', {}, 'publish');
      expect(refused.code).toBe(5);
      expect(refused.stderr).toMatch(/lake schema alpha is being published by another process/);
      expect(await snapshots()).toBe(before);
      await holder.run('commit');
    } finally {
      await holder.close();
    }
    ok(await run('alpha', {}, 'publish'));
    const mine = await local('alpha');
    expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(mine.events);
    expect(await n('select count(distinct (stream_id, stream_position)) as n from rl.alpha.raw_events')).toBe(mine.events);
  });

  it('two publishers of one schema at the same instant: each exits 0 or 5, and the lake holds every event once', async () => {
    api.grow(60);
    ok(await run('alpha', {}, 'extract'));
    // A twin of the warehouse (another pod of the same pipeline) publishing into the same schema.
    mkdirSync(join(tmp.dir, 'alpha-twin'), { recursive: true });
    copyFileSync(join(tmp.dir, 'alpha', 'warehouse.duckdb'), join(tmp.dir, 'alpha-twin', 'warehouse.duckdb'));
    const before = await snapshots();
    const both = await Promise.all([run('alpha', {}, 'publish'), run('alpha-twin', { RECRUIT_ETL_LAKE_SCHEMA: 'alpha' }, 'publish')]);
    for (const r of both) expect([0, 5], `${r.code} ${r.stderr}`).toContain(r.code);
    expect(both.some((r) => r.code === 0)).toBe(true);
    for (const r of both.filter((x) => x.code === 5)) expect(r.stderr).toMatch(/lake schema alpha is being published by another process/);
    // One publish of the delta: one snapshot, every event once.
    expect(await snapshots()).toBe(before + 1);
    const mine = await local('alpha');
    expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(mine.events);
    expect(await n('select count(distinct (stream_id, stream_position)) as n from rl.alpha.raw_events')).toBe(mine.events);
  });

  it('publish without --lake is exit 2 naming the option; an unreachable catalog is exit 7 without its password', async () => {
    const missing = await run('alpha', { RECRUIT_ETL_LAKE: '' }, 'publish');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--lake (RECRUIT_ETL_LAKE)');
    const down = await run(
      'alpha',
      { RECRUIT_ETL_LAKE: `ducklake:postgres:dbname=lake host=127.0.0.1 port=1 user=recruit password=Sesame-42 connect_timeout=2` },
      'publish',
    );
    expect(down.code, down.stderr).toBe(7);
    expect(down.stderr).toMatch(/cannot attach the lake/);
    expect(down.stderr + down.stdout).not.toContain('Sesame-42');
  });

  for (const point of ['lake.mid-publish', 'lake.before-commit']) {
    it(`a publish killed at ${point} leaves the previous snapshot intact; the next run completes it`, async () => {
      const before = await n('select count(*) as n from rl.alpha.raw_events');
      const version = await snapshots();
      api.grow(120);
      const killed = await run('alpha', { RECRUIT_ETL_FAILPOINT: `${point}:1` });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(await snapshots()).toBe(version);
      expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(before);
      const mine = await local('alpha');
      expect(mine.events).toBeGreaterThan(before);
      ok(await run('alpha'));
      expect(await n('select count(*) as n from rl.alpha.raw_events')).toBe(mine.events);
      expect(await n('select count(distinct (stream_id, stream_position)) as n from rl.alpha.raw_events')).toBe(mine.events);
      const now = await local('alpha');
      for (const [model, rows] of Object.entries(now.models))
        expect(await n(`select count(*) as n from rl.alpha."${model}"`), model).toBe(rows);
      const diff = await differences('alpha');
      expect(
        Object.values(diff).every((d) => d === 0),
        JSON.stringify(diff),
      ).toBe(true);
    });
  }
});
