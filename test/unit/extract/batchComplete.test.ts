import { describe, expect, it } from 'vitest';
import { batchComplete } from '../../../src/extract/extractEvents.js';
import { ROW_GROUP_SIZE } from '../../../src/warehouse/Warehouse.js';

describe('batchComplete: batches end where DuckDB row groups come out more than half full', () => {
  it('ends a batch of 1,000-event pages at 25 pages whether 20 or 25 were asked for (remainders 8,616 rows)', () => {
    const ends = (batchPages: number) => {
      for (let pages = 1; pages <= 2 * batchPages; pages += 1) if (batchComplete(pages, pages * 1000, batchPages)) return pages;
      return undefined;
    };
    expect(ends(25)).toBe(25);
    expect(ends(20)).toBe(25); // 20 pages would leave a row group of 3,616 rows
    expect(ends(33)).toBe(41); // 33,000 rows would leave 232
    expect(ends(12)).toBe(12); // under one row group: through the WAL, whole row groups
  });

  it('never ends before batchPages, always at twice batchPages, and on exact multiples of a row group', () => {
    expect(batchComplete(24, 24 * 1000, 25)).toBe(false);
    expect(batchComplete(50, 50 * 700 + 1, 25)).toBe(true);
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE, 25)).toBe(true);
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE + ROW_GROUP_SIZE / 2, 25)).toBe(false);
    expect(batchComplete(25, 2 * ROW_GROUP_SIZE + ROW_GROUP_SIZE / 2 + 1, 25)).toBe(true);
  });
});
