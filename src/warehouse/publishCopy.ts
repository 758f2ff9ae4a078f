/**
 * The read-only copy of the warehouse that analysts and BI tools open (docs/contracts.md
 * guarantee 7): once a run has written what it writes, the job checkpoints the database (the
 * WAL is then empty and the file complete) and, still holding the lock, copies the file beside
 * it while its report only reads; when the run has succeeded, the copy's record of
 * the run is brought up to date and the copy renamed into place. A reader that has the old
 * copy open keeps reading it; the next open sees the new one. Readers never touch the live
 * file, so they never block the nightly writer.
 *
 * Where the file system can clone a file (XFS with reflink, btrfs, ZFS 2.2+, APFS), the copy is
 * a clone: it shares the live file's blocks copy-on-write, so it costs metadata, not the size
 * of the history; elsewhere (ext4, tmpfs) it is a byte copy (docs/performance.md "Published copy").
 *
 * @module
 */
import { constants, copyFileSync, lstatSync, statSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { WarehouseError } from '../errors.js';
import { sqlString, type Warehouse } from './Warehouse.js';
import { failpoint } from '../failpoints.js';
import { ensureReaderDir, readerModes, setReaderFileMode, type ReaderModes } from '../fs/readerFiles.js';

/**
 * Where the published copy of `dbPath` lives: `warehouse.duckdb` → `warehouse.readonly.duckdb`
 * in the same folder.
 */
export function publishedCopyPath(dbPath: string): string {
  const name = basename(dbPath).replace(/\.duckdb$/i, '');
  return join(dirname(dbPath), `${name}.readonly.duckdb`);
}

/**
 * A read-only copy being written by {@link startReadOnlyCopy}: the file is copied while the
 * run's later stages read the live file, then {@link PendingCopy.publish} puts it in place.
 */
export interface PendingCopy {
  /**
   * Wait for the copy, bring its record of this run up to date (`etl.runs` as the live file
   * has it now), and atomically replace the published copy with it.
   *
   * @returns the path of the published copy
   * @throws {WarehouseError} the copy, its update or the rename failed (the previous copy stays)
   */
  publish(): Promise<string>;
  /** Wait for the copy and remove it: the run failed, the previous copy stays. Never throws. */
  discard(): Promise<void>;
}

/**
 * Checkpoint (the file is then complete, the WAL empty), then start copying the file beside
 * it, off the JavaScript thread. Until {@link PendingCopy.publish} or
 * {@link PendingCopy.discard}, the caller may only read the warehouse and write rows of
 * `etl.runs`: a checkpoint or a bulk write would change the file under the copy
 * (docs/architecture.md "DuckDB").
 *
 * @param modes `--file-mode` and its folder mode; default owner only (0600 / 0700)
 * @throws {WarehouseError} the checkpoint failed
 */
export async function startReadOnlyCopy(wh: Warehouse, runId: string, modes: ReaderModes = readerModes()): Promise<PendingCopy> {
  if (wh.path === ':memory:') throw new WarehouseError('an in-memory warehouse cannot be published');
  failpoint('run.before-checkpoint');
  const t0 = performance.now();
  await wh.checkpoint();
  const t1 = performance.now();
  const target = publishedCopyPath(wh.path);
  const tmp = `${target}.${runId}.tmp`;
  // A run killed mid-copy leaves its temporary file behind (and, killed while updating it, its
  // WAL): remove them. Files only: the folder `<copy>.tmp` is DuckDB's spill folder of whoever
  // reads the copy.
  for (const f of readdirSync(dirname(target))) {
    if (!f.startsWith(`${basename(target)}.`) || !(f.endsWith('.tmp') || f.endsWith('.tmp.wal'))) continue;
    const leftover = join(dirname(target), f);
    if (lstatSync(leftover, { throwIfNoEntry: false })?.isFile()) rmSync(leftover, { force: true });
  }
  const copying = copyOrCloneAsync(wh.path, tmp).then((cloned) => ({ cloned, ms: performance.now() - t1 }));
  copying.catch(() => undefined); // observed by publish() or discard()
  const remove = (): void => {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}.wal`, { force: true });
  };
  return {
    async publish(): Promise<string> {
      try {
        const { cloned, ms } = await copying;
        failpoint('publish.mid-copy');
        await updateRunRecord(wh, tmp, runId);
        setReaderFileMode(tmp, modes);
        // Everything that can fail comes before the rename: once in place, the copy says the run succeeded.
        ensureReaderDir(dirname(target), modes);
        renameSync(tmp, target);
        wh.logger.debug(
          { checkpointMs: Math.round(t1 - t0), copyMs: Math.round(ms), bytes: statSync(target).size, cloned },
          'read-only copy published',
        );
      } catch (err) {
        remove();
        if (err instanceof WarehouseError) throw err;
        throw new WarehouseError(`cannot publish the read-only copy ${target}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
          cause: err,
          hint: 'free disk space; the previous copy is still in place',
        });
      }
      return target;
    },
    async discard(): Promise<void> {
      await copying.catch(() => undefined);
      remove();
    },
  };
}

