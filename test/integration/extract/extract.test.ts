import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { expectedEvents } from '../../../packages/mock-api/src/index.js';
import { EXTRACT_SETTINGS, heldBatchSettings, runJob } from '../../../src/pipeline/jobs.js';
import { readEventsPage } from '../../../src/upstream/page.js';
import { extractEvents } from '../../../src/extract/extractEvents.js';
import { DEFAULT_BATCH_PAGES } from '../../../src/extract/batches.js';
import type { EventsClient } from '../../../src/upstream/events.js';
import { ROW_GROUP_SIZE, Warehouse } from '../../../src/warehouse/Warehouse.js';
import { DEFAULT_EVENT_TYPES } from '../../../src/config/config.js';
import { UpstreamContractError } from '../../../src/errors.js';
import { configFor, startSim } from '../../helpers/sim.js';
import { tempDir } from '../../helpers/tmp.js';

interface RawRow {
  stream_id: string;
  p: bigint;
  id: string;
  t: string | null;
  env: string;
}

async function rawRows(db: string): Promise<RawRow[]> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    return await wh.all<RawRow>(
      'select stream_id, stream_position as p, event_id as id, event_type as t, envelope::varchar as env from raw.events order by stream_id, stream_position',
    );
  } finally {
    await wh.close();
  }
}

describe('extract against the simulator (ground truth)', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    api = await startSim({ seed: 7, patientsPerTrial: 60, releaseFraction: 0.6 });
    tmp = tempDir();
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('stores every requested event exactly once, at contiguous positions in API order, and nothing else', async () => {
    const db = join(tmp.dir, 'a.duckdb');
    const config = configFor(api, db, { pageSize: 7 });
    const r = await runJob('extract', ['extract'], { config });
    const expected = expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES] });
    expect(expected.length).toBeGreaterThan(100);
    expect(r.extract!.eventsLoaded).toBe(expected.length);
    const rows = await rawRows(db);
    expect(rows.map((x) => x.id)).toEqual(expected.map((e) => e.id));
    expect(rows.map((x) => Number(x.p))).toEqual(expected.map((_, i) => i + 1));
    expect(new Set(rows.map((x) => x.stream_id)).size).toBe(1);
    // event_type is eventType, or name where eventType is absent; the envelope is the JSON value as sent.
    expect(rows.map((x) => x.t)).toEqual(expected.map((e) => e.eventType));
    for (let i = 0; i < rows.length; i += 13) expect(JSON.parse(rows[i]!.env)).toEqual(expected[i]!.envelope);
    // Drift flows through: `name`-keyed envelopes, both contact-attempt spellings, no v2 unless requested.
    expect(expected.some((e) => e.typeKey === 'name')).toBe(true);
    const types = new Set(rows.map((x) => x.t));
    expect(types.has('v1.contactAttempt.created')).toBe(true);
    expect(types.has('v1.patient.contactAttempt.created')).toBe(true);
    expect(types.has('v2.patient.created')).toBe(false);
  });

  it('resumes from the stored cursor: a poll with nothing new loads nothing, new events load once', async () => {
    const db = join(tmp.dir, 'b.duckdb');
    const config = configFor(api, db, { pageSize: 50 });
    const first = await runJob('extract', ['extract'], { config });
    const again = await runJob('extract', ['extract'], { config });
    expect(again.extract!.resumed).toBe(true);
    expect(again.extract!.eventsLoaded).toBe(0);
    const released = api.grow(200);
    expect(released).toBeGreaterThan(0);
    const third = await runJob('extract', ['extract'], { config });
    const expected = expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES] });
    expect(first.extract!.eventsLoaded + third.extract!.eventsLoaded).toBe(expected.length);
    const rows = await rawRows(db);
    expect(rows.map((x) => x.id)).toEqual(expected.map((e) => e.id));
    expect(rows.map((x) => Number(x.p))).toEqual(expected.map((_, i) => i + 1));
  });

  it('a changed filter is a new stream from the beginning; the old one is retired and its rows stay', async () => {
    const db = join(tmp.dir, 'c.duckdb');
    const types = [...DEFAULT_EVENT_TYPES];
    const a = await runJob('extract', ['extract'], { config: configFor(api, db, { pageSize: 100 }) });
    const withV2 = [...types, 'v2.patient.created', 'v1.patient.subjectIdUpdated'];
    const b = await runJob('extract', ['extract'], { config: configFor(api, db, { pageSize: 100, eventType: withV2 }) });
    expect(b.extract!.streamId).not.toBe(a.extract!.streamId);
    expect(b.extract!.retiredStreams).toEqual([a.extract!.streamId]);
    const expectedB = expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: withV2 });
    const rows = await rawRows(db);
    const bRows = rows.filter((x) => x.stream_id === b.extract!.streamId);
    expect(bRows.map((x) => x.id)).toEqual(expectedB.map((e) => e.id));
    expect(bRows.some((x) => x.t === 'v2.patient.created')).toBe(true);
    expect(bRows.some((x) => x.t === 'v1.patient.subjectIdUpdated')).toBe(true);
    expect(rows.filter((x) => x.stream_id === a.extract!.streamId).length).toBe(a.extract!.eventsLoaded);
    const wh = await Warehouse.open(db, { readOnly: true });
    const streams = await wh.all<{ stream_id: string; status: string }>('select stream_id, status from etl.streams order by status');
    await wh.close();
    expect(streams).toEqual([
      { stream_id: b.extract!.streamId, status: 'active' },
      { stream_id: a.extract!.streamId, status: 'retired' },
    ]);
  });
});

