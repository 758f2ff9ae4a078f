import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { parse, stringify } from 'yaml';
import { SEEDS_DIR } from '../../../src/paths.js';
import { ConfigError } from '../../../src/errors.js';
import { loadSeedSpecs, parseSeedProperties, seedSql } from '../../../src/transform/seeds.js';
import { tempDir } from '../../helpers/tmp.js';

describe('seeds', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('the real seeds: every column typed in _seeds.yml, in header order', () => {
    const specs = loadSeedSpecs(SEEDS_DIR);
    expect(specs.map((s) => s.name)).toEqual([
      'seed_contact_outcomes',
      'seed_event_types',
      'seed_patient_status_stages',
      'seed_site_names',
      'seed_trial_targets',
    ]);
    const stages = specs.find((s) => s.name === 'seed_patient_status_stages')!;
    expect(stages.columns).toEqual([
      { name: 'patient_status', type: 'varchar' },
      { name: 'stage', type: 'varchar' },
      { name: 'stage_rank', type: 'integer' },
      { name: 'implied_rank', type: 'integer' },
      { name: 'path_order', type: 'double' },
      { name: 'outcome_category', type: 'varchar' },
      { name: 'is_terminal', type: 'boolean' },
      { name: 'implies_contact', type: 'boolean' },
    ]);
  });

  test('the properties file is read as YAML, as dbt reads it: block style means what flow style means', () => {
    const flow = readFileSync(join(SEEDS_DIR, '_seeds.yml'), 'utf8');
    const types = parseSeedProperties(flow);
    expect(types.get('seed_event_types')).toEqual({ event_type: 'varchar', entity: 'varchar', event_version: 'integer' });
    // The same document rewritten in block style, with a comment after a value: the same types.
    const block = `# seeds\n${stringify(parse(flow))}`.replace('event_version: integer', 'event_version: integer # 1, 2');
    expect(block).not.toContain('{');
    expect(block).toContain('event_version: integer # 1, 2');
    expect(parseSeedProperties(block)).toEqual(types);
    expect(parseSeedProperties('seeds:\n  - name: s\n    config:\n      column_types:\n        a: integer\n').get('s')).toEqual({
      a: 'integer',
    });
    expect(parseSeedProperties('# only a comment\n').size).toBe(0);
    expect(() => parseSeedProperties('seeds: [\n  - name: s', 'x.yml')).toThrow(/^x\.yml: not valid YAML \(/);
    expect(() => parseSeedProperties('{"seeds": [{"name": "s", "config": {"column_types": {"a": "int); drop"}}}]}')).toThrow(
      /invalid type/,
    );
  });

  test('untyped columns are varchar; a typed column missing from the CSV is an error', () => {
    const dir = join(tmp.dir, 'seeds');
    mkdirSync(dir);
    writeFileSync(join(dir, 'seed_a.csv'), 'x,y\n1,2\n');
    writeFileSync(join(dir, '_seeds.yml'), '{"seeds": [{"name": "seed_a", "config": {"column_types": {"y": "integer"}}}]}');
    const [spec] = loadSeedSpecs(dir);
    expect(spec!.columns).toEqual([
      { name: 'x', type: 'varchar' },
      { name: 'y', type: 'integer' },
    ]);
    expect(seedSql(spec!)).toMatch(/columns = \{'x': 'varchar', 'y': 'integer'\}/);
    writeFileSync(join(dir, '_seeds.yml'), '{"seeds": [{"name": "seed_a", "config": {"column_types": {"z": "integer"}}}]}');
    expect(() => loadSeedSpecs(dir)).toThrow(/column z/);
  });

  test("an operator's file replaces a packaged seed: its columns in any order, extra ones ignored, missing ones refused (exit 2)", () => {
    const own = join(tmp.dir, 'names.csv');
    writeFileSync(own, 'site_name,notes,site_id,sponsor_site_id,trial_id\nSite One,x,S1,,\n');
    const specs = loadSeedSpecs(SEEDS_DIR, [{ seed: 'seed_site_names', path: own, option: '--site-names' }]);
    const spec = specs.find((s) => s.name === 'seed_site_names')!;
    expect(spec.override?.source).toBe(own);
    // DuckDB reads the job's private copy of the bytes checked (src/fs/inputFile.ts), not the path again
    expect(readFileSync(spec.path, 'utf8')).toBe(readFileSync(own, 'utf8'));
    expect(spec.columns.map((c) => c.name)).toEqual(['site_name', 'notes', 'site_id', 'sponsor_site_id', 'trial_id']);
    expect(seedSql(spec)).toMatch(
      /^create or replace table "main"\."seed_site_names" as select "site_id", "trial_id", "site_name", "sponsor_site_id" from read_csv\(/,
    );
    const bad = (header: string): unknown => {
      writeFileSync(own, `${header}\n`);
      try {
        loadSeedSpecs(SEEDS_DIR, [{ seed: 'seed_site_names', path: own, option: '--site-names' }]);
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const missing = bad('site_id,site_name');
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as Error).message).toBe(`--site-names ${own}: the header lacks column(s) trial_id, sponsor_site_id`);
    expect((bad('site_id,trial_id,site_name,sponsor_site_id,site_id') as Error).message).toMatch(/names column site_id twice/);
    expect(bad('')).toBeInstanceOf(ConfigError);
    expect(() => loadSeedSpecs(SEEDS_DIR, [{ seed: 'seed_site_names', path: join(tmp.dir, 'nope.csv'), option: '--site-names' }])).toThrow(
      /^--site-names: cannot read .*nope\.csv: no such file$/,
    );
    expect(() => loadSeedSpecs(SEEDS_DIR, [{ seed: 'seed_nothing', path: own, option: '--x' }])).toThrow(ConfigError);
  });
});
