/**
 * The layout of the export folder that makes the Parquet exports atomic as a set
 * (docs/exports.md):
 *
 * ```
 * <export-dir>/
 *   snapshots/<run_id>/<model>.parquet   one immutable folder per export (modes: --file-mode, src/fs/readerFiles.ts)
 *   snapshots/<run_id>/manifest.json
 *   current -> snapshots/<run_id>         swapped by rename(2): the only switch
 *   <model>.parquet -> current/<model>.parquet
 *   manifest.json   -> current/manifest.json
 * ```
 *
 * Everything here is synchronous file-system work on paths inside one export folder. The
 * functions throw Node's errors (`NodeJS.ErrnoException`); the export stage wraps them in
 * an `ExportError`.
 *
 * @module
 */
import {
  closeSync,
  copyFileSync,
  fsyncSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { ensureReaderDir, readerModes, type ReaderModes } from '../fs/readerFiles.js';

/** The folder of the snapshots, inside the export folder. */
export const SNAPSHOTS_DIR = 'snapshots';
/** The symlink naming the published snapshot, inside the export folder. */
export const CURRENT_LINK = 'current';
/** The manifest's file name, in each snapshot and as a stable path. */
export const MANIFEST_FILE = 'manifest.json';

/** A run id usable as a folder name: letters, digits, `.`, `_`, `-`, not starting with `.`. */
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** Whether `name` can name a snapshot folder (see {@link SAFE_NAME}). */
export function isSafeSnapshotName(name: string): boolean {
  return SAFE_NAME.test(name) && name.length <= 200;
}

/** `snapshots/<id>`: a snapshot's path relative to the export folder (the target of `current`). */
export function snapshotRef(id: string): string {
  return `${SNAPSHOTS_DIR}/${id}`;
}

/** The target a stable path links to: `current/<name>`. */
export function stableTarget(name: string): string {
  return `${CURRENT_LINK}/${name}`;
}

/** Whether `name` is a stable path the export manages: `<model>.parquet` or `manifest.json`. */
function isStableName(name: string): boolean {
  return !name.startsWith('.') && (name.endsWith('.parquet') || name === MANIFEST_FILE);
}

/**
 * The snapshot id `current` names, or undefined when there is no `current` or it names
 * something other than `snapshots/<id>`.
 *
 * @throws a `NodeJS.ErrnoException` other than ENOENT or EINVAL (`current` is not a symlink)
 */
export function currentSnapshotId(dir: string): string | undefined {
  let target: string;
  try {
    target = readlinkSync(join(dir, CURRENT_LINK));
  } catch (err) {
    // ENOENT: none yet; EINVAL: not a symlink (a folder is adopted first by adoptRestoredCurrent;
    // a file is replaced by the swap).
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EINVAL') return undefined;
    throw err;
  }
  const prefix = `${SNAPSHOTS_DIR}/`;
  if (!target.startsWith(prefix)) return undefined;
  const id = target.slice(prefix.length).replace(/\/+$/, '');
  return isSafeSnapshotName(id) ? id : undefined;
}

/**
 * fsync a file or folder. Folders are best effort (some file systems refuse to open or
 * fsync them); a file's error is thrown.
 */
export function fsyncPath(path: string, kind: 'file' | 'dir'): void {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if (kind === 'dir') return;
    throw err;
  }
  try {
    fsyncSync(fd);
  } catch (err) {
    if (kind === 'file') throw err;
  } finally {
    closeSync(fd);
  }
}

/**
 * Make `<dir>/<name>` a symlink to `target`, atomically: a temporary symlink in the same
 * folder renamed over the name. A reader of `<dir>/<name>` sees the old entry or the new
 * one, never none. A symlink already pointing at `target` is left alone.
 *
 * @returns whether the entry changed
 * @throws a `NodeJS.ErrnoException` (e.g. EISDIR when `<dir>/<name>` is a folder); the temporary symlink is removed
 */
export function replaceWithSymlink(dir: string, name: string, target: string, runId: string): boolean {
  const path = join(dir, name);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st?.isSymbolicLink() && readlinkSync(path) === target) return false;
  const tmp = join(dir, `.${name}.${runId}.tmp`);
  rmSync(tmp, { force: true });
  try {
    symlinkSync(target, tmp);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return true;
}

