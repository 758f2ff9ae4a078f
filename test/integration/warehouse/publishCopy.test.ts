import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { WarehouseError } from '../../../src/errors.js';
import { copyOrClone, keptCopyPath, prepareReadOnlyCopy, publishedCopyPath, settleKeptCopies } from '../../../src/warehouse/publishCopy.js';
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
      copy = (await prepareReadOnlyCopy(wh, 'run-1')).commit().target;
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

describe('the previous copy kept aside until the live row is recorded (docs/contracts.md "Guarantees", 2)', () => {
  /** Names beside the copy that hold `.previous.`. */
  const kept = (db: string): string[] =>
    readdirSync(tmp.dir).filter((f) => f.startsWith(`${publishedCopyPath(db).split('/').pop()}.previous.`));
  const ino = (path: string): number => lstatSync(path).ino;
  /** A migrated warehouse in the temporary folder with one table. */
  const openWh = async (): Promise<{ wh: Warehouse; db: string }> => {
    const db = join(tmp.dir, 'w.duckdb');
    const wh = await Warehouse.open(db);
    await wh.migrate();
    await wh.run('create table t as select range as i from range(1000)');
    return { wh, db };
  };
  const row = (wh: Warehouse, runId: string, status: string, startedSecondsAgo: number): Promise<void> =>
    wh.run(`insert into etl.runs (run_id, command, started_at, status) values (?, 'run', now() - to_seconds(?::double), ?)`, [
      runId,
      startedSecondsAgo,
      status,
    ]);

  it('commit hard-links the copy in place to <copy>.previous.<runId>, or marks that there was none; confirm removes either', async () => {
    const { wh, db } = await openWh();
    try {
      const target = publishedCopyPath(db);
      const first = (await prepareReadOnlyCopy(wh, 'r1')).commit();
      expect(kept(db)).toEqual([`${target.split('/').pop()}.previous.r1.none`]);
      expect(readFileSync(`${keptCopyPath(target, 'r1')}.none`).length).toBe(0);
      first.confirm();
      expect(kept(db)).toEqual([]);
      const before = ino(target);
      const second = (await prepareReadOnlyCopy(wh, 'r2')).commit();
      expect(ino(keptCopyPath(target, 'r2'))).toBe(before);
      expect(ino(target)).not.toBe(before);
      second.confirm();
      expect(kept(db)).toEqual([]);
      expect(existsSync(target)).toBe(true);
    } finally {
      await wh.close();
    }
  });

  it('a symlink planted at a name the publication writes is never written through (the copy, the marker): exit 7, the victim intact', async () => {
    const { wh, db } = await openWh();
    try {
      const target = publishedCopyPath(db);
      const victim = join(tmp.dir, 'victim.txt');
      writeFileSync(victim, 'keep me');
      symlinkSync(victim, `${keptCopyPath(target, 'r1')}.none`);
      const marker = await prepareReadOnlyCopy(wh, 'r1');
      expect(() => marker.commit()).toThrow(WarehouseError);
      expect(existsSync(target)).toBe(false);
      expect(existsSync(`${keptCopyPath(target, 'r1')}.none`)).toBe(false); // the link removed, not followed
      symlinkSync(victim, `${target}.r2.tmp`);
      await expect(prepareReadOnlyCopy(wh, 'r2')).rejects.toThrow(WarehouseError);
      expect(readFileSync(victim, 'utf8')).toBe('keep me');
      expect(lstatSync(`${target}.r2.tmp`, { throwIfNoEntry: false })).toBeUndefined(); // the link removed, not followed
    } finally {
      await wh.close();
    }
  });

  it('revert puts the previous copy back over the target, or removes the target when there was none', async () => {
    const { wh, db } = await openWh();
    try {
      const target = publishedCopyPath(db);
      (await prepareReadOnlyCopy(wh, 'r1')).commit().revert();
      expect(existsSync(target)).toBe(false);
      expect(kept(db)).toEqual([]);
      (await prepareReadOnlyCopy(wh, 'r2')).commit().confirm();
      const good = ino(target);
      const bytes = readFileSync(target);
      await wh.run('insert into t select 1');
      (await prepareReadOnlyCopy(wh, 'r3')).commit().revert();
      expect(ino(target)).toBe(good);
      expect(readFileSync(target).equals(bytes)).toBe(true);
      expect(kept(db)).toEqual([]);
    } finally {
      await wh.close();
    }
  });

  it('settleKeptCopies: a run not recorded succeeded gets the previous copy back; a succeeded one only loses its kept file', async () => {
    const { wh, db } = await openWh();
    try {
      const target = publishedCopyPath(db);
      (await prepareReadOnlyCopy(wh, 'ra')).commit().confirm();
      const a = ino(target);
      // Killed after the rename, before the live row: still `running` (or closed as abandoned).
      (await prepareReadOnlyCopy(wh, 'rb')).commit();
      await row(wh, 'rb', 'running', 10);
      expect(await settleKeptCopies(wh)).toEqual(['rb']);
      expect(ino(target)).toBe(a);
      expect(kept(db)).toEqual([]);
      // Killed after the live row said succeeded: the copy in place is that run's.
      (await prepareReadOnlyCopy(wh, 'rc')).commit();
      const c = ino(target);
      await row(wh, 'rc', 'succeeded', 5);
      expect(await settleKeptCopies(wh)).toEqual([]);
      expect(ino(target)).toBe(c);
      expect(kept(db)).toEqual([]);
    } finally {
      await wh.close();
    }
  });

  it('settleKeptCopies: no copy before a killed first run removes the copy; newest run first; only its own regular files', async () => {
    const { wh, db } = await openWh();
    try {
      const target = publishedCopyPath(db);
      (await prepareReadOnlyCopy(wh, 'r1')).commit();
      await row(wh, 'r1', 'abandoned', 30);
      // Not ours: other names, a folder, a symlink to a file elsewhere (neither followed nor removed).
      const outside = join(tmp.dir, 'outside');
      writeFileSync(outside, 'keep me');
      symlinkSync(outside, keptCopyPath(target, 'rs'));
      mkdirSync(keptCopyPath(target, 'rd'));
      writeFileSync(`${keptCopyPath(target, 'x')}.y`, 'other');
      writeFileSync(`${target}.previous`, 'other');
      await row(wh, 'rs', 'failed', 20);
      await row(wh, 'rd', 'failed', 20);
      expect(await settleKeptCopies(wh)).toEqual(['r1']);
      expect(existsSync(target)).toBe(false);
      expect(readFileSync(outside, 'utf8')).toBe('keep me');
      expect(readFileSync(`${target}.previous`, 'utf8')).toBe('other');
      expect(kept(db).sort()).toEqual(['w.readonly.duckdb.previous.rd', 'w.readonly.duckdb.previous.rs', 'w.readonly.duckdb.previous.x.y']);
      // Two kept files: the older run failed, the newer one succeeded: the newer copy stays.
      (await prepareReadOnlyCopy(wh, 'r2')).commit().confirm();
      (await prepareReadOnlyCopy(wh, 'r3')).commit();
      await row(wh, 'r3', 'failed', 3);
      (await prepareReadOnlyCopy(wh, 'r4')).commit();
      const newest = ino(target);
      await row(wh, 'r4', 'succeeded', 1);
      expect(await settleKeptCopies(wh)).toEqual([]);
      expect(ino(target)).toBe(newest);
      expect(kept(db).filter((f) => /previous\.r[0-9]/.test(f))).toEqual([]);
    } finally {
      await wh.close();
    }
  });
});
