/**
 * Hostile upstream input (docs/ingest.md): what today's simulator faults send must never
 * brick the warehouse, drop an event silently, keep a run alive for ever or put payload text
 * into an error. Each test is named after what broke before.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMockApi, type MockApi, type TruthEvent } from '../../src/simulator/index.js';
import { runJob } from '../../src/pipeline/jobs.js';
import { describeFailure } from '../../src/cli/exit.js';
import { readStatus } from '../../src/warehouse/readStatus.js';
import { publishedCopyPath } from '../../src/warehouse/publishCopy.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { tempDir } from '../helpers/tmp.js';
import { configFor } from '../helpers/sim.js';
import { expectExactly, expectPrefix, expectedAll, extractOnce, fastHttp, readDb } from '../helpers/faults.js';

const SIM = { seed: 11, patientsPerTrial: 10 } as const;
const PAGE = 10;

let api: MockApi;
let tmp: ReturnType<typeof tempDir>;
let expected: TruthEvent[];
let n = 0;
const freshDb = (): string => join(tmp.dir, `h${++n}.duckdb`);

beforeEach(async () => {
  api = await startMockApi({ port: 0, ...SIM });
  tmp = tempDir('recruit-etl-hostile-');
  expected = expectedAll(api);
});
afterEach(async () => {
  await api.close();
  tmp.cleanup();
});

/** Every stage of `run` (sites aside) in-process; the exit code a failure maps to. */
async function runAll(db: string, extra: Record<string, unknown> = {}): Promise<{ exitCode: number; message: string }> {
  const http = fastHttp();
  try {
    await runJob('run', ['extract', 'transform', 'export'], { config: configFor(api, db, { pageSize: PAGE, exportDir: join(tmp.dir, `exp${n}`), ...extra }), http });
    return { exitCode: 0, message: '' };
  } catch (err) {
    const { exitCode, text } = describeFailure(err, false);
    return { exitCode, message: text };
  } finally {
    await http.close();
  }
}

describe('quarantine, never brick (a lone surrogate made every later transform fail, exit 1, for good)', () => {
  it('an event with a lone surrogate keeps its place, is stored readable, its text kept beside it; every later command succeeds', async () => {
    api.faults.add({ endpoint: 'events', kind: 'loneSurrogate', after: 2, event: 4 });
    const db = freshDb();
    const first = await runAll(db);
    expect(first.exitCode, first.message).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
    // Run again (nothing new), then read everything back: transform, export, status all succeed.
    expect((await runAll(db)).exitCode).toBe(0);
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const q = await wh.all<{ p: bigint; id: string; body: string }>('select stream_position as p, event_id as id, body from raw.quarantined_events');
      expect(q).toHaveLength(1);
      const id = expected[2 * PAGE + 3]!.id;
      expect(q[0]!.id).toBe(id);
      expect(Number(q[0]!.p)).toBe(2 * PAGE + 4);
      expect(q[0]!.body).toContain('\\ud800');
      const stored = await wh.one<{ note: string; ok: boolean }>('select message->>\'note\' as note, json_valid(envelope) as ok from raw.events where event_id = ?', [id]);
      expect(stored).toEqual({ note: 'x\ufffdy', ok: true });
      const dq = await wh.all<{ check_name: string; issue_count: bigint }>("select check_name, issue_count from main.dq_summary where check_name = 'dq_quarantined_events'");
      expect(Number(dq[0]!.issue_count)).toBe(1);
      const status = await readStatus(wh);
      expect(status.streams.find((s) => s.status === 'active')!.quarantined).toBe(1);
      const runs = await wh.all<{ summary: string }>("select summary::varchar as summary from etl.runs where command = 'run' order by started_at limit 1");
      expect(JSON.parse(runs[0]!.summary).extract.quarantined).toBe(1);
    } finally {
      await wh.close();
    }
  });
});

describe('one reading of a page', () => {
  it('keys spelt with escapes ("\\u0065vents", "\\u0069d") are read as the names they spell (exit 1 / exit 6 on every rerun before)', async () => {
    api.faults.add({ endpoint: 'events', kind: 'escapedKeys', after: 1, times: 3 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const mismatch = await wh.one<{ n: bigint }>("select count(*) as n from raw.events where event_id is distinct from (envelope->>'id')");
      expect(Number(mismatch!.n)).toBe(0);
    } finally {
      await wh.close();
    }
  });

  it('a redelivery with its keys in another order is the same event (exit 6 on every rerun before)', async () => {
    api.faults.add({ endpoint: 'events', kind: 'reorderedRedelivery', after: 3, times: 2 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expect(out.result!.extract!.duplicatesSkipped).toBe(2);
    expectExactly(await readDb(db), expected, api.truth.events);
  });
});

describe('bounded time (a run could last for ever)', () => {
  it('endless empty pages with hasNextPage true: exit 6 after --max-empty-pages, naming the stream and the count (41,901 requests in 30 s before)', async () => {
    api.faults.add({ endpoint: 'events', kind: 'emptyPagesForever', after: 3 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toMatch(/stream s_[0-9a-f]+, page \d+: 1000 pages in a row brought no event/);
    expect(api.stats.eventRequests).toBeLessThanOrEqual(3 + 1000 + 2);
    // The events before the empty pages are kept; the empty pages were valid pages, committed with their cursors.
    expect((await readDb(db)).ids).toEqual(expected.slice(0, 3 * PAGE).map((e) => e.id));
  });

  it('a cursor cycle longer than one page is refused (exit 6) before the first URL is requested again', async () => {
    api.faults.add({ endpoint: 'events', kind: 'nextPage', variant: 'longCycle', length: 5, after: 2 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toMatch(/a cycle/);
  });

  it('a body sent one byte at a time never trips the between-chunks timeout, but --body-timeout ends it: exit 4 in bounded time', async () => {
    api.faults.add({ endpoint: 'events', kind: 'drip', ms: 50, after: 2, times: 10 });
    const db = freshDb();
    const started = Date.now();
    const out = await extractOnce(api, db, { pageSize: PAGE }, { bodyTotalTimeoutMs: 300, maxAttempts: 2 });
    expect(out.exitCode, out.message).toBe(4);
    expect(Date.now() - started).toBeLessThan(10_000);
    expectPrefix(await readDb(db), expected, 2 * PAGE, api.truth.events);
  });
});

describe('the run log tells the truth (a run was marked succeeded, then exited 7)', () => {
  it('a run whose published copy cannot be written exits 7 and is recorded as failed', async () => {
    const db = freshDb();
    // A non-empty folder where the copy goes: the rename over it fails.
    mkdirSync(publishedCopyPath(db), { recursive: true });
    writeFileSync(join(publishedCopyPath(db), 'x'), 'x');
    const out = await runAll(db);
    expect(out.exitCode, out.message).toBe(7);
    const state = await readDb(db);
    expect(state.runs.at(-1)!.status).toBe('failed');
    expect(state.runs.at(-1)!.error).toMatch(/cannot publish the read-only copy/);
  });
});
