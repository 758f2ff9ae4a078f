/**
 * The export stage: every mart and dimension (`fct_*`, `dim_*`, `mart_*` tables in schema
 * `main`) and every data-quality result (`dq_*`) as Parquet, with `manifest.json`, atomic as
 * a set (docs/exports.md).
 *
 * Each export writes a new snapshot folder `<export-dir>/snapshots/<run_id>/`: every
 * `<model>.parquet` (written under a temporary name in that folder, read back and checked,
 * then renamed) and its `manifest.json`, all fsynced. Only then is the symlink
 * `<export-dir>/current` swapped to it, by one `rename`. The stable paths
 * `<export-dir>/<model>.parquet` and `<export-dir>/manifest.json` are symlinks into
 * `current`, so a reader sees the whole previous export or the whole new one, never a mix
 * and never half a file. A failure or a kill before the swap leaves `current` and every
 * stable path on the previous export; the next export removes what a killed one left.
 *
 * @module
 */
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isExportedModel } from '../catalog/catalog.js';
import { ExportError, isEtlError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { NO_PROGRESS, type StageProgress } from '../log/progress.js';
import { sqlString, UNORDERED_WRITES, type Warehouse } from '../warehouse/Warehouse.js';
import { failpoint } from '../failpoints.js';
import { ensureReaderDir, readerModes, setReaderFileMode, type ReaderModes } from '../fs/readerFiles.js';
import {
  adoptLegacyLayout,
  adoptRestoredCurrent,
  CURRENT_LINK,
  currentSnapshotId,
  fsyncPath,
  isSafeSnapshotName,
  linkStablePaths,
  MANIFEST_FILE,
  pruneSnapshots,
  replaceWithSymlink,
  snapshotRef,
  SNAPSHOTS_DIR,
  snapshotsFolderProblem,
  sweepTemporaries,
} from './exportSet.js';

/** One exported file in `manifest.json`. */
export interface ManifestEntry {
  model: string;
  /** File name, `<model>.parquet`: in the snapshot folder, and the stable path in the export folder. */
  file: string;
  rows: number;
  /** Size of the file in bytes. */
  bytes: number;
  columns: { name: string; type: string }[];
}

/** The shape of `manifest.json`. */
export interface Manifest {
  runId: string;
  /** ISO 8601 UTC instant the manifest was written. */
  exportedAt: string;
  /** The snapshot folder holding these files, relative to the export folder: `snapshots/<runId>`. */
  snapshot: string;
  files: ManifestEntry[];
}

/** Options of {@link exportParquet}. */
export interface ExportOptions {
  wh: Warehouse;
  exportDir: string;
  /** The run's id; names the snapshot folder, so letters, digits, `.`, `_`, `-` only. */
  runId: string;
  logger?: Logger;
  now?: () => Date;
  /** Receives files written of total (src/log/progress.ts). */
  progress?: StageProgress;
  /** `--file-mode` of the Parquet files and the manifest, and its folder mode; default 0600 / 0700 (src/fs/readerFiles.ts). */
  modes?: ReaderModes;
}

/**
 * Write the exports as a new snapshot and publish it (docs/exports.md).
 *
 * Before the swap of `current`, a failure removes the new snapshot folder (best effort)
 * and leaves the previous export whole at every stable path. After the swap the new set
 * is published; a failure to link a stable path is still an error (the next export
 * repairs it), a failure to delete old snapshots is only logged.
 *
 * @returns the manifest written
 * @throws {ExportError} the run id cannot name a folder, preparing the folder, writing or
 *   checking a file, writing the manifest, the swap or linking a stable path failed (exit 7)
 */
export async function exportParquet(opts: ExportOptions): Promise<Manifest> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'export' });
  const dir = resolve(opts.exportDir);
  const { runId } = opts;
  const modes = opts.modes ?? readerModes();
  if (!isSafeSnapshotName(runId)) throw new ExportError(`run id ${JSON.stringify(runId)} cannot name a snapshot folder`);
  const snapshot = snapshotRef(runId);
  const snapDir = join(dir, SNAPSHOTS_DIR, runId);
  const previous = prepareSnapshot(dir, runId, modes, logger);

  let manifest: Manifest;
  try {
    manifest = await opts.wh.withSettings(UNORDERED_WRITES, () => writeSnapshot(opts, snapDir, snapshot));
    failpoint('export.before-swap');
    // The swap: from here on, every reader resolving `current` gets the new set.
    replaceWithSymlink(dir, CURRENT_LINK, snapshot, runId);
    fsyncPath(dir, 'dir');
  } catch (err) {
    try {
      rmSync(snapDir, { recursive: true, force: true });
    } catch (rmErr) {
      logger.warn(
        { snapshot, code: (rmErr as NodeJS.ErrnoException).code },
        'cannot remove the unpublished snapshot; the next export will',
      );
    }
    if (isEtlError(err) && err.code === 'E_EXPORT') throw err;
    throw new ExportError(
      `cannot publish the export ${snapshot} in ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      {
        cause: err,
        hint: 'the previous export is still in place',
      },
    );
  }

  linkAndPrune(dir, runId, manifest, previous, logger);
  logger.info({ files: manifest.files.length, dir, snapshot }, 'exports written');
  return manifest;
}

/**
 * Make the export folder ready for the snapshot `runId`: folders of `modes`, temporaries swept,
 * a restored `current` folder or the legacy layout adopted as snapshots, an empty snapshot folder.
 *
 * @returns the snapshot `current` named before (undefined: none)
 * @throws {ExportError} `snapshots` is not a folder, `runId` is already published, or a file
 *   operation failed (exit 7)
 */
function prepareSnapshot(dir: string, runId: string, modes: ReaderModes, logger: Logger): string | undefined {
  const snapDir = join(dir, SNAPSHOTS_DIR, runId);
  let previous: string | undefined;
  try {
    ensureReaderDir(dir, modes);
    const problem = snapshotsFolderProblem(dir);
    if (problem !== undefined) {
      throw new ExportError(problem, { hint: `replace it with a folder (or point --export-dir at the other disk); nothing was written` });
    }
    ensureReaderDir(join(dir, SNAPSHOTS_DIR), modes, true);
    sweepTemporaries(dir);
    const restored = adoptRestoredCurrent(dir, runId);
    if (restored !== undefined)
      logger.warn(
        { snapshot: snapshotRef(restored) },
        'current was a folder (a restore that followed symlinks); it is now a snapshot and current links to it',
      );
    const legacy = adoptLegacyLayout(dir, runId, modes);
    if (legacy !== undefined)
      logger.info({ snapshot: snapshotRef(legacy) }, 'export folder upgraded: the files of the previous export are now its snapshot');
    previous = currentSnapshotId(dir);
    if (previous === runId) throw new ExportError(`${snapDir} is already the published export; a run id is used once`);
    rmSync(snapDir, { recursive: true, force: true });
    ensureReaderDir(snapDir, modes, true);
  } catch (err) {
    if (isEtlError(err)) throw err;
    throw new ExportError(`cannot prepare the export folder ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  return previous;
}

/**
 * After the swap: link the stable paths of `manifest`'s files to `current` and delete old
 * snapshots (all but `runId` and `previous`); a failure to delete is only logged.
 *
 * @throws {ExportError} a stable path could not be linked (the new export is published; exit 7)
 */
function linkAndPrune(dir: string, runId: string, manifest: Manifest, previous: string | undefined, logger: Logger): void {
  const snapshot = snapshotRef(runId);
  try {
    const removed = linkStablePaths(dir, [...manifest.files.map((f) => f.file), MANIFEST_FILE], runId);
    if (removed.length > 0) logger.info({ removed }, 'stable paths of models no longer exported removed');
  } catch (err) {
    throw new ExportError(
      `export ${snapshot} is published as ${join(dir, CURRENT_LINK)}, but its stable paths could not be linked: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      {
        cause: err,
        hint: 'run the export again; readers of current/ see the new export',
      },
    );
  }
  try {
    const pruned = pruneSnapshots(dir, runId, new Set(previous === undefined ? [] : [previous]));
    if (pruned.removed.length > 0) logger.debug({ pruned: pruned.removed }, 'old snapshots removed');
    if (pruned.foreign.length > 0)
      logger.warn(
        { left: pruned.foreign.slice(0, 20) },
        'entries of snapshots/ that the export did not write are left alone (docs/exports.md "What the folder may contain")',
      );
  } catch (err) {
    logger.warn({ code: (err as NodeJS.ErrnoException).code }, 'cannot remove old snapshots; the next export will');
  }
}

/**
 * Write every exported model and the manifest into `snapDir` (files of `--file-mode`), each file
 * read back and fsynced, the folder fsynced last.
 *
 * @throws {ExportError} a model failed to export or read back, or the manifest could not be written
 */
async function writeSnapshot(opts: ExportOptions, snapDir: string, snapshot: string): Promise<Manifest> {
  // The catalog's rule says which relations of `main` are exported (docs/exports.md).
  const tables = (
    await opts.wh.all<{ table_name: string }>(
      `select table_name from information_schema.tables where table_schema = 'main' order by table_name`,
    )
  ).filter((t) => isExportedModel(t.table_name));
  const files: ManifestEntry[] = [];
  const progress = opts.progress ?? NO_PROGRESS;
  progress.update({ done: 0, total: tables.length });
  for (const { table_name: model } of tables) {
    const file = `${model}.parquet`;
    const tmp = join(snapDir, `.${file}.${opts.runId}.tmp`);
    try {
      // COPY returns the rows it wrote: a view's rows are not computed a second time to count them.
      const written = await opts.wh.runChanging(
        `copy (select * from main."${model}") to ${sqlString(tmp)} (format parquet, compression zstd, compression_level 1)`,
      );
      const check = await opts.wh.one<{ rows: bigint }>(`select count(*) as rows from read_parquet(${sqlString(tmp)})`);
      if (!check || check.rows !== BigInt(written)) {
        throw new ExportError(`export of ${model} read back ${check?.rows ?? '?'} rows, expected ${written}`);
      }
      const columns = await opts.wh.all<{ column_name: string; column_type: string }>(
        `select column_name, column_type from (describe select * from read_parquet(${sqlString(tmp)}))`,
      );
      setReaderFileMode(tmp, opts.modes ?? readerModes());
      fsyncPath(tmp, 'file');
      failpoint('export.mid-file');
      const bytes = statSync(tmp).size;
      renameSync(tmp, join(snapDir, file));
      files.push({
        model,
        file,
        rows: Number(check.rows),
        bytes,
        columns: columns.map((c) => ({ name: c.column_name, type: c.column_type })),
      });
      progress.update({ done: files.length });
    } catch (err) {
      rmSync(tmp, { force: true });
      if (isEtlError(err) && err.code === 'E_EXPORT') throw err;
      throw new ExportError(`cannot export ${model} to ${snapDir}: ${(err as Error).message}`, {
        cause: err,
        hint: 'the previous export is still in place',
      });
    }
  }
  const manifest: Manifest = { runId: opts.runId, exportedAt: (opts.now?.() ?? new Date()).toISOString(), snapshot, files };
  const path = join(snapDir, MANIFEST_FILE);
  const tmp = join(snapDir, `.${MANIFEST_FILE}.${opts.runId}.tmp`);
  try {
    writeFileSync(tmp, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    setReaderFileMode(tmp, opts.modes ?? readerModes());
    fsyncPath(tmp, 'file');
    renameSync(tmp, path);
    fsyncPath(snapDir, 'dir');
    fsyncPath(join(snapDir, '..'), 'dir');
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new ExportError(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      cause: err,
      hint: 'the previous export is still in place',
    });
  }
  return manifest;
}
