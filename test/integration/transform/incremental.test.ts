/**
 * The incremental transform equals a full rebuild (docs/incremental.md "Equal to a full
 * rebuild"): a generated stream (the hand-written fixture's edge cases plus the simulator's
 * story) arrives in random batch splits, with redeliveries on the same and on a later
 * stream, quarantined events, a future-dated event and a stream that starts late; after each
 * sequence of incremental transforms, every model equals a `--full-refresh` of the same raw
 * data row for row (EXCEPT ALL both ways), over 50 seeds.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMockApi } from '../../../packages/mock-api/src/index.js';
import { Rng } from '../../../packages/mock-api/src/prng.js';
import { runTransform } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, insertRawEventsSql, type RawEventRow } from '../models/fixture.js';

type Ev = Omit<RawEventRow, 'stream_id' | 'stream_position' | 'extracted_at'>;

const SPLITS = Number(process.env['INCREMENTAL_SPLITS'] ?? 50);

/** A contact attempt of fixture patient T1/p1 dated 2062 (a mistyped year), published in 2024. */
const FUTURE_EVENT: Ev = {
  event_id: 'future-2062',
  event_type: 'v1.contactAttempt.created',
  published_time: '2024-01-15T10:00:00.000Z',
  message: {
    createdTime: '2024-01-15T09:00:00.000Z',
    contactAttemptDate: '2062-01-15',
    siteId: 'S1',
    trialId: 'T1',
    referralSubjectId: 'p1',
    contactAttemptId: 'A-2062',
    contactAttemptOutcomes: ['reached'],
  },
};

/** Every model (table or view) of schema main. */
async function modelNames(wh: Warehouse): Promise<string[]> {
  const rows = await wh.all<{ name: string }>(
    `select table_name as name from information_schema.tables where table_schema = 'main' order by 1`,
  );
  // int_delta_* hold the last transform's delta (job state, not outputs): they differ by design.
  return rows.map((r) => r.name).filter((n) => !n.startsWith('int_delta_'));
}

/** Rows that differ between main.<name> and snap.<name>, both ways. */
async function differences(wh: Warehouse, name: string): Promise<number> {
  const q = `"${name}"`;
  const rows = await wh.all<{ n: bigint }>(
    `select count(*) as n from (
       (select * from snap.${q} except all select * from main.${q})
       union all
       (select * from main.${q} except all select * from snap.${q})
     )`,
  );
  return Number(rows[0]!.n);
}

describe('incremental transform equals a full rebuild', () => {
  let simEvents: Ev[];
  const fixtureA: Ev[] = FIXTURE_EVENTS.filter((e) => e.stream_id === 'stream-a');
  const fixtureB: Ev[] = FIXTURE_EVENTS.filter((e) => e.stream_id === 'stream-b');

  beforeAll(async () => {
    const api = await startMockApi({ seed: 5, patientsPerTrial: 12 });
    try {
      simEvents = api.truth.events.map((e) => ({
        event_id: `sim-${e.id}`,
        event_type: e.eventType,
        published_time: e.publishedTime,
        message: (e.envelope['message'] ?? null) as Record<string, unknown> | null,
        typeKey: e.typeKey,
      }));
    } finally {
      await api.close();
    }
  });

  /**
   * The arrival order of one seed: three streams interleaved (each keeps its own order), some
   * events delivered twice (same stream later, or the late stream), a quarantined event, the
   * future-dated event; then cut into 1 to 5 batches.
   */
  function arrivals(seed: number): { stream: string; ev: Ev; quarantined?: boolean }[][] {
    const rng = new Rng(seed, 12);
    const pick = (n: number): number => rng.u32() % n;
    const queues: Record<string, Ev[]> = {
      'stream-a': [...fixtureA, FUTURE_EVENT],
      'stream-sim': [...simEvents],
      'stream-b': [...fixtureB],
    };
    const order: { stream: string; ev: Ev; quarantined?: boolean }[] = [];
    const delivered: Ev[] = [];
    const names = Object.keys(queues);
    while (names.some((s) => queues[s]!.length > 0)) {
      // stream-b (the late stream) starts only after half of the rest has arrived
      const ready = names.filter((s) => queues[s]!.length > 0 && (s !== 'stream-b' || delivered.length > 200));
      const stream = ready.length > 0 ? ready[pick(ready.length)]! : 'stream-b';
      const ev = queues[stream]!.shift()!;
      order.push({ stream, ev });
      delivered.push(ev);
      // a redelivery of an earlier event: on stream-a, or on the late stream once it started
      if (pick(20) === 0) {
        const again = delivered[pick(delivered.length)]!;
        order.push({ stream: delivered.length > 200 && pick(2) === 0 ? 'stream-b' : 'stream-a', ev: again });
      }
      if (pick(150) === 0) {
        order.push({
          stream: 'stream-a',
          ev: { event_id: `q-${seed}-${order.length}`, event_type: 'v1.patient.statusChanged', published_time: null, message: null },
          quarantined: true,
        });
      }
    }
    const cuts = new Set<number>();
    const batches = 1 + pick(5);
    while (cuts.size < batches - 1) cuts.add(1 + pick(order.length - 1));
    const bounds = [0, ...[...cuts].sort((a, b) => a - b), order.length];
    return bounds.slice(1).map((end, i) => order.slice(bounds[i], end));
  }

  async function load(
    wh: Warehouse,
    batch: { stream: string; ev: Ev; quarantined?: boolean }[],
    positions: Map<string, number>,
    at: string,
  ): Promise<void> {
    const rows: RawEventRow[] = [];
    const quarantine: string[] = [];
    for (const { stream, ev, quarantined } of batch) {
      const position = (positions.get(stream) ?? 0) + 1;
      positions.set(stream, position);
      rows.push({ ...ev, stream_id: stream, stream_position: position, extracted_at: at });
      if (quarantined) {
        quarantine.push(`('${stream}', ${position}, '${ev.event_id}', 'test', '{"bad": "\\ud800"}', 'fixture-run', '${at}')`);
      }
    }
    for (let i = 0; i < rows.length; i += 400) await wh.run(insertRawEventsSql(rows.slice(i, i + 400)));
    if (quarantine.length > 0) await wh.run(`insert into raw.quarantined_events values ${quarantine.join(', ')}`);
  }

  const failures: string[] = [];
  let incrementalRuns = 0;

  test(`over ${SPLITS} random batch splits, every model equals a full refresh row for row`, async () => {
    for (let seed = 1; seed <= SPLITS; seed++) {
      const wh = await Warehouse.open(':memory:', { threads: 2 });
      try {
        await wh.migrate();
        await wh.run(SITE_SNAPSHOTS_SQL);
        const positions = new Map<string, number>();
        const batches = arrivals(seed);
        for (const [i, batch] of batches.entries()) {
          await load(wh, batch, positions, new Date(Date.UTC(2024, 2, 1 + i)).toISOString());
          const r = await runTransform(wh);
          if (i > 0) {
            expect(r.mode, `seed ${seed} batch ${i}: ${r.fullReason}`).toBe('incremental');
            incrementalRuns += 1;
          }
        }
        // and, now and then, a night with nothing new
        if (seed % 5 === 0) expect((await runTransform(wh)).newDeliveries).toBe(0);
        const names = await modelNames(wh);
        await wh.run('create schema snap');
        for (const name of names) await wh.run(`create table snap."${name}" as select * from main."${name}"`);
        const full = await runTransform(wh, { fullRefresh: true });
        expect(full.mode).toBe('full');
        for (const name of names) {
          const n = await differences(wh, name);
          if (n > 0) failures.push(`seed ${seed} (${batches.length} batches): ${name} differs by ${n} rows`);
        }
      } finally {
        await wh.close();
      }
    }
    expect(failures).toEqual([]);
    expect(incrementalRuns).toBeGreaterThan(SPLITS);
  }, 600_000);
});

