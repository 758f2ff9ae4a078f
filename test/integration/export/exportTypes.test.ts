/**
 * Counts exported as non-integers showed as 3.0 in BI tools (`contact_attempts`,
 * `attempts_until_reached_sum` of mart_recruitment_funnel: a sum of integers is a HUGEINT in
 * DuckDB, which DuckDB 1.5 writes to Parquet as a DOUBLE). Every count of the exported models is an integer:
 * no exported column is a DECIMAL or a HUGEINT, and those two are INT64 in the Parquet file
 * itself (docs/models.md "mart_recruitment_funnel").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { exportParquet, type Manifest } from '../../../src/export/exportParquet.js';
import { sqlString, type Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { builtWarehouse, simulatorRows } from '../../helpers/warehouses.js';

describe('exported counts are integers (they were HUGEINT, DOUBLE in Parquet: 3.0 in BI tools)', () => {
  let wh: Warehouse;
  let manifest: Manifest;
  const tmp = tempDir('recruit-etl-types-');
  beforeAll(async () => {
    wh = await builtWarehouse(':memory:', await simulatorRows({ seed: 5, patientsPerTrial: 30 }));
    manifest = await exportParquet({ wh, exportDir: tmp.dir, runId: 'types-1' });
  }, 120_000);
  afterAll(async () => {
    await wh?.close();
    tmp.cleanup();
  });

  it('no exported model has a HUGEINT or DECIMAL column, and every integer column reads back from its Parquet file as an integer', async () => {
    const models = manifest.files.map((f) => `'${f.model}'`).join(', ');
    const cols = await wh.all<{ table_name: string; column_name: string; data_type: string }>(
      `select table_name, column_name, data_type from information_schema.columns
       where table_schema = 'main' and table_name in (${models}) and (data_type like '%INT%' or data_type like 'DECIMAL%')`,
    );
    expect(cols.length).toBeGreaterThan(50);
    expect(cols.filter((c) => /HUGEINT|DECIMAL/.test(c.data_type)).map((c) => `${c.table_name}.${c.column_name} ${c.data_type}`)).toEqual(
      [],
    );
    const exported = new Map(manifest.files.flatMap((f) => f.columns.map((c) => [`${f.model}.${c.name}`, c.type] as const)));
    const notInt = cols.filter(
      (c) =>
        !/^(TINY|SMALL|BIG|U?)INT(EGER)?$|^U?(TINY|SMALL|BIG)INT$|^INTEGER$|^BIGINT$/.test(
          exported.get(`${c.table_name}.${c.column_name}`) ?? '?',
        ),
    );
    expect(notInt.map((c) => `${c.table_name}.${c.column_name}: ${exported.get(`${c.table_name}.${c.column_name}`)}`)).toEqual([]);
    const files = manifest.files.map((f) => sqlString(join(tmp.dir, f.file)));
    const decimals = await wh.all<{ file_name: string; name: string }>(
      `select file_name, name from parquet_schema([${files.join(', ')}])
       where converted_type = 'DECIMAL' or logical_type ilike '%decimal%' or type = 'FIXED_LEN_BYTE_ARRAY'`,
    );
    expect(decimals).toEqual([]);
  });

  it('contact_attempts and attempts_until_reached_sum are INT64 in mart_recruitment_funnel.parquet, with the same sums as the facts', async () => {
    const file = sqlString(join(tmp.dir, 'mart_recruitment_funnel.parquet'));
    const schema = await wh.all<{ name: string; type: string }>(
      `select name, type from parquet_schema(${file}) where name in ('contact_attempts', 'attempts_until_reached_sum', 'referrals') order by name`,
    );
    expect(schema).toEqual([
      { name: 'attempts_until_reached_sum', type: 'INT64' },
      { name: 'contact_attempts', type: 'INT64' },
      { name: 'referrals', type: 'INT64' },
    ]);
    const sums = await wh.one<{ exported: bigint; facts: bigint }>(
      `select (select sum(contact_attempts) from read_parquet(${file}))::bigint as exported,
              (select count(*) from main.fct_contact_attempts f join main.fct_patient_funnel p using (patient_key) where p.referral_at is not null)::bigint as facts`,
    );
    expect(sums!.exported).toBeGreaterThan(0n);
    expect(sums!.exported).toBe(sums!.facts);
  });
});
