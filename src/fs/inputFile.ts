/**
 * Files the operator names for the job to read (docs/contracts.md "Input files"): the client
 * secret file, the `--config` file, the `--site-names` CSV, and any later input. Each must be
 * a regular file (a symlink to one is fine: Kubernetes mounts secrets as symlinks) of at most
 * a documented size; a FIFO, a device, a socket, a folder or a larger file is refused with a
 * {@link ConfigError} naming the option (exit 2), and no read can block or grow without bound:
 *
 * - the path is stat'ed first, so a device or FIFO is refused without being opened;
 * - it is opened with `O_NONBLOCK` (opening a FIFO swapped in meanwhile does not wait for a
 *   writer) and the opened descriptor is fstat'ed again: the checks hold for the bytes read,
 *   not for whatever the path names a moment later;
 * - at most `maxBytes + 1` bytes are read, so a file that grew past its limit is refused too.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { ConfigError } from '../errors.js';

/** Size limits of the input files, in bytes (docs/contracts.md "Input files"). */
export const INPUT_FILE_MAX_BYTES = {
  /** `--client-secret-file`: 64 KiB. */
  secret: 64 * 1024,
  /** `--config`: 1 MiB. */
  config: 1024 * 1024,
  /** An operator's CSV (`--site-names`): 16 MiB. */
  csv: 16 * 1024 * 1024,
} as const;

/** How one input file is checked and named in messages. */
export interface InputFileOptions {
  /** The option that named the file, as messages show it, e.g. `--config (RECRUIT_ETL_CONFIG)`. */
  option: string;
  /** The largest size accepted, in bytes. */
  maxBytes: number;
  /** The hint of the error (default: fix the path or the file). */
  hint?: string;
}

const DEFAULT_HINT = 'name a regular file (a symlink to one is fine), or unset the option';

/**
 * What a non-regular file is, for messages ("a folder", "a FIFO (named pipe)", "a character
 * device", ...); also used for the metrics file (src/metrics/metricsPath.ts), whose lstat may
 * see a symbolic link.
 */
export function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** `64 KiB`, `16 MiB`, or bytes. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** Why a file could not be opened or stat'ed, in words. */
function why(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ELOOP':
      return 'a symlink loop';
    case 'ENOTDIR':
      return 'a part of the path is not a folder';
    case 'ENAMETOOLONG':
      return 'the path is too long';
    default:
      return code ?? 'unreadable';
  }
}

/** Refuse `st` unless it is a regular file of at most `maxBytes`. */
function checkStats(path: string, st: Stats, o: InputFileOptions): void {
  const hint = o.hint ?? DEFAULT_HINT;
  if (!st.isFile()) throw new ConfigError(`${o.option}: ${path} is ${kindOf(st)}, not a regular file`, { hint });
  if (st.size > o.maxBytes) {
    throw new ConfigError(`${o.option}: ${path} is ${st.size} bytes, over the ${formatBytes(o.maxBytes)} limit`, { hint });
  }
}

/**
 * Check, without opening it, that `path` names a regular file (symlinks followed) of at most
 * `options.maxBytes`: for an early refusal (exit 2 before anything is written) of a file that
 * is read later with {@link readInputFile}.
 *
 * @throws {ConfigError} naming `options.option`: missing, unreadable, not a regular file, too large
 */
export function checkInputFile(path: string, options: InputFileOptions): void {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (err) {
    throw new ConfigError(`${options.option}: cannot read ${path}: ${why(err)}`, { cause: err, hint: options.hint ?? DEFAULT_HINT });
  }
  checkStats(path, st, options);
}

/**
 * Read the whole of an input file: a regular file (symlinks followed) of at most
 * `options.maxBytes` bytes. Never blocks on a FIFO or device, never reads more than
 * `maxBytes + 1` bytes.
 *
 * @returns the file's bytes
 * @throws {ConfigError} naming `options.option` (exit 2): missing, unreadable, not a regular
 *   file (checked on the path, then on the opened descriptor), or over `maxBytes`
 */
export function readInputFile(path: string, options: InputFileOptions): Buffer {
  checkInputFile(path, options);
  const hint = options.hint ?? DEFAULT_HINT;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    throw new ConfigError(`${options.option}: cannot read ${path}: ${why(err)}`, { cause: err, hint });
  }
  try {
    // The descriptor is what is read: a path swapped for a FIFO after the stat is caught here.
    checkStats(path, fstatSync(fd), options);
    const buf = Buffer.alloc(options.maxBytes + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n > options.maxBytes) {
        throw new ConfigError(`${options.option}: ${path} grew over the ${formatBytes(options.maxBytes)} limit while read`, { hint });
      }
    }
    return buf.subarray(0, n);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${options.option}: cannot read ${path}: ${why(err)}`, { cause: err, hint });
  } finally {
    closeSync(fd);
  }
}
