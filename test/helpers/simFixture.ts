/**
 * The fault tests' shared setup (test/faults/contract, hostile, network): before each test a
 * simulator on a free port with the small data set {@link FIXTURE_SIM} (pages of
 * {@link FIXTURE_PAGE} events), a temporary folder for its warehouses and the events a full
 * extract must store; after it, both closed.
 */
import { afterEach, beforeEach } from 'vitest';
import { join } from 'node:path';
import { startMockApi, type MockApi, type MockApiOptions, type TruthEvent } from '../../packages/mock-api/src/index.js';
import { expectedAll } from './faults.js';
import { tempDir } from './tmp.js';

/** The simulator's data set: 2 trials of 10 patients (about 130 events), seed 11. */
export const FIXTURE_SIM = { seed: 11, patientsPerTrial: 10 } as const;
/** The page size the tests extract with: 13 pages or so. */
export const FIXTURE_PAGE = 10;

/** The current test's simulator, folder and expected events (replaced before each test). */
export interface SimFixture {
  /** The running simulator (a test may replace it: {@link SimFixture.restart}). */
  api: MockApi;
  tmp: { dir: string; cleanup: () => void };
  /** The events a complete extract stores, in stream order. */
  expected: TruthEvent[];
  /** Warehouses made so far in this file ({@link SimFixture.freshDb}). */
  count: number;
  /** A new warehouse path in the test's folder, `<dbPrefix><count>.duckdb`. */
  freshDb(): string;
  /** Closes the simulator and starts another with {@link FIXTURE_SIM} and `options` (e.g. the same port). */
  restart(options?: MockApiOptions): Promise<MockApi>;
}

/**
 * Registers the before/after hooks of the calling test file.
 *
 * @param name the temporary folders' prefix, e.g. `recruit-etl-contract-`
 * @param dbPrefix the warehouses' file-name prefix, e.g. `c` for `c1.duckdb`
 */
export function useSimFixture(name: string, dbPrefix: string): SimFixture {
  const fx = {
    count: 0,
    freshDb: () => join(fx.tmp.dir, `${dbPrefix}${++fx.count}.duckdb`),
    restart: async (options: MockApiOptions = {}) => {
      await fx.api.close();
      fx.api = await startMockApi({ port: 0, ...FIXTURE_SIM, ...options });
      return fx.api;
    },
  } as SimFixture;
  beforeEach(async () => {
    fx.api = await startMockApi({ port: 0, ...FIXTURE_SIM });
    fx.tmp = tempDir(name);
    fx.expected = expectedAll(fx.api);
  });
  afterEach(async () => {
    await fx.api.close();
    fx.tmp.cleanup();
  });
  return fx;
}
