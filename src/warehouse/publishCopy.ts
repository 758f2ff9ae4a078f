/**
 * The read-only copy of the warehouse that analysts and BI tools open (docs/contracts.md
 * guarantee 7): after a successful run the job checkpoints the database (the WAL is then
 * empty and the file complete) and, still holding the lock, copies the file beside it and
 * renames the copy into place. A reader that has the old copy open keeps reading it; the
 * next open sees the new one. Readers never touch the live file, so they never block the
 * nightly writer. The previous copy is kept aside (a hard link) until the live `etl.runs` row
 * says the run succeeded, and put back when it does not ({@link PreparedCopy.commit},
 * {@link settleKeptCopies}; docs/contracts.md "Guarantees", 2).
 *
 * Where the file system can clone a file (XFS with reflink, btrfs, ZFS 2.2+, APFS), the copy is
 * a clone: it shares the live file's blocks copy-on-write, so it costs metadata, not the size
 * of the history; elsewhere (ext4, tmpfs) it is a byte copy (docs/performance.md "Published copy").
 *
 * @module
 */
import { constants, copyFileSync, linkSync, lstatSync, statSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { WarehouseError } from '../errors.js';
import type { Logger } from '../log/logger.js';
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
   * Put it in place, keeping the previous copy aside until the live `etl.runs` row says how
   * the run ended ({@link keptCopyPath}; docs/contracts.md "Guarantees", 2): the previous copy
   * is hard-linked to `<copy>.previous.<runId>` (no copy before: an empty marker
   * `<copy>.previous.<runId>.none`), then the new copy is renamed over it atomically, so a
   * reader always finds a complete file.
   * @returns the copy in place, to be settled once the live row is recorded
   * @throws {WarehouseError} the rename failed (the temporary file and what was kept aside are removed; the previous copy stays)
   */
  commit(): PublishedCopy;
  /** Remove the temporary file (the previous copy stays). */
  discard(): void;
}

/** A copy renamed into place by {@link PreparedCopy.commit}, the previous one kept aside. */
export interface PublishedCopy {
  /** {@link publishedCopyPath}. */
  target: string;
  /** The live row says `succeeded`: remove the previous copy kept aside (best effort: a leftover goes with the next command). */
  confirm(): void;
  /**
   * The live row could not be recorded `succeeded`: put the previous copy back (renamed over
   * the target), or remove the target when there was none. Best effort: what it cannot do,
   * the next command's {@link settleKeptCopies} does.
   */
  revert(): void;
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
    // Everything that can fail comes before the rename: once in place, the copy says the run
    // succeeded, until `revert` (or the next command's settleKeptCopies) puts the previous one back.
    ensureReaderDir(dirname(target), modes);
  } catch (err) {
    throw fail(err);
  }
  return {
    target,
    commit: () => {
      let bytes: number;
      try {
        bytes = statSync(tmp).size;
      } catch (err) {
        throw fail(err);
      }
      const kept = keepPrevious(target, runId, wh.logger, fail);
      try {
        renameSync(tmp, target);
      } catch (err) {
        for (const f of kept) rmSync(f, { force: true });
        throw fail(err);
      }
      wh.logger.debug(
        {
          checkpointMs: Math.round(t1 - t0),
          copyMs: Math.round(copyMs),
          changeMs: Math.round(changeMs),
          bytes,
          cloned,
        },
        'read-only copy published',
      );
      return publishedCopy(wh, target, runId, kept);
    },
    discard: () => {
      rmSync(tmp, { force: true });
    },
  };
}

/** The {@link PublishedCopy} of `target`, put in place by run `runId`, which kept `kept` aside. */
function publishedCopy(wh: Warehouse, target: string, runId: string, kept: readonly string[]): PublishedCopy {
  return {
    target,
    confirm: () => {
      try {
        for (const f of kept) rmSync(f, { force: true });
      } catch (err) {
        wh.logger.warn(
          { err: (err as NodeJS.ErrnoException).code ?? String(err) },
          'the previous read-only copy kept aside stays until the next command',
        );
      }
    },
    revert: () => {
      try {
        restoreKept(target, keptCopyPath(target, runId));
      } catch (err) {
        wh.logger.warn(
          { err: (err as NodeJS.ErrnoException).code ?? String(err) },
          'the previous read-only copy could not be put back yet',
        );
      }
    },
  };
}

/**
 * Where the copy in place before run `runId` is kept while that run's live row is not yet
 * recorded: `<copy>.previous.<runId>`; `<kept>.none` marks that there was none.
 */
export function keptCopyPath(target: string, runId: string): string {
  return `${target}.previous.${runId}`;
}

/**
 * Keep the copy in place aside under {@link keptCopyPath}: a hard link (the target stays in
 * place, and it costs no copy of the file), else, where the file system has no hard links, a
 * clone or byte copy under a temporary name renamed to it. No copy in place: an empty marker.
 * Anything else in place (a folder, a symlink) keeps nothing, as before.
 *
 * @returns the files written (to remove once the live row is recorded)
 * @throws {WarehouseError} from `fail`: nothing could be kept (nothing is left)
 */