/**
 * Remove what killed exports left directly in the export folder: temporary files and
 * symlinks named `.*.tmp` (older versions wrote Parquet files there under such names; this
 * one writes its temporary symlinks there). Folders are left alone.
 */
export function sweepTemporaries(dir: string): void {
  for (const f of readdirSync(dir)) {
    if (!f.startsWith('.') || !f.endsWith('.tmp')) continue;
    const st = lstatSync(join(dir, f), { throwIfNoEntry: false });
    if (st && !st.isDirectory()) rmSync(join(dir, f), { force: true });
  }
}

/**
 * Upgrade the layout of older versions of the job, where `<model>.parquet` and
 * `manifest.json` were regular files in the export folder, without a moment where a stable
 * path is missing or shows a mix:
 *
 * 1. when there is no `current` yet, every such regular file is hard-linked (copied where
 *    the file system has no hard links) into `snapshots/legacy-<runId of the old manifest>/`
 *    and `current` is pointed at that folder;
 * 2. every regular file at a stable path whose name exists in the current snapshot is
 *    replaced, by rename, with a symlink `current/<name>`: the same bytes, now reached
 *    through `current`.
 *
 * Idempotent: a run killed half-way through is completed by the next call. A no-op on the
 * symlink layout.
 *
 * @returns the id of the legacy snapshot created, if one was
 * @throws a `NodeJS.ErrnoException` from the file system
 */
export function adoptLegacyLayout(dir: string, runId: string, modes: ReaderModes = readerModes()): string | undefined {
  const regular = (): string[] =>
    readdirSync(dir).filter((f) => isStableName(f) && lstatSync(join(dir, f), { throwIfNoEntry: false })?.isFile());
  let created: string | undefined;
  if (lstatSync(join(dir, CURRENT_LINK), { throwIfNoEntry: false }) === undefined) {
    const files = regular();
    if (files.length === 0) return undefined;
    const id = legacySnapshotId(dir);
    const snap = join(dir, SNAPSHOTS_DIR, id);
    rmSync(snap, { recursive: true, force: true });
    ensureReaderDir(snap, modes, true);
    for (const f of files) {
      try {
        linkSync(join(dir, f), join(snap, f));
      } catch {
        copyFileSync(join(dir, f), join(snap, f));
      }
    }
    fsyncPath(snap, 'dir');
    fsyncPath(join(dir, SNAPSHOTS_DIR), 'dir');
    replaceWithSymlink(dir, CURRENT_LINK, snapshotRef(id), runId);
    fsyncPath(dir, 'dir');
    created = id;
  }
  const current = currentSnapshotId(dir);
  if (current === undefined) return created;
  let changed = false;
  for (const f of regular()) {
    if (lstatSync(join(dir, SNAPSHOTS_DIR, current, f), { throwIfNoEntry: false })?.isFile()) {
      changed = replaceWithSymlink(dir, f, stableTarget(f), runId) || changed;
    }
  }
  if (changed) fsyncPath(dir, 'dir');
  return created;
}

/** `legacy-<runId>` from the old manifest when it names a usable run id, else `legacy`. */
function legacySnapshotId(dir: string): string {
  try {
    const old = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8')) as { runId?: unknown };
    if (typeof old.runId === 'string' && isSafeSnapshotName(`legacy-${old.runId}`)) return `legacy-${old.runId}`;
  } catch {
    // No manifest, or not JSON: the folder is still adopted, under a plain name.
  }
  return 'legacy';
}

/**
 * Point every stable path of the published set at `current`, after the swap: one symlink
 * `<name> -> current/<name>` per name of `names` (created, or replacing a regular file or
 * another symlink by rename), then remove the stable symlinks into `current` whose name is
 * not in `names` (models that no longer exist). Regular files that are not in `names` are
 * not ours and stay.
 *
 * @returns the stable names removed
 * @throws a `NodeJS.ErrnoException` from the file system
 */
export function linkStablePaths(dir: string, names: readonly string[], runId: string): string[] {
  const wanted = new Set(names);
  for (const name of names) replaceWithSymlink(dir, name, stableTarget(name), runId);
  const removed: string[] = [];
  for (const f of readdirSync(dir)) {
    if (wanted.has(f) || !isStableName(f)) continue;
    const path = join(dir, f);
    if (!lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) continue;
    if (readlinkSync(path) !== stableTarget(f)) continue;
    rmSync(path, { force: true });
    removed.push(f);
  }
  fsyncPath(dir, 'dir');
  return removed;
}

