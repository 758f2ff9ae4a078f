import { describe, expect, it } from 'vitest';
import {
  BATCH_MAX_BYTES,
  DEFAULT_BATCH_PAGES,
  PAGE_SLICE_BYTES,
  PAGE_SLICE_THRESHOLD_BYTES,
  WIDE_BATCH_BYTES,
  batchComplete,
  pageSlices,
  wideBatch,
} from '../../../src/extract/batches.js';
import { readEventsPage } from '../../../src/upstream/page.js';
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

describe('pageSlices (docs/ingest.md "Large pages")', () => {
  /** A page of `n` events of about `size` bytes each. */
  const page = (n: number, size: number) => {
    const pad = 'x'.repeat(size);
    const body = JSON.stringify({
      events: Array.from({ length: n }, (_, i) => ({ id: `e${i}`, eventType: 't', message: { pad } })),
      pagination: { nextPage: 'http://h/x', hasNextPage: false },
    });
    return { events: readEventsPage(body).events, bytes: Buffer.byteLength(body) };
  };

  it('a page up to the threshold is one slice: the page itself', () => {
    const p = page(10, 1000);
    expect(pageSlices(p.events, p.bytes)).toEqual([p.events]);
    expect(pageSlices(p.events, PAGE_SLICE_THRESHOLD_BYTES)).toHaveLength(1);
  });

  it('a larger page is cut at event boundaries into slices of at least PAGE_SLICE_BYTES (the last aside), every event once, in order', () => {
    const p = page(100, 200_000); // 20 MB
    expect(p.bytes).toBeGreaterThan(PAGE_SLICE_THRESHOLD_BYTES);
    const slices = pageSlices(p.events, p.bytes);
    expect(slices.length).toBe(3);
    expect(slices.flatMap((s) => s.all(s.id))).toEqual(p.events.all(p.events.id));
    for (const s of slices.slice(0, -1)) expect(s.offsets[s.offsets.length - 9]! - s.offsets[0]!).toBeGreaterThanOrEqual(PAGE_SLICE_BYTES);
    for (const s of slices) expect(s.bytes).toBe(p.events.bytes);
  });
});