function keepPrevious(target: string, runId: string, logger: Logger, fail: (err: unknown) => WarehouseError): string[] {
  const kept = keptCopyPath(target, runId);
  const st = lstatSync(target, { throwIfNoEntry: false });
  try {
    if (!st) {
      writeFileSync(`${kept}.none`, '', { mode: 0o600, flag: 'wx' });
      return [`${kept}.none`];
    }
    if (!st.isFile()) return [];
    try {
      linkSync(target, kept);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (!NO_LINK.has(code)) throw err;
      // EPERM also where fs.protected_hardlinks refuses a copy another user owns (a run as root).
      logger.warn({ code }, 'cannot hard-link the previous read-only copy: copying it aside instead (a full copy per run)');
      copyOrClone(target, `${kept}.tmp`);
      renameSync(`${kept}.tmp`, kept);
    }
    return [kept];
  } catch (err) {
    for (const f of [kept, `${kept}.tmp`, `${kept}.none`]) rmSync(f, { force: true });
    throw fail(err);
  }
}

/** Error codes of a file system that has no hard links. */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/**
 * Put back what {@link keepPrevious} kept at `kept`: the kept copy renamed over `target`
 * (atomic; when both are links to one file the rename does nothing, so the name is removed),
 * or, with the marker `<kept>.none`, `target` removed. Only regular files are removed or
 * renamed; a symlink is never followed.
 *
 * @returns whether anything was there to put back
 * @throws the file system's error (nothing is lost: the next command tries again)
 */
function restoreKept(target: string, kept: string): boolean {
  if (lstatSync(kept, { throwIfNoEntry: false })?.isFile()) {
    renameSync(kept, target);
    if (lstatSync(kept, { throwIfNoEntry: false })?.isFile()) rmSync(kept);
    rmIfFile(`${kept}.none`);
    return true;
  }
  if (!lstatSync(`${kept}.none`, { throwIfNoEntry: false })?.isFile()) return false;
  rmIfFile(target);
  rmSync(`${kept}.none`);
  return true;
}

function rmIfFile(path: string): void {
  if (lstatSync(path, { throwIfNoEntry: false })?.isFile()) rmSync(path, { force: true });
}

/** The run id of `name` when it is `<copy>.previous.<runId>` or `<copy>.previous.<runId>.none` (as {@link keptCopyPath} names them). */
function keptRunId(target: string, name: string): string | undefined {
  const prefix = `${basename(target)}.previous.`;
  return name.startsWith(prefix) ? /^([A-Za-z0-9_-]+)(?:\.none)?$/.exec(name.slice(prefix.length))?.[1] : undefined;
}

/**
 * Settle the copies a run kept aside and did not remove (killed between putting its copy in
 * place and recording its live row; docs/contracts.md "Guarantees", 2). Call it under the
 * write lock, before the command records anything, so that no reader finds a copy that calls
 * a run succeeded which the live file does not. Newest run first (by `etl.runs.started_at`;
 * a run id without a row counts as oldest): a run whose live `etl.runs` row is `succeeded`
 * owns the copy in place, so its kept file, and those of older runs, are only removed; a
 * run whose row says anything else (`running`, `failed`, `abandoned`, none) gets its kept
 * copy put back (its marker: the copy removed). Only regular files named exactly as
 * {@link keptCopyPath} names them are touched; symlinks are neither followed nor removed.
 *
 * @returns the run ids whose previous copy was put back
 * @throws {WarehouseError} a kept copy that cannot be put back (exit 7)
 */
export async function settleKeptCopies(wh: Warehouse): Promise<string[]> {
  if (wh.path === ':memory:') return [];
  const target = publishedCopyPath(wh.path);
  const ids = new Set<string>();
  for (const f of readdirSync(dirname(target))) {
    const id = keptRunId(target, f);
    if (id !== undefined && lstatSync(join(dirname(target), f), { throwIfNoEntry: false })?.isFile()) ids.add(id);
  }
  const runs: { id: string; status: string | undefined; started: number }[] = [];
  for (const id of ids) {
    const row = await wh.one<{ status: string; started: number }>(
      'select status, epoch(started_at)::double as started from etl.runs where run_id = ?',
      [id],
    );
    runs.push({ id, status: row?.status, started: row?.started ?? -Infinity });
  }
  runs.sort((a, b) => b.started - a.started || (a.id < b.id ? 1 : -1));
  const restored: string[] = [];
  let settled = false;
  for (const { id, status } of runs) {
    const kept = keptCopyPath(target, id);
    settled ||= status === 'succeeded';
    try {
      if (settled) for (const f of [kept, `${kept}.none`]) rmIfFile(f);
      else if (restoreKept(target, kept)) restored.push(id);
    } catch (err) {
      throw new WarehouseError(
        `cannot put back the read-only copy kept aside by run ${id}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        {
          cause: err,
          hint: `the copy in place may call that run succeeded; check the folder of ${target}`,
        },
      );
    }
  }
  if (restored.length > 0)
    wh.logger.warn({ runs: restored }, 'put back the read-only copy of before a run that did not record its success');
  return restored;
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
    copyFileSync(from, to, constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
    return true;
  } catch (err) {
    if (!NO_CLONE.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
  }
  copyFileSync(from, to, constants.COPYFILE_EXCL);
  return false;
}
