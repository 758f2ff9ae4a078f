/**
 * `status`'s models (docs/contracts.md "status --json", `models[]`): every model of the catalog,
 * on a warehouse of any age, with its rows.
 */
import { describe, expect, it } from 'vitest';
import { loadModelCatalog } from '../../../src/catalog/catalog.js';
import { runTransform } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { readStatus } from '../../../src/warehouse/readStatus.js';

describe('readStatus: models[]', () => {
  it('lists every model of the catalog on a warehouse with no table yet (none built), and after a transform every one built', async () => {
    const catalog = loadModelCatalog().models;
    const wh = await Warehouse.open(':memory:');
    try {
      const empty = await readStatus(wh, catalog);
      expect(empty.streams).toEqual([]);
      expect(empty.models.map((m) => m.name)).toEqual(catalog.map((m) => m.name));
      expect(empty.models.every((m) => !m.built && m.rows === null)).toBe(true);
      await wh.migrate();
      await runTransform(wh);
      const built = await readStatus(wh, catalog);
      expect(built.models.filter((m) => !m.built || typeof m.rows !== 'number')).toEqual([]);
      expect(built.models.find((m) => m.name === 'dq_summary')?.rows).toBeGreaterThan(0);
    } finally {
      await wh.close();
    }
  });
});
