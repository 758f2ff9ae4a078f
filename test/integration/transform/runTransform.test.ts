/**
 * The runner against a real DuckDB: one transaction (a failing model keeps the previous
 * models), errors name the model, `only`, view/table switches, seeds change without model changes.
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { TransformError } from '../../../src/errors.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { MODELS_DIR, SEEDS_DIR } from '../../../src/paths.js';
import { loadModelCatalog, RETIRED_MODELS } from '../../../src/catalog/catalog.js';
import { runTransform } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, insertRawEventsSql } from '../models/fixture.js';

const tmp = tempDir('recruit-etl-transform-');
afterAll(() => tmp.cleanup());

let n = 0;
function modelsDir(files: Record<string, string>): string {
  const dir = join(tmp.dir, `models-${++n}`);
  mkdirSync(join(dir, 'sub'), { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name.includes('/') ? name : `sub/${name}`);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  }
  return dir;
}

describe('runTransform', () => {
  let wh: Warehouse;
  beforeEach(async () => {
    wh = await Warehouse.open(join(tmp.dir, `wh-${++n}.duckdb`), { threads: 2 });
    await wh.migrate();
  });
  afterEach(async () => {
    await wh.close();
  });

  test('builds every real model on an empty warehouse (no events yet)', async () => {
    const r = await runTransform(wh);
    expect(r.seeds.map((s) => s.name)).toEqual([
      'seed_contact_outcomes',
      'seed_event_types',
      'seed_patient_status_stages',
      'seed_site_names',
      'seed_trial_targets',
    ]);
    expect(r.models.find((m) => m.name === 'fct_patient_funnel')).toMatchObject({ rows: 0, materialized: 'view' });
    expect(r.models.find((m) => m.name === 'int_patient_funnel')).toMatchObject({ rows: 0, materialized: 'incremental' });
    expect(r.mode).toBe('full');
    expect(r.dq.every((d) => d.count === 0)).toBe(true);
    expect(r.dq.map((d) => d.check)).toContain('dq_unknown_event_types');
  });

  test("leaves the session's preserve_insertion_order as it found it, after success and after failure", async () => {
    await runTransform(wh);
    expect(await wh.one(`select current_setting('preserve_insertion_order') as v`)).toEqual({ v: true });
    // Under a setting an enclosing stage put (Warehouse.withSettings), the transform puts that one back.
    const inside = await wh.withSettings({ preserve_insertion_order: 'true' }, async () => {
      await runTransform(wh);
      return wh.one(`select current_setting('preserve_insertion_order') as v`);
    });
    expect(inside).toEqual({ v: true });
    const broken = modelsDir({ 'zz_broken.sql': 'select no_such_column from main.seed_event_types' });
    await expect(runTransform(wh, { modelsDir: broken })).rejects.toThrow(TransformError);
    expect(await wh.one(`select current_setting('preserve_insertion_order') as v`)).toEqual({ v: true });
  });

  test("only int_events_deduplicated parses raw JSON (stg_events passes the message through, int_delta_patients reads the keys of the delta's deliveries): the message is parsed once, later models read columns", async () => {
    const { readFileSync } = await import('node:fs');
    const { listModelFiles } = await import('../../../src/transform/runTransform.js');
    const readsJson = (file: string): boolean =>
      /\bmessage\b|\benvelope\b|->>|json_transform|from_json/.test(readFileSync(file, 'utf8').replace(/--.*$/gm, ''));
    const files = listModelFiles(MODELS_DIR);
    // Not vacuous: every layer's files are read, the three exempt files exist, and the check sees the parse.
    for (const layer of ['staging', 'intermediate', 'marts', 'dq'])
      expect(
        files.some((f) => f.includes(`/${layer}/`)),
        layer,
      ).toBe(true);
    const exemptNames = ['int_delta_patients.sql', 'int_events_deduplicated.sql', 'stg_events.sql'];
    const exempt = files.filter((f) => exemptNames.includes(f.slice(f.lastIndexOf('/') + 1)));
    expect(exempt.map((f) => f.slice(f.lastIndexOf('/') + 1)).sort()).toEqual(exemptNames);
    expect(
      readFileSync(
        exempt.find((f) => f.endsWith('/int_events_deduplicated.sql'))!,
        'utf8',
      ),
    ).toMatch(/json_transform\(\s*events\.message/);
    for (const file of files) {
      if (exempt.includes(file)) continue;
      expect(readsJson(file), file).toBe(false);
    }
  });

  test('a failing model rolls back the whole transform: previous models stay, the error names the model', async () => {
    await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
    await wh.run(SITE_SNAPSHOTS_SQL);
    await runTransform(wh);
    const before = await wh.all('select * from main.fct_patient_funnel order by patient_key');
    expect(before).toHaveLength(6);

    // Same models plus a broken one built late (after the funnel).
    const dir = join(tmp.dir, `broken-${++n}`);
    cpSync(MODELS_DIR, dir, { recursive: true });
    writeFileSync(join(dir, 'zz_broken.sql'), `select no_such_column from {{ ref('fct_patient_funnel') }}`);
    await wh.run(
      insertRawEventsSql([
        {
          ...FIXTURE_EVENTS[0]!,
          stream_id: 'stream-c',
          stream_position: 1,
          event_id: 'new-1',
          message: { ...FIXTURE_EVENTS[0]!.message, referralSubjectId: 'p-new' },
        },
      ]),
    );

    const err = await runTransform(wh, { modelsDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransformError);
    expect((err as Error).message).toMatch(/^model zz_broken failed to build: .*no_such_column/);
    expect(await wh.all('select * from main.fct_patient_funnel order by patient_key')).toEqual(before);
    expect(await wh.all(`select * from information_schema.tables where table_name = 'zz_broken'`)).toEqual([]);
    // and the warehouse is usable afterwards
    const ok = await runTransform(wh);
    expect(ok.models.find((m) => m.name === 'fct_patient_funnel')?.rows).toBe(7);
  });

  test('a model that fails on a value of the data names the error class, never the value, with --verbose either (the value was quoted before)', async () => {
    await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
    const dir = join(tmp.dir, `data-error-${++n}`);
    cpSync(MODELS_DIR, dir, { recursive: true });
    writeFileSync(
      join(dir, 'zz_cast.sql'),
      `select cast(referral_subject_id || '-SUBJ' as integer) as n from {{ ref('int_patient_created_events') }}`,
    );
    const err = await runTransform(wh, { modelsDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransformError);
    expect((err as Error).message).toBe(
      'model zz_cast failed to build: Conversion Error on a value of the data (not quoted: it may be event payload)',
    );
    expect(describeFailure(err, true).text).not.toMatch(/-SUBJ/);
  });

  test('a cycle and an unknown ref fail before anything is built', async () => {
    await expect(
      runTransform(wh, { modelsDir: modelsDir({ 'a.sql': `select * from {{ ref('b') }}`, 'b.sql': `select * from {{ ref('a') }}` }) }),
    ).rejects.toThrow(/cycle.*a, b/);
    await expect(runTransform(wh, { modelsDir: modelsDir({ 'a.sql': `select * from {{ ref('nope') }}` }) })).rejects.toThrow(
      /a refers to nope/,
    );
    await expect(runTransform(wh, { modelsDir: modelsDir({ 'a.sql': 'select 1', 'b/a.sql': 'select 2' }) })).rejects.toThrow(
      /two model files are named a/,
    );
    expect(await wh.all(`select * from information_schema.tables where table_schema = 'main'`)).toEqual([]);
  });

  test('models retired by this build are dropped by the next transform (a table or a view), none of a current name; --only leaves them', async () => {
    expect(RETIRED_MODELS.length).toBeGreaterThan(0);
    for (const name of RETIRED_MODELS) expect(loadModelCatalog().get(name), name).toBeUndefined();
    const [first, second] = RETIRED_MODELS as [string, string];
    await wh.run(`create table main.${first} as select 1 as a`);
    await wh.run(`create view main.${second} as select 1 as a`);
    await runTransform(wh, {
      only: ['seed_event_types_view'],
      modelsDir: modelsDir({ 'seed_event_types_view.sql': 'select * from main.seed_event_types' }),
    });
    const left = async (): Promise<string[]> =>
      (await wh.all<{ n: string }>('select table_name as n from information_schema.tables where table_schema = $1 order by 1', ['main']))
        .map((r) => r.n)
        .filter((n) => RETIRED_MODELS.includes(n));
    expect(await left()).toEqual([first, second].sort());
    await runTransform(wh);
    expect(await left()).toEqual([]);
  });

  test('views and tables switch kinds; only builds the named models', async () => {
    const dir1 = modelsDir({
      'a.sql': `{{ config(materialized='view') }} select 1 as x`,
      'b.sql': `select x + 1 as y from {{ ref('a') }}`,
    });
    const r1 = await runTransform(wh, { modelsDir: dir1, seedsDir: SEEDS_DIR });
    expect(r1.models).toMatchObject([
      { name: 'a', rows: 1, materialized: 'view' },
      { name: 'b', rows: 1, materialized: 'table' },
    ]);
    const dir2 = modelsDir({
      'a.sql': `select 5 as x`,
      'b.sql': `{{ config(materialized="view") }} select x + 1 as y from {{ ref('a') }}`,
    });
    await runTransform(wh, { modelsDir: dir2 });
    const kinds = await wh.all(
      `select table_name, table_type from information_schema.tables where table_schema = 'main' and table_name in ('a', 'b') order by 1`,
    );
    expect(kinds).toEqual([
      { table_name: 'a', table_type: 'BASE TABLE' },
      { table_name: 'b', table_type: 'VIEW' },
    ]);
    const r3 = await runTransform(wh, { modelsDir: dir2, only: ['a'] });
    expect(r3.models.map((m) => m.name)).toEqual(['a']);
    await expect(runTransform(wh, { modelsDir: dir2, only: ['zzz'] })).rejects.toThrow(/no such model: zzz/);
  });

  test('a new status value is one CSV line: it leaves dq_unmapped_statuses without a model change', async () => {
    await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
    const first = await runTransform(wh);
    expect(first.dq.find((d) => d.check === 'dq_unmapped_statuses')?.count).toBe(1);
    const seeds = join(tmp.dir, `seeds-${++n}`);
    cpSync(SEEDS_DIR, seeds, { recursive: true });
    const csv = join(seeds, 'seed_patient_status_stages.csv');
    const { appendFileSync } = await import('node:fs');
    appendFileSync(csv, 'someNewStatus,screening,4,4,4,in_progress,false,true\n');
    const second = await runTransform(wh, { seedsDir: seeds });
    expect(second.dq.find((d) => d.check === 'dq_unmapped_statuses')?.count).toBe(0);
    const [p3] = await wh.all(`select current_stage, final_disposition from main.fct_patient_funnel where referral_subject_id = 'p3'`);
    expect(p3).toEqual({ current_stage: 'screening', final_disposition: 'in_progress' });
  });

  test('a seed whose CSV breaks its declared types is named in the error', async () => {
    const seeds = join(tmp.dir, `seeds-${++n}`);
    cpSync(SEEDS_DIR, seeds, { recursive: true });
    writeFileSync(join(seeds, 'seed_event_types.csv'), 'event_type,entity,event_version\nv1.x,patient_created,one\n');
    await expect(runTransform(wh, { seedsDir: seeds })).rejects.toThrow(/^seed seed_event_types failed to load/);
  });
});
