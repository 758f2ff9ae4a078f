/**
 * The lake's names (docs/lakehouse.md "One schema, one pipeline"): a warehouse file named like
 * the lake schema publishes (the lake is attached under a name no schema or file takes, the
 * views are written from a session of their own), and a second warehouse whose environment
 * differs only in case is refused the schema unless the operator says it is the same pipeline
 * moved. Against a real, private PostgreSQL 15 catalog; the CLI runs as a child process.
 */
import { mkdirSync } from 'node:fs';
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

describe('the lake names its catalog; one schema, one pipeline', { timeout: 300_000 }, () => {
  let pg: PgCluster;
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  let reader: Warehouse;
  let lake: string;

  /** The CLI on warehouse `<tmp>/<dir>/<file>` with `--environment env` and no `--lake-schema` (the default). */
  const run = (
    dir: string,
    file: string,
    environment: string,
    extra: Record<string, string> = {},
    command = 'run',
    flags: string[] = [],
  ): Promise<CliResult> => {
    mkdirSync(join(tmp.dir, dir), { recursive: true });
    return runCli(
      [command, ...flags],
      envFor(api, join(tmp.dir, dir, file), {
        RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, dir, 'exports'),
        RECRUIT_ETL_LAKE: lake,
        RECRUIT_ETL_LAKE_DATA_PATH: join(tmp.dir, 'lake-data'),
        RECRUIT_ETL_ENVIRONMENT: environment,
        ...extra,
      }),
      { timeoutMs: RUN_TIMEOUT_MS },
    );
  };
  const ok = (r: CliResult): void => {
    expect(r.code, `exit ${r.code} ${r.signal ?? ''}\n${r.stderr}\n${r.stdout.slice(-3000)}`).toBe(0);
  };
  /** Attach the lake read-only as `rl` once it exists (after a first publish): each test may run alone (-t). */
  const attachReader = async (): Promise<void> => {
    await reader.run(`attach if not exists ${sqlString(lake)} as rl (read_only)`);
  };
  const n = async (sql: string): Promise<number> => {
    await attachReader();
    return Number((await reader.one<{ n: bigint }>(sql))?.n ?? -1);
  };
  const events = async (path: string): Promise<number> => {
    const wh = await Warehouse.open(path, { readOnly: true });
    try {
      return Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))?.n);
    } finally {
      await wh.close();
    }
  };

  beforeAll(async () => {
    ({ pg, api, tmp, reader, lake } = await startLake('recruit-etl-lake-names-', { seed: 31, patientsPerTrial: 40, releaseFraction: 0.5 }));
  }, 120_000);

  afterAll(async () => {
    await stopLake({ pg, api, tmp, reader });
  });

  it('production.duckdb with the default environment production publishes (no "Ambiguous reference to catalog or schema")', async () => {
    const r = await run('prod', 'production.duckdb', 'production');
    ok(r);
    expect(r.stderr + r.stdout).not.toMatch(/Ambiguous reference/);
    await attachReader();
    const mine = await events(join(tmp.dir, 'prod', 'production.duckdb'));
    expect(mine).toBeGreaterThan(0);
    expect(await n('select count(*) as n from rl.production.raw_events')).toBe(mine);
    // The views across pipelines were written too, from their own session.
    expect(await n("select count(*) as n from rl.all_pipelines.raw_events where pipeline = 'production'")).toBe(mine);
    expect(await n("select count(*) as n from rl.all_pipelines.fct_patient_funnel where pipeline = 'production'")).toBeGreaterThan(0);
    // The schema records its pipeline: this warehouse, this environment.
    const owner = await reader.one<{ f: string; e: string }>(
      'select warehouse_file as f, environment as e from rl.production.publish_pipeline',
    );
    expect(owner).toEqual({ f: join(tmp.dir, 'prod', 'production.duckdb'), e: 'production' });
    // A second night publishes again.
    api.grow(40);
    ok(await run('prod', 'production.duckdb', 'production'));
    expect(await n('select count(*) as n from rl.production.raw_events')).toBe(await events(join(tmp.dir, 'prod', 'production.duckdb')));
  });

  it("a warehouse file named like the lake's own alias (_recruit_etl_lake.duckdb) is exit 2, never taken for the lake", async () => {
    const r = await run('alias', '_recruit_etl_lake.duckdb', 'aliased', {}, 'publish');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/the warehouse's catalog is named _recruit_etl_lake/);
  });

  it('Staging, staging and STAGING (separate warehouses) do not share schema staging: the second and third are exit 2, the lake unchanged', async () => {
    ok(await run('s1', 'warehouse.duckdb', 'Staging'));
    const first = await events(join(tmp.dir, 's1', 'warehouse.duckdb'));
    expect(await n('select count(*) as n from rl.staging.raw_events')).toBe(first);
    const snapshot = await n('select max(snapshot_id) as n from rl.snapshots()');
    for (const [dir, environment] of [
      ['s2', 'staging'],
      ['s3', 'STAGING'],
    ] as const) {
      const r = await run(dir, 'warehouse.duckdb', environment);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/the lake schema staging belongs to another pipeline/);
      expect(r.stderr).toContain(join(tmp.dir, 's1', 'warehouse.duckdb'));
      expect(r.stderr).toMatch(/--lake-pipeline-moved/);
      // The run committed its own data locally; the lake did not move.
      expect(await events(join(tmp.dir, dir, 'warehouse.duckdb'))).toBeGreaterThan(0);
      expect(await n('select max(snapshot_id) as n from rl.snapshots()')).toBe(snapshot);
      expect(await n('select count(*) as n from rl.staging.raw_events')).toBe(first);
    }
  });

  it('--lake-pipeline-moved hands the schema to this warehouse once; the previous one is refused after', async () => {
    const moved = await run('s2', 'warehouse.duckdb', 'staging', {}, 'publish', ['--lake-pipeline-moved']);
    ok(moved);
    expect(moved.stdout).toMatch(/the lake schema now belongs to this warehouse/);
    const owner = await reader.one<{ f: string; e: string }>(
      'select warehouse_file as f, environment as e from rl.staging.publish_pipeline',
    );
    expect(owner).toEqual({ f: join(tmp.dir, 's2', 'warehouse.duckdb'), e: 'staging' });
    // Without the option from now on: the new owner publishes, the old one is refused.
    api.grow(30);
    ok(await run('s2', 'warehouse.duckdb', 'staging'));
    const old = await run('s1', 'warehouse.duckdb', 'Staging', {}, 'publish');
    expect(old.code, old.stderr).toBe(2);
    expect(old.stderr).toContain(join(tmp.dir, 's2', 'warehouse.duckdb'));
  });

  it('a schema published before pipelines were recorded is claimed by its own warehouse, refused to another', async () => {
    // As an earlier build left it: watermarks, no publish_pipeline.
    const writer = await Warehouse.open(':memory:');
    try {
      await loadLakeExtensions(writer, true);
      await writer.run(`attach ${sqlString(lake)} as lw`);
      await writer.run('drop table lw.production.publish_pipeline');
    } finally {
      await writer.close();
    }
    const other = await run('s3', 'warehouse.duckdb', 'STAGING', { RECRUIT_ETL_LAKE_SCHEMA: 'production' }, 'publish');
    expect(other.code, other.stderr).toBe(2);
    expect(other.stderr).toMatch(/the lake schema production belongs to another pipeline: another warehouse \(streams s_/);
    ok(await run('prod', 'production.duckdb', 'production', {}, 'publish'));
    const owner = await reader.one<{ f: string }>('select warehouse_file as f from rl.production.publish_pipeline');
    expect(owner?.f).toBe(join(tmp.dir, 'prod', 'production.duckdb'));
  });
});
