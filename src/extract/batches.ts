/**
 * Where a batch of pages ends (`docs/ingest.md` "Batches"): the limits of one transaction of
 * the extract.
 *
 * @module
 */
import { WIDE_ROW_BYTES } from '../warehouse/BatchFile.js';

/** Default of `--batch-pages`, the most pages a batch takes. */
export const DEFAULT_BATCH_PAGES = 1000;

/**
 * Size of a batch file at which the batch ends, bytes (64 MiB, about 100,000 events of the
 * usual size). A batch is written to a file as its pages arrive, so this bounds disk, not
 * memory; each batch costs DuckDB a commit, so fewer, larger ones load faster
 * (`docs/performance.md` "How the extract works").
 */
export const BATCH_MAX_BYTES = 64 * 1024 * 1024;

/** Size of a wide batch's file at which it ends (4 MiB): the page that makes a batch wide is still added to it. */
export const WIDE_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Whether a batch ends after its last page (`docs/ingest.md` "Batches"): at `batchPages`
 * pages (`--batch-pages`, a maximum) or once its file holds {@link BATCH_MAX_BYTES}
 * ({@link WIDE_BATCH_BYTES} when it is {@link wideBatch wide}), whichever comes first.
 *
 * @param pages pages in the batch so far
 * @param bytes size of its file so far
 * @param longestRow its longest row, bytes
 * @param batchPages `--batch-pages`
 */
export function batchComplete(pages: number, bytes: number, longestRow: number, batchPages: number): boolean {
  return pages >= batchPages || bytes >= (wideBatch(longestRow) ? WIDE_BATCH_BYTES : BATCH_MAX_BYTES);
}

/**
 * Whether a batch whose longest row is `longestRow` bytes is wide (see {@link WIDE_ROW_BYTES}):
 * DuckDB holds its rows in memory, several times their size, until a checkpoint.
 */
export function wideBatch(longestRow: number): boolean {
  return longestRow > WIDE_ROW_BYTES;
}
