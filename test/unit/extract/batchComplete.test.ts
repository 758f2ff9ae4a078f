import { describe, expect, it } from 'vitest';
import { BATCH_MAX_BYTES, DEFAULT_BATCH_PAGES, batchComplete } from '../../../src/extract/batches.js';
import { ROW_GROUP_SIZE } from '../../../src/warehouse/Warehouse.js';

/** The page count at which a batch of `perPage`-event pages of `pageBytes` bytes ends. */
function ends(batchPages: number, perPage: number, pageBytes = perPage * 370): number | undefined {
  for (let pages = 1; pages <= batchPages; pages += 1) if (batchComplete(pages, pages * perPage, pages * pageBytes, batchPages)) return pages;
  return undefined;
}

describe('batchComplete (docs/ingest.md "Batches")', () => {
  it('by default a batch ends where its last DuckDB row group comes out more than half full', () => {
    expect(ends(DEFAULT_BATCH_PAGES, 1000)).toBe(25); // 25,000 rows: remainder 8,616 (20 pages would leave 3,616)
    expect(ends(DEFAULT_BATCH_PAGES, 100)).toBe(246); // page size 100: 24,600 rows, remainder 8,216
    expect(ends(DEFAULT_BATCH_PAGES, 1)).toBe(DEFAULT_BATCH_PAGES); // tiny pages: at --batch-pages
  });

  it('--batch-pages is the most pages a batch takes', () => {
    expect(ends(1, 50)).toBe(1);
    expect(ends(20, 1000)).toBe(20);
    expect(batchComplete(399, 399, 0, 400)).toBe(false);
    expect(batchComplete(400, 400, 0, 400)).toBe(true);
  });

  it('ends at the byte budget whatever the pages: 20 MB pages one at a time, 4 MB pages three at a time', () => {
    expect(ends(DEFAULT_BATCH_PAGES, 1000, 20_000_000)).toBe(1);
    expect(ends(DEFAULT_BATCH_PAGES, 1000, 4_200_000)).toBe(3);
    expect(batchComplete(1, 10, BATCH_MAX_BYTES, DEFAULT_BATCH_PAGES)).toBe(true);
  });

  it('ends on exact multiples of a row group, not on remainders of half a row group or less', () => {
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE, 0, 1000)).toBe(true);
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE + ROW_GROUP_SIZE / 2, 0, 1000)).toBe(false);
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE + ROW_GROUP_SIZE / 2 + 1, 0, 1000)).toBe(true);
  });
});
