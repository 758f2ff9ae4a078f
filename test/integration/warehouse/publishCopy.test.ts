import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { copyOrClone, copyOrCloneAsync, publishReadOnlyCopy, startReadOnlyCopy } from '../../../src/warehouse/publishCopy.js';
import { RunLog } from '../../../src/warehouse/RunLog.js';
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

describe('publishReadOnlyCopy', () => {
  it('publishes a copy that opens read-only with the rows of the live file, unchanged by later writes', async () => {
    const db = join(tmp.dir, 'w.duckdb');
    const wh = await Warehouse.open(db);
    let copy: string;
    try {
      await wh.run('create table t as select range as i from range(100000)');
      copy = await publishReadOnlyCopy(wh, 'run-1');
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

describe('startReadOnlyCopy (docs/architecture.md "DuckDB")', () => {
  it('copies while the run goes on reading, then publishes the run as the live file records it', async () => {
    const db = join(tmp.dir, 'w.duckdb');
    const wh = await Warehouse.open(db);
    let copy: string;
    try {
      await wh.migrate();
      const log = new RunLog(wh);
      await log.start('run-1', 'run', null);
      await wh.run('create table t as select range as i from range(100000)');
      const pending = await startReadOnlyCopy(wh, 'run-1');
      // What a report does meanwhile: read; then the run records its outcome.
      expect(Number((await wh.one<{ n: bigint }>('select count(*) as n from t'))!.n)).toBe(100000);
      await log.finish('run-1', 'succeeded', { eventsLoaded: 7, pagesFetched: 1, sitesLoaded: 0, modelsBuilt: 3, filesExported: 2 }, { ok: true });
      copy = await pending.publish();
    } finally {
      await wh.close();
    }
    const runs = 'select run_id, status, finished_at, events_loaded, models_built, summary::varchar as summary from etl.runs order by run_id';
    const reader = await Warehouse.open(copy, { readOnly: true });
    let copied: Record<string, unknown>[];
    try {
      copied = await reader.all(runs);
      expect(Number((await reader.one<{ n: bigint }>('select count(*) as n from t'))!.n)).toBe(100000);
    } finally {
      await reader.close();
    }
    expect(copied).toMatchObject([{ run_id: 'run-1', status: 'succeeded', events_loaded: 7n, models_built: 3n }]);
    const live = await Warehouse.open(db, { readOnly: true });
    try {
      expect(copied).toEqual(await live.all(runs));
    } finally {
      await live.close();
    }
    expect(readdirSync(tmp.dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('a discarded copy (the run failed) is removed and the previous copy stays in place', async () => {
    const db = join(tmp.dir, 'w.duckdb');
    const wh = await Warehouse.open(db);
    try {
      await wh.migrate();
      await wh.run('create table t as select range as i from range(1000)');
      const first = await publishReadOnlyCopy(wh, 'run-1');
      const inode = statSync(first).ino;
      await wh.run('insert into t select range from range(5)');
      const pending = await startReadOnlyCopy(wh, 'run-2');
      await pending.discard();
      expect(statSync(first).ino).toBe(inode);
      expect(readdirSync(tmp.dir).filter((f) => f.includes('.tmp'))).toEqual([]);
    } finally {
      await wh.close();
    }
  });

  it('copyOrCloneAsync copies the bytes, and fails with the copy\'s error', async () => {
    const from = join(tmp.dir, 'a');
    writeFileSync(from, randomBytes(300_000));
    const to = join(tmp.dir, 'b');
    expect(typeof (await copyOrCloneAsync(from, to))).toBe('boolean');
    expect(readFileSync(to).equals(readFileSync(from))).toBe(true);
    await expect(copyOrCloneAsync(from, join(tmp.dir, 'missing', 'b'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
