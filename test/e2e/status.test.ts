/**
 * `recruit-etl status` (docs/contracts.md "status --json"): the shape of `--json` (a stable
 * interface: a renamed or removed field breaks this test), freshness, run durations and
 * stages, data-quality counts, the funnel read from `mart_recruitment_funnel`, and the
 * fall-back to the published copy while a run holds the live file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { loadModelCatalog } from '../../src/catalog/catalog.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import type { WarehouseStatus } from '../../src/warehouse/readStatus.js';
import { runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

const keys = (o: object): string[] => Object.keys(o).sort();

describe('recruit-etl status', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  let db: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    api = await startSim({ seed: 7, patientsPerTrial: 40 });
    tmp = tempDir();
    db = join(tmp.dir, 'w.duckdb');
    env = envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports'), RECRUIT_ETL_LOG_LEVEL: 'warn' });
    const r = await runCli(['run'], env);
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('--json: the documented shape, and nothing else on stdout', async () => {
    // A stray variable's warning goes to stderr, not into the document.
    const r = await runCli(['status', '--json'], { ...env, RECRUIT_ETL_LOG_LEVEL: 'info', RECRUIT_ETL_SERVICE_HOST: '10.0.0.1' });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('RECRUIT_ETL_SERVICE_HOST');
    const s = JSON.parse(r.stdout) as WarehouseStatus; // one document: no log line around it
    expect(keys(s)).toEqual(['dataQuality', 'freshness', 'funnel', 'models', 'path', 'rows', 'runs', 'source', 'streams', 'version']);
    expect(s.version).toBe(1);
    expect(s.source).toBe('live');
    expect(s.path).toBe(db);
    expect(keys(s.freshness)).toEqual(['cursorAgeSeconds', 'lastSuccessfulExtract', 'lastSuccessfulRun', 'newestEventPublishedAt']);
    expect(keys(s.freshness.lastSuccessfulRun!)).toEqual(['ageSeconds', 'command', 'finishedAt', 'runId']);
    expect(s.freshness.lastSuccessfulRun!.command).toBe('run');
    expect(s.freshness.lastSuccessfulExtract!.runId).toBe(s.freshness.lastSuccessfulRun!.runId);
    expect(s.freshness.lastSuccessfulRun!.finishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const newest = api.truth.events.map((e) => Date.parse(e.publishedTime)).reduce((a, b) => Math.max(a, b));
    expect(Date.parse(s.freshness.newestEventPublishedAt!)).toBe(Math.floor(newest / 1000) * 1000);
    expect(s.freshness.cursorAgeSeconds).toBeGreaterThanOrEqual(0);

    expect(s.streams).toHaveLength(1);
    expect(keys(s.streams[0]!)).toEqual([
      'cursorAgeSeconds',
      'cursorState',
      'environment',
      'events',
      'hasNextPage',
      'lastPolledAt',
      'name',
      'origin',
      'quarantined',
      'status',
      'streamId',
      'transformedPosition',
    ]);
    expect(s.streams[0]!.cursorState).toBe('caught up');
    expect(s.streams[0]!.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    expect(s.runs).toHaveLength(1);
    const run = s.runs[0]!;
    expect(keys(run)).toEqual([
      'command',
      'durationSeconds',
      'error',
      'eventsLoaded',
      'filesExported',
      'finishedAt',
      'modelsBuilt',
      'pagesFetched',
      'runId',
      'sitesLoaded',
      'stages',
      'startedAt',
      'status',
    ]);
    expect(run.durationSeconds).toBeGreaterThan(0);
    expect(Object.keys(run.stages!)).toEqual(['extract', 'sites', 'transform', 'export', 'report']);
    expect(run.stages!['extract']!.durationMs).toBeGreaterThan(0);
    expect(run.eventsLoaded).toBe(s.streams[0]!.events);

    expect(s.dataQuality).not.toBeNull();
    expect(s.dataQuality!['dq_orphan_events']).toBeGreaterThan(0);
    expect(s.dataQuality!['dq_quarantined_events']).toBe(0);

    // One funnel definition: the mart's. Orphans (no created event) are not in it.
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const mart = await wh.all<{ trial: string; referrals: bigint; enrolled: bigint }>(
        'select trial_id as trial, sum(referrals)::bigint as referrals, sum(reached_enrolled)::bigint as enrolled from main.mart_recruitment_funnel group by 1 order by 1',
      );
      const withOrphans = await wh.all<{ trial: string; n: bigint }>(
        'select trial_id as trial, count(*) as n from main.fct_patient_funnel group by 1 order by 1',
      );
      expect(s.funnel!.map((f) => [f.trial, f.referrals, f.enrolled])).toEqual(
        mart.map((m) => [m.trial, Number(m.referrals), Number(m.enrolled)]),
      );
      // The seed makes orphans: the fact has more patients than the mart's referrals.
      expect(withOrphans.reduce((a, r) => a + Number(r.n), 0)).toBeGreaterThan(s.funnel!.reduce((a, f) => a + f.referrals, 0));
    } finally {
      await wh.close();
    }
    for (const f of s.funnel!) expect(keys(f)).toEqual(['enrolled', 'pre_screening', 'referrals', 'screening', 'trial', 'visit_scheduled']);

    // The models: this build's catalog, each built after a run, a table's rows as in `rows`.
    const catalog = loadModelCatalog().models;
    expect(s.models.map((m) => m.name)).toEqual(catalog.map((m) => m.name));
    for (const m of s.models) {
      expect(keys(m)).toEqual(['built', 'exported', 'layer', 'materialized', 'name', 'rows']);
      expect(m.built, m.name).toBe(true);
      if (m.materialized === 'view') expect(m.rows, m.name).toBeGreaterThanOrEqual(0);
      else expect(m.rows, m.name).toBe(s.rows[`main.${m.name}`]);
    }
    expect(s.models.find((m) => m.name === 'mart_recruitment_funnel')).toMatchObject({ layer: 'mart', exported: true });
    // A view's rows are counted at read: the fct_ view over its int_ table has the table's rows.
    expect(s.models.find((m) => m.name === 'fct_contact_attempts')).toMatchObject({
      materialized: 'view',
      rows: s.rows['main.int_contact_attempts'],
    });
    expect(s.rows['main.int_contact_attempts']).toBeGreaterThan(0);
    expect(s.models.filter((m) => m.materialized === 'incremental').length).toBeGreaterThan(0);
  });

  it('a model of the catalog missing from the warehouse (a newer build, no transform since): built false, named in the text', async () => {
    const older = join(tmp.dir, 'older.duckdb');
    copyFileSync(db, older);
    const wh = await Warehouse.open(older);
    try {
      await wh.run('drop table main.mart_site_activity_monthly');
    } finally {
      await wh.close();
    }
    const olderEnv = { ...env, RECRUIT_ETL_DB: older };
    const s = JSON.parse((await runCli(['status', '--json'], olderEnv)).stdout) as WarehouseStatus;
    expect(s.models.filter((m) => !m.built)).toEqual([
      { name: 'mart_site_activity_monthly', layer: 'mart', materialized: 'table', exported: true, built: false, rows: null },
    ]);
    const text = (await runCli(['status'], olderEnv)).stdout;
    expect(text).toMatch(new RegExp(`^  ${s.models.length - 1} of ${s.models.length} built \\(stg `, 'm'));
    expect(text).toContain('not built: mart_site_activity_monthly (run `recruit-etl transform`)');
  });

  it('text: freshness, streams with their cursor state, runs with durations, data quality, the funnel', async () => {
    const r = await runCli(['status'], env);
    expect(r.code).toBe(0);
    const out = r.stdout;
    for (const section of ['freshness', 'streams', 'last runs', 'data quality', 'rows', 'models', 'funnel per trial'])
      expect(out).toMatch(new RegExp(`^${section}`, 'm'));
    expect(out).toMatch(/last successful run +\d{4}-\d\d-\d\dT\S+Z \(\d+s ago, run \d{8}T/);
    expect(out).toMatch(/newest event published +\d{4}-/);
    expect(out).toMatch(/ cursor +cursor age /);
    expect(out).not.toMatch(/\bmore\b/);
    expect(out).toMatch(/ caught up /);
    expect(out).toMatch(/ succeeded +\S+ +\d+(\.\d)?s /);
    expect(out).toMatch(/extract \d+(\.\d)?s, sites \d+(\.\d)?s, transform \d+(\.\d)?s, export \d+(\.\d)?s/);
    expect(out).toMatch(/^dq_orphan_events +\d+$/m);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as WarehouseStatus;
    const f = json.funnel![0]!;
    expect(out).toMatch(
      new RegExp(`^${f.trial} +${f.referrals} +${f.pre_screening} +${f.visit_scheduled} +${f.screening} +${f.enrolled}$`, 'm'),
    );
  });

  it('while a run holds the live file: reads the published copy by itself and says so; exit 5 when there is none', async () => {
    // This process takes the write lock, as a running job does.
    const holder = await Warehouse.open(db);
    try {
      const r = await runCli(['status', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      const s = JSON.parse(r.stdout) as WarehouseStatus;
      expect(s.source).toBe('published copy');
      expect(s.path).toBe(join(tmp.dir, 'w.readonly.duckdb'));
      expect(s.note).toMatch(/a run holds .*w\.duckdb; showing the copy published by the last successful run/);
      expect(s.runs[0]!.status).toBe('succeeded');
      const text = await runCli(['status'], env);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/^warehouse: .*w\.readonly\.duckdb \(published copy\)\nnote: a run holds /);
    } finally {
      await holder.close();
    }
    const lone = join(tmp.dir, 'lone.duckdb');
    copyFileSync(db, lone);
    const holder2 = await Warehouse.open(lone);
    try {
      const r = await runCli(['status'], { ...env, RECRUIT_ETL_DB: lone });
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(/^recruit-etl: error: /);
    } finally {
      await holder2.close();
    }
  });
});
