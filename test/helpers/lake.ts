/**
 * The setup the lake tests share (test/integration/lake/): a private PostgreSQL 15 cluster with
 * a `lake` database for the DuckLake catalog, the simulator, a temporary folder, and an
 * in-memory DuckDB reader with the lake extensions loaded (`make extensions`).
 */
import type { MockApi, MockApiOptions } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { loadLakeExtensions } from '../../src/publish/lake.js';
import { startPostgres, type PgCluster } from './postgres.js';
import { startSim } from './sim.js';
import { tempDir } from './tmp.js';

/** What {@link startLake} started; {@link stopLake} ends it. */
export interface LakeSetup {
  pg: PgCluster;
  api: MockApi;
  tmp: ReturnType<typeof tempDir>;
  /** In-memory DuckDB with ducklake and postgres (and httpfs when asked) loaded. */
  reader: Warehouse;
  /** `ducklake:postgres:<conninfo of the lake database>`. */
  lake: string;
}

/**
 * Start PostgreSQL (database `lake`), the simulator with `sim`, a temporary folder named
 * `prefix…` and the reader; whatever started is stopped again when a later step fails.
 *
 * @param httpfs load httpfs in the reader too (a lake on an object store)
 */
export async function startLake(prefix: string, sim: MockApiOptions, httpfs = false): Promise<LakeSetup> {
  const parts: Partial<LakeSetup> = {};
  try {
    parts.pg = await startPostgres();
    parts.pg.createDb('lake');
    parts.lake = `ducklake:postgres:${parts.pg.conninfo('lake')}`;
    parts.tmp = tempDir(prefix);
    parts.api = await startSim(sim);
    parts.reader = await Warehouse.open(':memory:');
    await loadLakeExtensions(parts.reader, true, httpfs);
    return parts as LakeSetup;
  } catch (err) {
    await stopLake(parts);
    throw err;
  }
}

/** Close the reader and the simulator, stop PostgreSQL, remove the folder (each when started). */
export async function stopLake(parts: Partial<LakeSetup>): Promise<void> {
  await parts.reader?.close();
  await parts.api?.close();
  parts.pg?.stop();
  parts.tmp?.cleanup();
}
