/**
 * The modes of what the job writes for readers (docs/contracts.md "Files and permissions"):
 * the published copy, the Parquet exports and their manifest, the metrics file, and any
 * later report. `--file-mode` (default 0600) is the mode of those files; their folders get
 * the matching folder mode, the file mode with search (x) wherever it grants read (0600 →
 * 0700, 0640 → 0750, 0644 → 0755). Modes are set with chmod, so the umask (077 in the bin)
 * does not narrow them. The live database, its WAL and spill folder stay owner-only.
 *
 * Every stage that writes a file for readers goes through this module.
 *
 * @module
 */
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';

/** The default `--file-mode`: owner only. */
export const DEFAULT_FILE_MODE = 0o600;

/** A file mode and the folder mode that goes with it. */
export interface ReaderModes {
  /** Mode of files written for readers, e.g. 0o640. */
  file: number;
  /** Mode of their folders, e.g. 0o750. */
  dir: number;
}

/** The folder mode of a file mode: search (x) added wherever read (r) is granted. */
export function folderMode(fileMode: number): number {
  return fileMode | ((fileMode & 0o444) >> 2);
}

/** {@link ReaderModes} of `fileMode` (default {@link DEFAULT_FILE_MODE}). */
export function readerModes(fileMode: number = DEFAULT_FILE_MODE): ReaderModes {
  return { file: fileMode, dir: folderMode(fileMode) };
}

/** `0640` for 0o640. */
export function formatMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/**
 * Make `path` a folder readers can reach. Folders it creates (missing parents included) get
 * exactly `modes.dir`. An existing folder is only widened, never narrowed: the read and
 * search bits of `modes.dir` are added (best effort: a folder of another owner is left as it
 * is), so an operator's own stricter parents are not touched, and one made earlier under a
 * narrower mode opens up when the mode widens.
 *
 * @param exact also set an existing `path` to exactly `modes.dir` (folders only the job owns, e.g. snapshots)
 * @throws a `NodeJS.ErrnoException` when the folder cannot be created
 */
export function ensureReaderDir(path: string, modes: ReaderModes, exact = false): void {
  const first = mkdirSync(path, { recursive: true, mode: modes.dir });
  if (first !== undefined) {
    // mkdir's mode passes through the umask: set each created folder, outermost first.
    const parts = relative(first, path)
      .split(sep)
      .filter((p) => p !== '');
    let dir = first;
    chmodSync(dir, modes.dir);
    for (const p of parts) {
      dir = join(dir, p);
      chmodSync(dir, modes.dir);
    }
    return;
  }
  const current = statSync(path).mode & 0o7777;
  const wanted = exact ? modes.dir : current | (modes.dir & 0o055);
  if (wanted === current) return;
  try {
    chmodSync(path, wanted);
  } catch (err) {
    if (exact || (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/**
 * Set a file written for readers to `modes.file`.
 * @throws a `NodeJS.ErrnoException`
 */
export function setReaderFileMode(path: string, modes: ReaderModes): void {
  chmodSync(path, modes.file);
}

/**
 * Write a file for readers atomically: a temporary file in the same folder, written with
 * `modes.file`, fsynced, renamed over `path`. A reader sees the old file or the new one,
 * never a part. The folder is made with {@link ensureReaderDir}. A symlink at `path` is
 * replaced, never written through.
 *
 * @throws a `NodeJS.ErrnoException`; the temporary file is removed
 */
export function writeReaderFile(path: string, data: string | Uint8Array, modes: ReaderModes): void {
  ensureReaderDir(dirname(path), modes);
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    // Never through whatever holds the temporary name (a symlink left there would lead the
    // write out of the folder): remove it, then create the file exclusively.
    rmSync(tmp, { force: true });
    writeFileSync(tmp, data, { mode: modes.file, flag: 'wx' });
    chmodSync(tmp, modes.file);
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