/**
 * Delete the snapshots no reader should still be on: every folder of `snapshots/` other
 * than `keep` (the current and the previous snapshot) that was last modified no later
 * than the current snapshot (older exports, and the folders of exports killed before
 * their swap), and that holds only what an export writes there ({@link isOurSnapshot}).
 * A newer folder can only be an export still being written by another process, and stays;
 * so does anything else (a file, a symlink, a folder holding something the job never writes:
 * docs/exports.md "What the folder may contain").
 *
 * @returns the entries removed, and those left alone because they are not the job's
 * @throws a `NodeJS.ErrnoException` when `snapshots/` or the current snapshot cannot be read
 */
export function pruneSnapshots(dir: string, current: string, keep: ReadonlySet<string>): { removed: string[]; foreign: string[] } {
  const root = join(dir, SNAPSHOTS_DIR);
  const limit = lstatSync(join(root, current)).mtimeMs;
  const removed: string[] = [];
  const foreign: string[] = [];
  for (const f of readdirSync(root)) {
    if (f === current || keep.has(f)) continue;
    const st = lstatSync(join(root, f), { throwIfNoEntry: false });
    if (!st || st.mtimeMs > limit) continue;
    if (!st.isDirectory() || !isOurSnapshot(join(root, f))) {
      foreign.push(f);
      continue;
    }
    rmSync(join(root, f), { recursive: true, force: true });
    removed.push(f);
  }
  return { removed, foreign };
}

/**
 * Whether the folder `path` holds only what an export writes into a snapshot folder:
 * regular files named `<model>.parquet`, `manifest.json`, or a temporary `.*.tmp` (empty
 * counts: an export killed right after making it). Nothing else is ever deleted.
 */
export function isOurSnapshot(path: string): boolean {
  for (const e of readdirSync(path, { withFileTypes: true })) {
    if (!e.isFile()) return false;
    if (!(e.name.endsWith('.parquet') || e.name === MANIFEST_FILE || (e.name.startsWith('.') && e.name.endsWith('.tmp')))) return false;
  }
  return true;
}

/**
 * Why `<dir>/snapshots` cannot hold the export's snapshots, or undefined when it can (a
 * folder, or nothing yet): a symlink (the export would write, and prune, through it, in a
 * folder that may not be the job's: docs/exports.md "What the folder may contain") or a
 * file.
 */
export function snapshotsFolderProblem(dir: string): string | undefined {
  const path = join(dir, SNAPSHOTS_DIR);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined || st.isDirectory()) return undefined;
  if (st.isSymbolicLink()) {
    let target = '?';
    try {
      target = readlinkSync(path);
    } catch {
      // Only for the message.
    }
    return `${path} is a symlink (to ${JSON.stringify(target).slice(1, -1).slice(0, 300)}); the export writes and deletes snapshots only in a folder of its own inside the export folder`;
  }
  return `${path} is not a folder; the export keeps its snapshots there`;
}

/**
 * Adopt a `current` that is a real folder, as a restore that follows symlinks leaves it
 * (`cp -rL`, `rsync -L`): the folder is moved, by rename, to `snapshots/restored-<runId>/`
 * and `current` becomes the symlink to it. Its files stay readable there; the export that
 * follows publishes a new set and keeps this one as the previous snapshot. Between the
 * rename and the new symlink, `current` is missing for a moment; a kill there leaves no
 * `current`, and the next export adopts the stable paths as a legacy layout.
 *
 * @returns the id of the snapshot the folder became, if `current` was a folder
 * @throws a `NodeJS.ErrnoException` from the file system
 */
export function adoptRestoredCurrent(dir: string, runId: string): string | undefined {
  const path = join(dir, CURRENT_LINK);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return undefined;
  const id = `restored-${runId}`;
  if (!isSafeSnapshotName(id)) throw Object.assign(new Error(`cannot name a snapshot restored-${runId}`), { code: 'EINVAL' });
  rmSync(join(dir, SNAPSHOTS_DIR, id), { recursive: true, force: true });
  renameSync(path, join(dir, SNAPSHOTS_DIR, id));
  replaceWithSymlink(dir, CURRENT_LINK, snapshotRef(id), runId);
  fsyncPath(join(dir, SNAPSHOTS_DIR), 'dir');
  fsyncPath(dir, 'dir');
  return id;
}
