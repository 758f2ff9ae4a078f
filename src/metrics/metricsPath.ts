/**
 * The metrics file's path must be a regular file or nothing (docs/contracts.md "Metrics"): a
 * FIFO, a device, a folder, a socket or a symbolic link in its place is refused, never opened
 * (an open could block) and never replaced by the rename. Kept apart from
 * src/metrics/metricsFile.ts so that the CLI checks the path without loading prom-client.
 *
 * @module
 */
import { lstatSync, type Stats } from 'node:fs';
import { kindOf } from '../fs/inputFile.js';

/** What a path that exists but is not a regular file is, in words ({@link kindOf}); undefined for a regular file. */
export function specialKind(st: Stats): string | undefined {
  if (st.isFile()) return undefined;
  return st.isSymbolicLink() ? `${kindOf(st)} (the rename would replace the link)` : kindOf(st);
}

/**
 * Why `path` cannot be the metrics file (it exists and is a directory, a FIFO, a device, a
 * socket or a symbolic link: never opened, never replaced); undefined when it may be written.
 * Never blocks (lstat only).
 */
export function metricsPathProblem(path: string): string | undefined {
  let st: Stats | undefined;
  try {
    st = lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined; // e.g. EACCES on the folder: the write reports it
  }
  return st ? specialKind(st) : undefined;
}