describe('extract under its DuckDB settings (EXTRACT_SETTINGS)', () => {
  const base = 'http://upstream.test';
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir();
  });
  afterAll(() => {
    tmp.cleanup();
  });

  /** `fn` on a fresh, migrated warehouse `name` in the temp folder, optionally under the extract's cap; closed after. */
  async function onWarehouse(name: string, capped: boolean, fn: (wh: Warehouse) => Promise<void>): Promise<void> {
    const wh = await Warehouse.open(join(tmp.dir, name));
    try {
      await wh.migrate();
      if (capped) await wh.withSettings(EXTRACT_SETTINGS, () => fn(wh));
      else await fn(wh);
    } finally {
      await wh.close();
    }
  }

  /** Extract one stream of `client` into `wh` (a test stream on the fake upstream). */
  function extractFrom(wh: Warehouse, client: EventsClient, batchPages: number) {
    return extractEvents({
      wh,
      client,
      baseUrl: base,
      environment: 'test',
      trialIds: ['T-1'],
      eventTypes: ['v1.patient.statusChanged'],
      batchPages,
      heldBatchSettings: heldBatchSettings('2GB'),
      runId: 'run-1',
    });
  }

  /**
   * A client serving `pages` pages of 1,000 events of about 200 + `noteBytes` bytes; with
   * `resend`, page p + 25 re-sends page p.
   */
  function resendingClient(base: string, pages: number, resend = true, noteBytes = 500): EventsClient {
    const event = (n: number) => ({
      id: `evt-${n}`,
      eventType: 'v1.patient.statusChanged',
      publishedTime: '2026-01-05T08:00:00.123Z',
      message: { trialId: 'T-1', referralSubjectId: `RS-${n % 5000}`, patientStatus: 'preScreening', note: 'x'.repeat(noteBytes) },
    });
    return {
      origin: new URL(base).origin,
      async fetchPage(url: string) {
        const p = Number(new URL(url).searchParams.get('p') ?? '0');
        const first = (resend ? p % 25 : p) * 1000;
        const events = Array.from({ length: 1000 }, (_, i) => event(first + i));
        const more = p + 1 < pages;
        const nextPage = `${base}/events?p=${more ? p + 1 : p}`;
        const bodyText = JSON.stringify({ events, pagination: { nextPage, hasNextPage: more } });
        return { url, bytes: bodyText.length, ...readEventsPage(bodyText) };
      },
    } as unknown as EventsClient;
  }

  it('pages that only re-send events already stored, with a new cursor each time, end the run like empty pages: exit 6 after --max-empty-pages (71,011 pages in 25 s and counting before)', async () => {
    await onWarehouse('idle.duckdb', true, async (wh) => {
      let fetched = 0;
      const event = {
        id: 'evt-1',
        eventType: 'v1.patient.statusChanged',
        publishedTime: '2026-01-05T08:00:00.123Z',
        message: { trialId: 'T-1', referralSubjectId: 'RS-1' },
      };
      const client = {
        origin: new URL(base).origin,
        async fetchPage(url: string) {
          fetched += 1;
          const bodyText = JSON.stringify({ events: [event], pagination: { nextPage: `${base}/events?p=${fetched}`, hasNextPage: true } });
          return { url, bytes: bodyText.length, ...readEventsPage(bodyText) };
        },
      } as unknown as EventsClient;
      const err = await extractEvents({
        wh,
        client,
        baseUrl: base,
        environment: 'test',
        trialIds: ['T-1'],
        eventTypes: ['v1.patient.statusChanged'],
        batchPages: 10,
        maxEmptyPages: 30,
        runId: 'run-1',
      }).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(UpstreamContractError);
      expect((err as UpstreamContractError).exitCode).toBe(6);
      expect((err as Error).message).toMatch(/^stream s_\w+: (3\d) pages in a row brought no new event .*--max-empty-pages 30/);
      expect(fetched).toBeLessThan(30 + 10 * 4);
      const row = await wh.one<{ n: bigint }>('select count(*) as n from raw.events');
      expect(Number(row!.n)).toBe(1);
    });
  });

  it('writes a batch of 25,000 re-sent events under the cap: every one recognised as a redelivery', async () => {
    await onWarehouse('cap.duckdb', true, async (wh) => {
      const r = await extractFrom(wh, resendingClient(base, 50), 25);
      expect([r.eventsLoaded, r.duplicatesSkipped, r.streamEventCount]).toEqual([25_000, 25_000, 25_000]);
      const row = await wh.one<{ n: bigint; ids: bigint }>('select count(*) as n, count(distinct event_id) as ids from raw.events');
      expect([Number(row!.n), Number(row!.ids)]).toEqual([25_000, 25_000]);
    });
  });

  it('a page of wide events (rows over 8 KiB) is a batch of its own, written under the held settings: 36 pages of 1,000 events of 4 KB', async () => {
    // DuckDB holds such rows in memory until a checkpoint, in proportion to their size: under
    // the extract's cap alone, one page of them ran out of memory.
    await onWarehouse('wide.duckdb', true, async (wh) => {
      const r = await extractFrom(wh, resendingClient(base, 36, false, 4000), DEFAULT_BATCH_PAGES);
      expect([r.eventsLoaded, r.streamEventCount, r.batches]).toEqual([36_000, 36_000, 36]);
    });
  });

  it('by default a batch ends at 64 MiB of its file: its rows go to disk in whole row groups, and no checkpoint merges them', async () => {
    await onWarehouse('groups.duckdb', true, async (wh) => {
      // 240 pages of 1,000 events of about 300 bytes (rows of the batch file 300-550 bytes).
      const r = await extractFrom(wh, resendingClient(base, 240, false, 100), DEFAULT_BATCH_PAGES);
      expect(r.eventsLoaded).toBe(240_000);
      expect(r.batches).toBeGreaterThanOrEqual(2);
      expect(r.batches).toBeLessThanOrEqual(4);
      await wh.checkpoint();
      const groups = await wh.all<{ n: bigint }>(
        `select sum(count) as n from pragma_storage_info('raw.events')
         where column_name = 'event_id' and segment_type <> 'VALIDITY' group by row_group_id order by row_group_id`,
      );
      const sizes = groups.map((g) => Number(g.n));
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(240_000);
      // Each batch: whole row groups, then the rest of its rows in one.
      expect(sizes.filter((n) => n !== ROW_GROUP_SIZE).length).toBe(r.batches);
    });
  });
});