/**
 * Checkpoint, then atomically replace the published copy, with `modes.file`; its folder (the
 * live database's) is widened to `modes.dir` so readers reach it (src/fs/readerFiles.ts).
 *
 * @param modes `--file-mode` and its folder mode; default owner only (0600 / 0700)
 * @returns the path of the published copy
 * @throws {WarehouseError} the checkpoint, the copy or the rename failed (the previous copy stays)
 */
export async function publishReadOnlyCopy(wh: Warehouse, runId: string, modes: ReaderModes = readerModes()): Promise<string> {
  return (await startReadOnlyCopy(wh, runId, modes)).publish();
}

/** Name under which the copy is attached to the writer's DuckDB while its run record is updated. */
const COPY_ALIAS = 'recruit_etl_published_copy';

/**
 * Replace the copy's `etl.runs` row of `runId` by the live file's: the copy was taken before
 * the run recorded its outcome. Nothing to do in a warehouse without `etl.runs` (not migrated).
 *
 * @throws {WarehouseError}
 */
async function updateRunRecord(wh: Warehouse, copy: string, runId: string): Promise<void> {
  const runLog = await wh.one<{ n: bigint }>(
    "select count(*) as n from duckdb_tables() where database_name = current_database() and schema_name = 'etl' and table_name = 'runs'",
  );
  if (runLog?.n !== 1n) return;
  await wh.run(`attach ${sqlString(copy)} as ${COPY_ALIAS}`);
  try {
    await wh.run(`delete from ${COPY_ALIAS}.etl.runs where run_id = ?`, [runId]);
    await wh.run(`insert into ${COPY_ALIAS}.etl.runs by name select * from etl.runs where run_id = ?`, [runId]);
    await wh.run(`checkpoint ${COPY_ALIAS}`);
  } finally {
    await wh.run(`detach ${COPY_ALIAS}`);
  }
}

/** Error codes of a file system (or a pair of them) that cannot clone a file. */
const NO_CLONE = new Set(['ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EINVAL', 'ENOSYS', 'ENOTTY']);

/**
 * Clone `from` to `to` where the file system can, else copy its bytes.
 *
 * @returns whether the copy is a clone
 * @throws the copy's error (ENOSPC, EACCES, …), not a refused clone
 */
export function copyOrClone(from: string, to: string): boolean {
  try {
    copyFileSync(from, to, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch (err) {
    if (!NO_CLONE.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
  }
  copyFileSync(from, to);
  return false;
}

/**
 * {@link copyOrClone} off the JavaScript thread (libuv's pool).
 *
 * @returns whether the copy is a clone
 * @throws the copy's error (ENOSPC, EACCES, …), not a refused clone
 */
export async function copyOrCloneAsync(from: string, to: string): Promise<boolean> {
  try {
    await copyFile(from, to, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch (err) {
    if (!NO_CLONE.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
  }
  await copyFile(from, to);
  return false;
}
