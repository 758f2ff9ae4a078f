/**
 * Site names and trial targets survive dbt (docs/models.md "Site names"): `run` with the operator's CSV, then
 * `dbt build` through dbt/dbt.sh (dbt-core 1.11, dbt-duckdb 1.11 from the project's .venv),
 * then `run` again: the seed table keeps the operator's rows and the marts show the names at
 * every step. dbt/dbt.sh leaves the seeds marked `operator_supplied` in dbt/dbt_project.yml as
 * the job loaded them instead of loading the packaged CSV (a header only) over them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { runCli, type CliResult } from '../../helpers/cli.js';
import { envFor, startSim } from '../../helpers/sim.js';
import { tempDir } from '../../helpers/tmp.js';

const RUN_TIMEOUT_MS = 180_000;
const DBT_TIMEOUT_MS = 10 * 60_000;
/** The demo's names of the simulator's sites (the simulator's defaults are the demo's). */
const SITE_NAMES = join(PACKAGE_ROOT, 'scripts', 'demo-site-names.csv');
/** The demo's enrolment targets (docs/models.md "Trial targets"): the same mechanism. */
const TRIAL_TARGETS = join(PACKAGE_ROOT, 'scripts', 'demo-trial-targets.csv');

describe('site names survive dbt: run → dbt build → run', { timeout: 15 * 60_000 }, () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  const db = (): string => join(tmp.dir, 'warehouse.duckdb');
  const run = (): Promise<CliResult> =>
    runCli(
      ['run'],
      envFor(api, db(), {
        RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports'),
        RECRUIT_ETL_SITE_NAMES: SITE_NAMES,
        RECRUIT_ETL_TRIAL_TARGETS: TRIAL_TARGETS,
        RECRUIT_ETL_LOG_LEVEL: 'warn',
      }),
      {
        timeoutMs: RUN_TIMEOUT_MS,
      },
    );
  const ok = (r: CliResult): void => {
    expect(r.code, `exit ${r.code} ${r.signal ?? ''}\n${r.stderr}\n${r.stdout.slice(-3000)}`).toBe(0);
  };
  /** Rows of the seeds, funnel rows that show a site name, forecast rows that carry a target. */
  const names = async (): Promise<{ seed: number; named: number; targets: number; targeted: number }> => {
    const wh = await Warehouse.open(db(), { readOnly: true });
    try {
      const seed = Number((await wh.one<{ n: bigint }>('select count(*) as n from main.seed_site_names'))?.n);
      const named = Number(
        (await wh.one<{ n: bigint }>('select count(*) as n from main.mart_recruitment_funnel where site_name is not null'))?.n,
      );
      const targets = Number((await wh.one<{ n: bigint }>('select count(*) as n from main.seed_trial_targets'))?.n);
      const targeted = Number(
        (await wh.one<{ n: bigint }>('select count(*) as n from main.mart_enrolment_forecast where enrolment_target is not null'))?.n,
      );
      return { seed, named, targets, targeted };
    } finally {
      await wh.close();
    }
  };
  const csvRows = readFileSync(SITE_NAMES, 'utf8').trim().split('\n').length - 1;
  const targetRows = readFileSync(TRIAL_TARGETS, 'utf8').trim().split('\n').length - 1;

  beforeAll(async () => {
    tmp = tempDir('recruit-etl-dbt-names-');
    api = await startSim();
  });

  afterAll(async () => {
    await api?.close();
    tmp?.cleanup();
  });

  it('the names the job loaded are there after dbt build and after the next run', async () => {
    ok(await run());
    const first = await names();
    expect(first.seed).toBe(csvRows);
    expect(first.named).toBeGreaterThan(0);
    expect(first.targets).toBe(targetRows);
    expect(first.targeted).toBeGreaterThan(0);

    const t0 = Date.now();
    const dbt = spawnSync(join(PACKAGE_ROOT, 'dbt', 'dbt.sh'), ['build'], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, RECRUIT_ETL_DB: db(), DBT_LOG_PATH: join(tmp.dir, 'dbt-logs'), DBT_TARGET_PATH: join(tmp.dir, 'dbt-target') },
      encoding: 'utf8',
      timeout: DBT_TIMEOUT_MS,
    });
    console.log(`dbt build took ${Date.now() - t0} ms`);
    expect(dbt.status, `${dbt.stderr}\n${dbt.stdout.slice(-3000)}`).toBe(0);
    // dbt rebuilt the marts on the operator's names.
    expect(await names()).toEqual(first);
    expect(dbt.stderr).toMatch(/keeping seed_site_names seed_trial_targets as the job loaded them/);

    api.grow(60);
    ok(await run());
    const after = await names();
    expect(after.seed).toBe(csvRows);
    expect(after.named).toBeGreaterThanOrEqual(first.named);
    expect(after.targets).toBe(targetRows);
    expect(after.targeted).toBe(first.targeted);
  });
});
