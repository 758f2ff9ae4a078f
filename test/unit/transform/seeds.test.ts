import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { SEEDS_DIR } from '../../../src/paths.js';
import { loadSeedSpecs, parseSeedProperties, seedSql } from '../../../src/transform/seeds.js';
import { tempDir } from '../../helpers/tmp.js';

describe('seeds', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('the real seeds: every column typed in _seeds.yml, in header order', () => {
    const specs = loadSeedSpecs(SEEDS_DIR);
    expect(specs.map((s) => s.name)).toEqual(['seed_contact_outcomes', 'seed_event_types', 'seed_patient_status_stages']);
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

  test('the properties file is JSON after its # comments (dbt reads it as YAML)', () => {
    const props = parseSeedProperties('# c\n{"version": 2, "seeds": [{"name": "s", "config": {"column_types": {"a": "integer"}}}]}');
    expect(props.get('s')).toEqual({ a: 'integer' });
    expect(() => parseSeedProperties('seeds:\n  - name: s')).toThrow(/JSON/);
    expect(() => parseSeedProperties('{"seeds": [{"name": "s", "config": {"column_types": {"a": "int); drop"}}}]}')).toThrow(/invalid type/);
  });

  test('untyped columns are varchar; a typed column missing from the CSV is an error', () => {
    const dir = join(tmp.dir, 'seeds');
    mkdirSync(dir);
    writeFileSync(join(dir, 'seed_a.csv'), 'x,y\n1,2\n');
    writeFileSync(join(dir, '_seeds.yml'), '{"seeds": [{"name": "seed_a", "config": {"column_types": {"y": "integer"}}}]}');
    const [spec] = loadSeedSpecs(dir);
    expect(spec!.columns).toEqual([{ name: 'x', type: 'varchar' }, { name: 'y', type: 'integer' }]);
    expect(seedSql(spec!)).toMatch(/columns = \{'x': 'varchar', 'y': 'integer'\}/);
    writeFileSync(join(dir, '_seeds.yml'), '{"seeds": [{"name": "seed_a", "config": {"column_types": {"z": "integer"}}}]}');
    expect(() => loadSeedSpecs(dir)).toThrow(/column z/);
  });
});
