import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { logLines, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

/** More events than one row group (122,880 rows): a run writes a batch straight to the file and a smaller last batch that DuckDB holds in memory (docs/ingest.md "Batches"). */
const EVENTS = 150_000;

/**
 * A clean run logs no warning, at the simulator's default page size (100) and at 1,000
 * (docs/ingest.md "Settings": a setting a stage changes is put back without a warning).
 */
describe('a clean run', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    api = await startSim({ syntheticEvents: EVENTS });
    tmp = tempDir();
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it.each([100, 1000])(
    'at page size %i logs nothing at warn level or above, and loads every event',
    async (pageSize) => {
      const db = join(tmp.dir, `p${pageSize}`, 'warehouse.duckdb');
      const env = envFor(api, db, {
        RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, `p${pageSize}`, 'exports'),
        RECRUIT_ETL_PAGE_SIZE: String(pageSize),
        RECRUIT_ETL_LOG_LEVEL: 'info',
      });
      const r = await runCli(['run'], env);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      const lines = logLines(r.stdout);
      expect(lines.some((l) => l['msg'] === 'run summary')).toBe(true);
      expect(lines.filter((l) => typeof l['level'] === 'number' && (l['level'] as number) >= 40)).toEqual([]);
      const wh = await Warehouse.open(db, { readOnly: true });
      try {
        expect(await wh.one<{ n: bigint }>('select count(*) as n from raw.events')).toEqual({ n: BigInt(EVENTS) });
      } finally {
        await wh.close();
      }
    },
    240_000,
  );
});
