/**
 * The read-only copy of the warehouse that analysts and BI tools open (docs/contracts.md
 * guarantee 7): after a successful run the job checkpoints the database (the WAL is then
 * empty and the file complete) and, still holding the lock, copies the file beside it and
 * renames the copy into place. A reader that has the old copy open keeps reading it; the
 * next open sees the new one. Readers never touch the live file, so they never block the
 * nightly writer.
 *
 * Where the file system can clone a file (XFS with reflink, btrfs, ZFS 2.2+, APFS), the copy is
 * a clone: it shares the live file's blocks copy-on-write, so it costs metadata, not the size
 * of the history; elsewhere (ext4, tmpfs) it is a byte copy (docs/performance.md "Published copy").
 *
 * @module
 */
import { constants, copyFileSync, lstatSync, statSync, readdirSync, renameSync, rmSync } from 'node:fs';
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

/** A read-only copy written under its temporary name, not yet in place. */
export interface PreparedCopy {
  /** Where it goes: {@link publishedCopyPath}. */
  target: string;
  /**
   * Rename it into place (the previous copy is replaced atomically).
   * @returns {@link PreparedCopy.target}
   * @throws {WarehouseError} the rename failed (the temporary file is removed; the previous copy stays)
   */
  commit(): string;
  /** Remove the temporary file (the previous copy stays). */
  discard(): void;
}

/**
 * Checkpoint, then copy the database to a temporary name beside the published copy, with
 * `modes.file`; its folder (the live database's) is widened to `modes.dir` so readers reach
 * it (src/fs/readerFiles.ts). `finish` may then change the copy, attached under a catalog
 * name of its own: the job records the run as succeeded there (docs/contracts.md
 * "Guarantees": the live file says so only once everything else succeeded).
 *
 * @param modes `--file-mode` and its folder mode; default owner only (0600 / 0700)
 * @param finish given the catalog name the copy is attached as, while it is
 * @throws {WarehouseError} the checkpoint's or the copy's failure (the previous copy stays)
 */
export async function prepareReadOnlyCopy(
  wh: Warehouse,
  runId: string,
  modes: ReaderModes = readerModes(),
  finish?: (catalog: string) => Promise<void>,
): Promise<PreparedCopy> {
  if (wh.path === ':memory:') throw new WarehouseError('an in-memory warehouse cannot be published');
  failpoint('run.before-checkpoint');
  const t0 = performance.now();
  await wh.checkpoint();
  const t1 = performance.now();
  const target = publishedCopyPath(wh.path);
  const tmp = `${target}.${runId}.tmp`;
  removeLeftovers(target);
  const fail = (err: unknown): WarehouseError => {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}.wal`, { force: true });
    return new WarehouseError(`cannot publish the read-only copy ${target}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      cause: err,
      hint: 'free disk space; the previous copy is still in place',
    });
  };
  let cloned: boolean;
  let changeMs = 0;
  let copyMs = 0;
  try {
    cloned = copyOrClone(wh.path, tmp);
    failpoint('publish.mid-copy');
    const t2 = performance.now();
    copyMs = t2 - t1;
    if (finish) await changeCopy(wh, tmp, runId, finish);
    changeMs = performance.now() - t2;
    setReaderFileMode(tmp, modes);
    // Everything that can fail comes before the rename: once in place, the copy says the run succeeded.
    ensureReaderDir(dirname(target), modes);
  } catch (err) {
    throw fail(err);
  }
  return {
    target,
    commit: () => {
      try {
        renameSync(tmp, target);
      } catch (err) {
        throw fail(err);
      }
      wh.logger.debug(
        {
          checkpointMs: Math.round(t1 - t0),
          copyMs: Math.round(copyMs),
          changeMs: Math.round(changeMs),
          bytes: statSync(target).size,
          cloned,
        },
        'read-only copy published',
      );
      return target;
    },
    discard: () => {
      rmSync(tmp, { force: true });
    },
  };
}

/** A run killed mid-copy leaves its temporary file behind: remove it (files only: `<copy>.tmp` is a reader's spill folder). */
function removeLeftovers(target: string): void {
  for (const f of readdirSync(dirname(target))) {
    if (!f.startsWith(`${basename(target)}.`) || !(f.endsWith('.tmp') || f.endsWith('.tmp.wal'))) continue;
    const leftover = join(dirname(target), f);
    if (lstatSync(leftover, { throwIfNoEntry: false })?.isFile()) rmSync(leftover, { force: true });
  }
}

/** Attach the copy `tmp` under a catalog name no warehouse or schema uses, run `finish`, fold its WAL in, detach. */
async function changeCopy(wh: Warehouse, tmp: string, runId: string, finish: (catalog: string) => Promise<void>): Promise<void> {
  const catalog = `recruit_etl_copy_${runId.replace(/[^A-Za-z0-9]/g, '_').toLowerCase()}`;
  await wh.run(`attach ${sqlString(tmp)} as ${catalog}`);
  try {
    await finish(catalog);
    await wh.run(`checkpoint ${catalog}`);
  } finally {
    await wh.run(`detach ${catalog}`);
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
