/**
 * One writer, analysts never block the nightly run (docs/contracts.md guarantee 7;
 * docs/architecture.md "DuckDB" ("Locks")).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startMockApi, type MockApi, type TruthEvent } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { runCli } from '../helpers/cli.js';
import { envFor } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';
import { expectExactly, expectPrefix, expectedAll, extractOnce, readDb, startCli, waitFor } from '../helpers/faults.js';

let api: MockApi;
let tmp: ReturnType<typeof tempDir>;
let expected: TruthEvent[];

beforeEach(async () => {
  api = await startMockApi({ port: 0, seed: 13, patientsPerTrial: 10, releaseFraction: 0.5 });
  tmp = tempDir('recruit-etl-conc-');
});
afterEach(async () => {
  await api.close();
  tmp.cleanup();
});

const rawCount = async (file: string, wh?: Warehouse): Promise<number> => {
  const own = wh ?? (await Warehouse.open(file, { readOnly: true }));
  try {
    return Number((await own.one<{ n: bigint }>('select count(*) as n from raw.events'))!.n);
  } finally {
    if (!wh) await own.close();
  }
};

describe('one writer', () => {
  it('two runs started together: one exits 0, the other exits 5 at once naming the holder PID', async () => {
    api.grow();
    expected = expectedAll(api);
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 150, times: Infinity });
    const db = join(tmp.dir, 'w.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_PAGE_SIZE: '10', RECRUIT_ETL_LOG_LEVEL: 'warn' });
    const a = startCli(['extract'], env);
    const b = startCli(['extract'], env);
    const [ra, rb] = await Promise.all([a.done, b.done]);
    const codes = [ra.code, rb.code].sort();
    expect(codes, `${ra.stderr} | ${rb.stderr}`).toEqual([0, 5]);
    const [winner, loser] = ra.code === 0 ? [a, b] : [b, a];
    const [rw, rl] = ra.code === 0 ? [ra, rb] : [rb, ra];
    // At once: long before the holder is done (its 13+ pages take >= 2 s).
    expect(rw.ms).toBeGreaterThan(2000);
    expect(rl.ms).toBeLessThan(rw.ms - 1000);
    const lines = rl.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^recruit-etl: error: .*another process/);
    expect(lines[0]).toContain(`PID ${winner.pid}`);
    expect(loser.pid).not.toBe(winner.pid);
    expect(rw.stderr).toBe('');
    const state = await readDb(db);
    expectExactly(state, expected, api.truth.events);
    // The refused run never wrote anything: one run recorded.
    expect(state.runs).toHaveLength(1);
    expect(state.runs[0]!.status).toBe('succeeded');
  });
});

describe('analysts never block the nightly run', () => {
  it('a read-only session holding the published copy: the run succeeds and replaces the copy; the session keeps its snapshot', async () => {
    const db = join(tmp.dir, 'a', 'warehouse.duckdb');
    const copy = join(tmp.dir, 'a', 'warehouse.readonly.duckdb');
    const first = await extractOnce(api, db, { pageSize: 20 });
    expect(first.exitCode, first.message).toBe(0);
    expect(existsSync(copy)).toBe(true);
    const half = expectedAll(api).length;
    const inodeBefore = statSync(copy).ino;
    const analyst = await Warehouse.open(copy, { readOnly: true });
    try {
      expect(await rawCount(copy, analyst)).toBe(half);
      api.grow();
      expected = expectedAll(api);
      const r = await runCli(['extract'], envFor(api, db, { RECRUIT_ETL_PAGE_SIZE: '20', RECRUIT_ETL_LOG_LEVEL: 'warn' }));
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(statSync(copy).ino).not.toBe(inodeBefore);
      // The open session still reads the copy it opened.
      expect(await rawCount(copy, analyst)).toBe(half);
    } finally {
      await analyst.close();
    }
    expect(await rawCount(copy)).toBe(expected.length);
    expectExactly(await readDb(db), expected, api.truth.events);
  });

  it('status while a run holds the live file shows the published copy (exit 0); without a copy it is exit 5', async () => {
    const db = join(tmp.dir, 's', 'warehouse.duckdb');
    // Page size 5 (the stored cursor keeps it): the next run has 11 slow pages to fetch.
    const first = await extractOnce(api, db, { pageSize: 5 });
    expect(first.exitCode, first.message).toBe(0);
    const half = expectedAll(api).length;
    api.grow();
    // 3 s a page: the run holds the file for half a minute, however slowly a loaded machine
    // starts the two status processes (at 500 ms it once finished first, at load 20).
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 3_000, times: Infinity });
    const env = envFor(api, db, { RECRUIT_ETL_PAGE_SIZE: '5', RECRUIT_ETL_BATCH_PAGES: '1', RECRUIT_ETL_LOG_LEVEL: 'warn' });
    const requestsBefore = api.stats.eventRequests;
    const run = startCli(['extract'], env);
    try {
      // The run opens the database before its first request: once a request arrives, it holds the file.
      await waitFor(() => api.stats.eventRequests > requestsBefore, 15_000, 'the run to start paging');
      const [json, text] = await Promise.all([runCli(['status', '--json'], env), runCli(['status'], env)]);
      expect(run.child.exitCode, 'the run still holds the file').toBeNull();
      expect(json.stderr).toBe('');
      expect(json.code).toBe(0);
      const s = JSON.parse(json.stdout) as { note?: string; rows: Record<string, number> };
      expect(s.note ?? json.stdout.slice(0, 800)).toMatch(/showing the copy published by the last successful run/);
      expect(s.rows['raw.events']).toBe(half);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/note: a run holds/);
      // Another database without a published copy, held by a session of this process: exit 5.
      const lone = join(tmp.dir, 'lone.duckdb');
      const holder = await Warehouse.open(lone);
      try {
        const locked = await runCli(['status'], { ...env, RECRUIT_ETL_DB: lone });
        expect(locked.code).toBe(5);
        expect(locked.stderr).toMatch(new RegExp(`^recruit-etl: error: .*PID ${process.pid}`));
      } finally {
        await holder.close();
      }
    } finally {
      // Done with the holder: stop it (a clean interruption) rather than wait for its slow pages.
      expect(run.child.exitCode, 'the run was still paging').toBeNull();
      run.child.kill('SIGTERM');
      const r = await run.done;
      expect(r.code, r.stderr).toBe(143);
    }
    const state = await readDb(db);
    expectPrefix(state, expectedAll(api), state.ids.length, api.truth.events);
    expect(state.ids.length).toBeGreaterThanOrEqual(half);
  });
});
