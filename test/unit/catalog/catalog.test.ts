import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXPORTED_PREFIXES, isExportedModel, loadModelCatalog, parseModelConfig } from '../../../src/catalog/catalog.js';
import { MODELS_DIR } from '../../../src/paths.js';
import { REPORT_MARTS, reportModels } from '../../../src/report/reportData.js';

/** Every `.sql` file under sql/models, found here with Node's own recursive listing (not the catalog's). */
const files = (readdirSync(MODELS_DIR, { recursive: true }) as string[]).filter((f) => f.endsWith('.sql')).sort();

/** The rule the export and the publish applied before the catalog: `table_name like 'fct_%'` (or dim_, mart_, dq_). */
const likeBefore = (name: string): boolean => ['fct', 'dim', 'mart', 'dq'].some((p) => new RegExp(`^${p}.`).test(name));

describe('the model catalog of sql/models', () => {
  const catalog = loadModelCatalog();

  it('finds every model file, once', () => {
    expect(files.length).toBeGreaterThan(40);
    expect(catalog.models.length).toBe(files.length);
    expect(catalog.models.map((m) => m.file).sort()).toEqual(files);
    expect(new Set(catalog.models.map((m) => m.name)).size).toBe(files.length);
    for (const f of files) expect(catalog.get(basename(f, '.sql'))?.file).toBe(f);
    expect(loadModelCatalog()).toBe(catalog);
  });

  it('gives each model a layer that matches its folder', () => {
    const folderLayers: Record<string, string[]> = { staging: ['stg'], intermediate: ['int'], marts: ['fct', 'dim', 'mart'], dq: ['dq'] };
    for (const m of catalog.models) {
      const folder = m.file.split(/[\\/]/)[0]!;
      expect(folderLayers[folder], m.file).toBeDefined();
      expect(folderLayers[folder], m.name).toContain(m.layer);
    }
  });

  it('exports exactly the models the export wrote before (fct_, dim_, mart_, dq_), and no staging, intermediate or seed', () => {
    const exported = catalog.models.filter((m) => m.exported).map((m) => m.name);
    expect(exported.length).toBeGreaterThan(20);
    expect(exported).toEqual(catalog.models.map((m) => m.name).filter(likeBefore));
    expect(catalog.models.filter((m) => m.layer === 'stg' || m.layer === 'int').every((m) => !m.exported)).toBe(true);
    expect(EXPORTED_PREFIXES).toEqual(['fct_', 'dim_', 'mart_', 'dq_']);
    expect(isExportedModel('seed_site_names')).toBe(false);
    expect(isExportedModel('fct_visit')).toBe(true);
    expect(isExportedModel('dimension')).toBe(false);
  });

  it('gives every incremental model the unique_key its config() names, the fct_ views over int_ tables theirs (publish merges by it), and no other model a key', () => {
    const incremental = catalog.models.filter((m) => m.materialized === 'incremental');
    expect(incremental.length).toBeGreaterThan(10);
    for (const m of catalog.models) {
      const text = readFileSync(join(MODELS_DIR, m.file), 'utf8');
      const declared = /materialized\s*=\s*'([a-z]+)'/.exec(text)?.[1] ?? 'table';
      expect(m.materialized, m.name).toBe(declared);
      const key = /unique_key\s*=\s*'([a-z_]+)'/.exec(text)?.[1];
      if (m.materialized === 'incremental') expect(m.uniqueKey, m.name).toEqual([key]);
      else expect(m.uniqueKey, m.name).toEqual(key === undefined ? undefined : [key]);
    }
    const keyedViews = catalog.models.filter((m) => m.materialized === 'view' && m.uniqueKey !== undefined).map((m) => m.name);
    expect(keyedViews).toEqual(['fct_contact_attempt_outcomes', 'fct_contact_attempts', 'fct_patient_status_history']);
    expect(catalog.get('fct_contact_attempts')?.uniqueKey).toEqual(['contact_attempt_id']);
    expect(catalog.get('int_contact_attempts')?.uniqueKey).toEqual(['contact_attempt_id']);
  });

  it('agrees with the transform compiler on materializations and keys', async () => {
    const { compileModels } = await import('../../../src/transform/runTransform.js');
    const compiled = compileModels(MODELS_DIR);
    expect(compiled.length).toBe(catalog.models.length);
    for (const c of compiled) {
      const m = catalog.get(c.name);
      expect(m?.materialized, c.name).toBe(c.materialized);
      // the runner replaces rows by the key of an incremental model only
      if (c.materialized === 'incremental') expect(m?.uniqueKey, c.name).toEqual(c.uniqueKey);
      else expect(c.uniqueKey, c.name).toBeUndefined();
    }
  });

  it('reads the descriptions of the YAML property files', () => {
    expect(catalog.get('fct_patient_funnel')?.description).toMatch(/^One row per patient \(trial_id, referral_subject_id\)/);
    const described = catalog.models.filter((m) => m.description !== '');
    expect(described.length).toBeGreaterThan(catalog.models.length / 2);
  });

  it('holds every model the report reads, exported: its marts and every dq_ model', () => {
    const models = reportModels(catalog);
    for (const name of models) expect(catalog.get(name)?.exported, name).toBe(true);
    expect(models.filter((m) => m.startsWith('dq_')).sort()).toEqual(
      catalog.models
        .filter((m) => m.layer === 'dq')
        .map((m) => m.name)
        .sort(),
    );
    expect(models.slice(0, REPORT_MARTS.length)).toEqual([...REPORT_MARTS]);
    expect(models).toContain('dq_orphan_events');
  });
});

describe('parseModelConfig', () => {
  it('reads a list key and strips the config() call', () => {
    const { config, body } = parseModelConfig('m', `{{ config(materialized='incremental', unique_key=['a', "b"]) }}\nselect 1`);
    expect(config).toEqual({ materialized: 'incremental', uniqueKey: ['a', 'b'] });
    expect(body.trim()).toBe('select 1');
  });

  it('refuses an incremental model without a key, and other materializations', () => {
    expect(() => parseModelConfig('m', `{{ config(materialized='incremental') }} select 1`)).toThrow(/needs a unique_key/);
    expect(() => parseModelConfig('m', `{{ config(materialized='ephemeral') }} select 1`)).toThrow(/not supported/);
  });
});