describe('as_of_at is bounded by what the job observed', () => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await Warehouse.open(':memory:', { threads: 2 });
    await wh.migrate();
    await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
    await runTransform(wh);
  });
  afterAll(async () => {
    await wh.close();
  });

  test('a contact attempt dated 2062 does not move as_of_at; dq_future_dated_events lists it', async () => {
    const before = await wh.all<{ a: string }>(`select as_of_at::varchar as a from main.int_data_as_of`);
    expect(before).toEqual([{ a: '2024-01-22 00:00:00' }]);
    await wh.run(
      insertRawEventsSql([{ ...FUTURE_EVENT, stream_id: 'stream-a', stream_position: 1000, extracted_at: '2024-03-03T00:00:00.000Z' }]),
    );
    const r = await runTransform(wh);
    expect(r.mode).toBe('incremental');
    expect(r.dq.find((d) => d.check === 'dq_future_dated_events')?.count).toBe(1);
    expect(await wh.all(`select distinct as_of_at::varchar as a from main.fct_patient_funnel`)).toEqual([{ a: '2024-01-22 00:00:00' }]);
    expect(await wh.all(`select distinct as_of_at::varchar as a from main.mart_recruitment_funnel`)).toEqual([
      { a: '2024-01-22 00:00:00' },
    ]);
    expect(await wh.all(`select event_id, domain_at::varchar as d from main.dq_future_dated_events`)).toEqual([
      { event_id: 'future-2062', d: '2062-01-15 00:00:00' },
    ]);
  });
});

describe('compaction: checkpoints merge no row groups, so the transform rewrites a table that holds more deleted rows than live ones', () => {
  test('six nights that touch a part of the keys leave each incremental table under twice its live rows, equal to a full refresh', async () => {
    const { tempDir } = await import('../../helpers/tmp.js');
    const tmp = tempDir();
    const wh = await Warehouse.open(`${tmp.dir}/w.duckdb`);
    try {
      await wh.migrate();
      expect((await wh.one<{ v: string }>("select current_setting('max_vacuum_tasks')::varchar as v"))!.v).toBe('0');
      await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
      await runTransform(wh);
      const incremental = (await runTransform(wh)).models.filter((m) => m.materialized === 'incremental').map((m) => m.name);
      expect(incremental.length).toBeGreaterThan(5);
      const stored = async (name: string): Promise<[number, number]> => {
        const r = await wh.one<{ stored: bigint; live: bigint }>(
          `select (select estimated_size from duckdb_tables() where schema_name = 'main' and table_name = ?) as stored, (select count(*) from main."${name}") as live`,
          [name],
        );
        return [Number(r!.stored), Number(r!.live)];
      };
      for (let night = 1; night <= 6; night += 1) {
        // The later part of each stream read again: the keys it touches are deleted and
        // inserted, the others stay, so no row group is ever deleted whole.
        await wh.run('update etl.transform_watermarks set stream_position = stream_position * 2 // 3');
        expect((await runTransform(wh)).mode).toBe('incremental');
        await wh.checkpoint();
      }
      for (const name of incremental) {
        const [rows, live] = await stored(name);
        expect([name, rows <= 2 * live + 1]).toEqual([name, true]);
      }
      await wh.run('create schema snap');
      for (const name of incremental) await wh.run(`create table snap."${name}" as select * from main."${name}"`);
      await runTransform(wh, { fullRefresh: true });
      for (const name of incremental) expect([name, await differences(wh, name)]).toEqual([name, 0]);
    } finally {
      await wh.close();
      tmp.cleanup();
    }
  }, 120_000);
});
