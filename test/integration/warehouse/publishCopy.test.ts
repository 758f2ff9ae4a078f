import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { copyOrClone, prepareReadOnlyCopy } from '../../../src/warehouse/publishCopy.js';
import { tempDir } from '../../helpers/tmp.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('copyOrClone', () => {
  it('gives an independent copy, cloned or not: a later write to the source leaves it as it was', () => {
    const from = join(tmp.dir, 'a');
    const to = join(tmp.dir, 'b');
    const bytes = randomBytes(3 * 1024 * 1024);
    writeFileSync(from, bytes);
    const cloned = copyOrClone(from, to);
    expect(typeof cloned).toBe('boolean');
    appendFileSync(from, 'more');
    writeFileSync(from, Buffer.from('overwritten'), { flag: 'r+' });
    expect(readFileSync(to).equals(bytes)).toBe(true);
    expect(statSync(to).size).toBe(bytes.length);
  });

  it('throws the copy error itself (not a clone refusal): a missing folder is ENOENT', () => {
    const from = join(tmp.dir, 'a');
    writeFileSync(from, 'x');
    expect(() => copyOrClone(from, join(tmp.dir, 'missing', 'b'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});

describe('prepareReadOnlyCopy, then commit', () => {
  it('publishes a copy that opens read-only with the rows of the live file, unchanged by later writes', async () => {
    const db = join(tmp.dir, 'w.duckdb');
    const wh = await Warehouse.open(db);
    let copy: string;
    try {
      await wh.run('create table t as select range as i from range(100000)');
      copy = (await prepareReadOnlyCopy(wh, 'run-1')).commit();
      await wh.run('insert into t select range from range(5)');
      await wh.checkpoint();
    } finally {
      await wh.close();
    }
    const reader = await Warehouse.open(copy, { readOnly: true });
    try {
      expect(Number((await reader.one<{ n: bigint }>('select count(*) as n from t'))!.n)).toBe(100000);
    } finally {
      await reader.close();
    }
  });
});
