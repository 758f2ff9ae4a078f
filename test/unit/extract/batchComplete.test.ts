import { describe, expect, it } from 'vitest';
import { BATCH_MAX_BYTES, DEFAULT_BATCH_PAGES, WIDE_BATCH_BYTES, batchComplete, wideBatch } from '../../../src/extract/batches.js';
import { WIDE_ROW_BYTES } from '../../../src/warehouse/BatchFile.js';

/** The page count at which a batch of pages of `pageBytes` file bytes, rows of at most `rowBytes`, ends. */
function ends(batchPages: number, pageBytes: number, rowBytes = 700): number | undefined {
  for (let pages = 1; pages <= batchPages; pages += 1) if (batchComplete(pages, pages * pageBytes, rowBytes, batchPages)) return pages;
  return undefined;
}

describe('batchComplete (docs/ingest.md "Batches")', () => {
  it('by default a batch ends once its file holds 64 MiB: about 100,000 events of the usual size, whatever the page size', () => {
    expect(BATCH_MAX_BYTES).toBe(64 * 1024 * 1024);
    expect(ends(DEFAULT_BATCH_PAGES, 1000 * 650)).toBe(104); // page size 1000
    expect(ends(DEFAULT_BATCH_PAGES, 100 * 650)).toBe(1000); // page size 100: at --batch-pages first
    expect(ends(DEFAULT_BATCH_PAGES, 650)).toBe(DEFAULT_BATCH_PAGES); // tiny pages: at --batch-pages
  });

  it('--batch-pages is the most pages a batch takes', () => {
    expect(ends(1, 50)).toBe(1);
    expect(ends(20, 1000 * 650)).toBe(20);
    expect(batchComplete(399, 0, 0, 400)).toBe(false);
    expect(batchComplete(400, 0, 0, 400)).toBe(true);
  });

  it('a batch with a row over 8 KiB is wide and ends at 4 MiB: a page of wide events is a batch of its own', () => {
    expect(wideBatch(WIDE_ROW_BYTES)).toBe(false);
    expect(wideBatch(WIDE_ROW_BYTES + 1)).toBe(true);
    expect(ends(DEFAULT_BATCH_PAGES, 40_000_000, 400_000)).toBe(1);
    expect(ends(DEFAULT_BATCH_PAGES, 1_500_000, 9_000)).toBe(3);
    expect(batchComplete(1, WIDE_BATCH_BYTES - 1, WIDE_ROW_BYTES + 1, DEFAULT_BATCH_PAGES)).toBe(false);
    expect(batchComplete(1, WIDE_BATCH_BYTES, WIDE_ROW_BYTES + 1, DEFAULT_BATCH_PAGES)).toBe(true);
  });
});
