/**
 * Where a batch of pages ends (`docs/ingest.md` "Batches"): the limits of one transaction of
 * the extract.
 *
 * @module
 */
import { EVENT_SLOTS, PART, type PageEvents } from '../events/PageEvents.js';
import { WIDE_ROW_BYTES } from '../warehouse/BatchFile.js';

/** Default of `--batch-pages`, the most pages a batch takes (`src/config/config.ts` uses it, and the two sizes below in its help). */
export const DEFAULT_BATCH_PAGES = 1000;

/**
 * Size of a batch file at which the batch ends, bytes (64 MiB, about 100,000 events of the
 * usual size). A batch is written to a file as its pages arrive, so this bounds disk, not
 * memory; each batch costs DuckDB a commit, so fewer, larger ones load faster
 * (`docs/ingest.md` "What each piece bought").
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

/**
 * A page larger than this (16 MiB, as received) is committed in slices (`docs/ingest.md`
 * "Large pages"): DuckDB holds a transaction's rows in memory, several times their size,
 * until it commits, so one transaction for a 100 MB page would take about 900 MiB.
 */
export const PAGE_SLICE_THRESHOLD_BYTES = 16 * 1024 * 1024;

/** Size of one slice of a large page, bytes of the page (8 MiB; at least one event). */
export const PAGE_SLICE_BYTES = 8 * 1024 * 1024;

/**
 * The events of a page in the slices it is committed in (`docs/ingest.md` "Large pages"):
 * the page itself when it is at most {@link PAGE_SLICE_THRESHOLD_BYTES}; else runs of whole
 * events of about {@link PAGE_SLICE_BYTES} each, in order (the same bytes, no copy).
 *
 * @param events the page's events
 * @param bytes the page's size as received, bytes
 */
export function pageSlices(events: PageEvents, bytes: number): PageEvents[] {
  if (bytes <= PAGE_SLICE_THRESHOLD_BYTES || events.count <= 1) return [events];
  const at = events.offsets;
  const slices: PageEvents[] = [];
  let from = 0;
  for (let i = 0; i < events.count; i += 1) {
    const start = at[from * EVENT_SLOTS + PART.envelope]!;
    const end = at[i * EVENT_SLOTS + PART.envelope + 1]!;
    if (end - start >= PAGE_SLICE_BYTES || i === events.count - 1) {
      slices.push(events.slice(from, i + 1));
      from = i + 1;
    }
  }
  return slices;
}
