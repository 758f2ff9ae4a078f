/**
 * Where a batch of pages ends (`docs/ingest.md` "Batches"): the limits of one transaction of
 * the extract.
 *
 * @module
 */
import { ROW_GROUP_SIZE } from '../warehouse/Warehouse.js';

/** Default of `--batch-pages`, the most pages one batch takes. */
export const DEFAULT_BATCH_PAGES = 1000;

/** Page bodies one batch may hold, bytes (12 MiB): memory is bounded by bytes, not pages. */
export const BATCH_MAX_BYTES = 12 * 1024 * 1024;

/**
 * Whether a batch ends after its last page (`docs/ingest.md` "Batches"): at
 * {@link BATCH_MAX_BYTES} of page bodies, at `batchPages` pages (`--batch-pages`, a maximum),
 * or at the first page where it holds a row group ({@link ROW_GROUP_SIZE} rows) and its last
 * row group comes out more than half full, whichever comes first. Why row groups: DuckDB
 * writes a batch of a row group or more straight to the file, and at a checkpoint merges
 * (rewrites) neighbouring row groups at most half full (`docs/performance.md`).
 *
 * @param pages pages in the batch so far
 * @param rows events in those pages
 * @param bytes body bytes of those pages
 * @param batchPages `--batch-pages`
 */
export function batchComplete(pages: number, rows: number, bytes: number, batchPages: number): boolean {
  if (bytes >= BATCH_MAX_BYTES || pages >= batchPages) return true;
  if (rows < ROW_GROUP_SIZE) return false;
  const remainder = rows % ROW_GROUP_SIZE;
  return remainder === 0 || remainder > ROW_GROUP_SIZE / 2;
}
