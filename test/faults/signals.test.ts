/**
 * SIGINT / SIGTERM in the middle of a run (docs/contracts.md "Exit codes" 130 / 143, guarantees 1 and 2):
 * the run stops within the 5 s grace, records itself 'interrupted', keeps every committed
 * page with its cursor, and the next run completes to exactly the expected events.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startMockApi, type MockApi } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { existsSync } from 'node:fs';
import { runCli } from '../helpers/cli.js';
import { envFor } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';
import { expectExactly, expectPrefix, expectedAll, readDb, startCli, waitFor } from '../helpers/faults.js';

let api: MockApi;
let tmp: ReturnType<typeof tempDir>;

beforeEach(async () => {
  api = await startMockApi({ port: 0, seed: 17, patientsPerTrial: 10 });
  tmp = tempDir('recruit-etl-sig-');
});
afterEach(async () => {
  await api.close();
  tmp.cleanup();
});

describe.each([
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)('%s during a slow multi-page extract', (signal, code) => {
  it(`exits ${code} within 5 s, run 'interrupted', a contiguous prefix with its cursor; the next run completes exactly`, async () => {
    const expected = expectedAll(api);
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 250, times: Infinity });
    const db = join(tmp.dir, 'w.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_PAGE_SIZE: '10', RECRUIT_ETL_BATCH_PAGES: '1', RECRUIT_ETL_LOG_LEVEL: 'warn' });
    const run = startCli(['extract'], env);
    await waitFor(() => api.stats.eventRequests >= 5, 20_000, 'five page requests');
    const sentAt = Date.now();
    run.child.kill(signal);
    const r = await run.done;
    const stopMs = Date.now() - sentAt;
    expect(r.code, r.stderr).toBe(code);
    expect(stopMs).toBeLessThan(5000);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(new RegExp(`^recruit-etl: error: interrupted by ${signal}`));

    const state = await readDb(db);
    expect(state.runs).toHaveLength(1);
    expect(state.runs[0]!.status).toBe('interrupted');
    const n = state.ids.length;
    expect(state.runs[0]!.eventsLoaded).toBe(n); // what its batches committed, not 0
    expect(n).toBeGreaterThanOrEqual(30); // pages 1-3 at least were committed before page 5 was asked for
    expect(n).toBeLessThan(expected.length);
    expect(n % 10).toBe(0); // whole pages only
    expect(state.runs[0]!.pagesFetched).toBe(n / 10); // the pages committed, not 0
    expectPrefix(state, expected, n, api.truth.events);

    api.faults.clear();
    const again = await runCli(['extract'], env);
    expect(again.code, again.stderr).toBe(0);
    const final = await readDb(db);
    expectExactly(final, expected, api.truth.events);
    expect(final.runs.map((x) => x.status)).toEqual(['interrupted', 'succeeded']);
  });
});

describe('a second signal', () => {
  it('stops at once with the signal exit code; committed pages stay consistent', async () => {
    const expected = expectedAll(api);
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 250, times: Infinity });
    const db = join(tmp.dir, 'w2.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_PAGE_SIZE: '10', RECRUIT_ETL_BATCH_PAGES: '1', RECRUIT_ETL_LOG_LEVEL: 'warn' });
    const run = startCli(['extract'], env);
    await waitFor(() => api.stats.eventRequests >= 4, 20_000, 'four page requests');
    run.child.kill('SIGTERM');
    run.child.kill('SIGINT');
    const r = await run.done;
    expect([130, 143]).toContain(r.code);
    const state = await readDb(db);
    expectPrefix(state, expected, state.ids.length, api.truth.events);
    api.faults.clear();
    const again = await runCli(['extract'], env);
    expect(again.code, again.stderr).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
  });
});

describe('a signal during the transform', () => {
  it('stops the statement in flight: exit 143 within 5 s, the one stderr line, the run interrupted with the events it committed, no model kept', async () => {
    const big = await startMockApi({ port: 0, seed: 5, patientsPerTrial: 3000 });
    try {
      const db = join(tmp.dir, 'wt.duckdb');
      const exportDir = join(tmp.dir, 'exports');
      const env = envFor(big, db, { RECRUIT_ETL_PAGE_SIZE: '1000', RECRUIT_ETL_LOG_LEVEL: 'debug', RECRUIT_ETL_EXPORT_DIR: exportDir });
      const run = startCli(['run'], env);
      await waitFor(() => run.output().stdout.includes('"msg":"model built"'), 40_000, 'the first model built');
      const sentAt = Date.now();
      run.child.kill('SIGTERM');
      const r = await run.done;
      const stopMs = Date.now() - sentAt;
      expect(r.code, r.stderr).toBe(143);
      expect(stopMs).toBeLessThan(5000);
      expect(r.stderr.trim().split('\n')).toEqual(['recruit-etl: error: interrupted by SIGTERM']);
      expect(existsSync(join(exportDir, 'manifest.json'))).toBe(false);

      const state = await readDb(db);
      expect(state.runs).toHaveLength(1);
      expect(state.runs[0]!.status).toBe('interrupted');
      expect(state.ids.length).toBe(expectedAll(big).length);
      expect(state.runs[0]!.eventsLoaded).toBe(state.ids.length);
      const wh = await Warehouse.open(db, { readOnly: true });
      try {
        const models = await wh.all("select table_name from information_schema.tables where table_schema = 'main'");
        expect(models).toEqual([]); // the transform's transaction rolled back whole
      } finally {
        await wh.close();
      }
    } finally {
      await big.close();
    }
  });
});
