/**
 * DuckDB's errors quote the input they failed on (a conversion error's `Input: …`, a CSV
 * error's `Original Line: …`), which may be event payload: neither the message nor, with
 * `--verbose`, the causes and stacks may carry it (docs/security.md; docs/ingest.md "Quarantine").
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { Warehouse, sqlString } from '../../../src/warehouse/Warehouse.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { tempDir } from '../../helpers/tmp.js';

const CANARY = 'RS-CANARY-4711';

describe('a DuckDB error quotes no input, with --verbose either (a CSV error printed a whole batch row in the cause before)', () => {
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  beforeEach(async () => {
    tmp = tempDir();
    wh = await Warehouse.open(join(tmp.dir, 'w.duckdb'));
  });
  afterEach(async () => {
    await wh.close();
    tmp.cleanup();
  });

  const failure = async (sql: string) => {
    const err = await wh.run(sql).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    return describeFailure(err, true).text;
  };

  it('a conversion error (Input: …)', async () => {
    const text = await failure(`select ${sqlString(`{"referralSubjectId": "${CANARY}", `)}::json`);
    expect(text).toMatch(/DuckDB failed while running SQL: .*JSON/);
    expect(text).toMatch(/caused by: Error: .*JSON/);
    expect(text).not.toContain(CANARY);
  });

  it('a CSV error (Original Line: …), its second line and after', async () => {
    const file = join(tmp.dir, 'rows.csv');
    writeFileSync(file, `1,a\n2,b,{"referralSubjectId":"${CANARY}"}\n`);
    const text = await failure(`select * from read_csv(${sqlString(file)}, auto_detect = false, delim = ',', quote = '', escape = '', header = false, columns = {'a': 'integer', 'b': 'varchar'}, strict_mode = true)`);
    expect(text).toMatch(/CSV Error/);
    expect(text).not.toContain(CANARY);
  });
});
