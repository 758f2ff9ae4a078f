import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { ROW_GROUP_SIZE, Warehouse } from '../../../src/warehouse/Warehouse.js';
import { RawEventWriter, RepeatedEventIdsError } from '../../../src/warehouse/RawEventWriter.js';
import { StreamStore } from '../../../src/warehouse/StreamStore.js';
import { publishedCopyPath, publishReadOnlyCopy } from '../../../src/warehouse/publishCopy.js';
import { UpstreamContractError } from '../../../src/errors.js';
import { tempDir } from '../../helpers/tmp.js';

function body(events: object[], next = 'http://h/next', more = true): string {
  return JSON.stringify({ events, pagination: { nextPage: next, hasNextPage: more } });
}
const ev = (id: string, extra: object = {}) => ({
  id,
  eventType: 'v1.patient.statusChanged',
  publishedTime: '2026-01-05T08:00:00.123Z',
  message: { patientStatus: 'preScreening', referralSubjectId: 'RS-1' },
  ...extra,
});

describe('RawEventWriter', () => {
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  beforeEach(async () => {
    tmp = tempDir();
    wh = await Warehouse.open(join(tmp.dir, 'w.duckdb'));
    await wh.migrate();
  });
  afterEach(async () => {
    await wh.close();
    tmp.cleanup();
  });

  it('appends pages at contiguous positions in page order, envelope and message as sent', async () => {
    const w = new RawEventWriter(wh);
    const r = await wh.transaction(() =>
      w.appendPages('s1', 0, [
        { bodyText: body([ev('z'), ev('a', { name: 'x', unknownKey: { deep: [1, 2] } })]), pageNumber: 1 },
        { bodyText: body([{ id: 'm', name: 'v1.patient.created', publishedTime: '2026-01-05T10:00:00+02:00', message: { a: 1 } }]), pageNumber: 2 },
      ], 'run1'),
    );
    expect(r).toEqual({ inserted: 3, duplicates: 0, lastPosition: 3 });
    const rows = await wh.all<{ p: bigint; id: string; t: string; pt: string | null; env: string; msg: string }>(
      `select stream_position as p, event_id as id, event_type as t, strftime(published_time, '%Y-%m-%dT%H:%M:%S.%gZ') as pt,
              envelope::varchar as env, message::varchar as msg from raw.events order by stream_position`,
    );
    expect(rows.map((x) => [Number(x.p), x.id, x.t])).toEqual([
      [1, 'z', 'v1.patient.statusChanged'],
      [2, 'a', 'v1.patient.statusChanged'],
      [3, 'm', 'v1.patient.created'],
    ]);
    expect(rows[2]!.pt).toBe('2026-01-05T08:00:00.000Z');
    expect(JSON.parse(rows[1]!.env)).toEqual(ev('a', { name: 'x', unknownKey: { deep: [1, 2] } }));
    expect(JSON.parse(rows[2]!.msg)).toEqual({ a: 1 });
  });

  it('keeps unparseable publishedTime as NULL without failing', async () => {
    const w = new RawEventWriter(wh);
    await wh.transaction(() => w.appendPages('s1', 0, [{ bodyText: body([ev('a', { publishedTime: 'yesterday' }), ev('b', { publishedTime: '2026-01-05T08:00:00Z' })]), pageNumber: 1 }], 'r'));
    const rows = await wh.all<{ n: bigint }>('select count(*) as n from raw.events where published_time is null');
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('skips an id re-sent with the same payload, within and across batches', async () => {
    const w = new RawEventWriter(wh);
    await wh.transaction(() => w.appendPages('s1', 0, [{ bodyText: body([ev('a'), ev('b'), ev('a')]), pageNumber: 1 }], 'r'));
    const r2 = await wh.transaction(() => w.appendPages('s1', 2, [{ bodyText: body([ev('b'), ev('c')]), pageNumber: 2 }], 'r'));
    expect(r2).toEqual({ inserted: 1, duplicates: 1, lastPosition: 3 });
    const ids = (await wh.all<{ id: string }>('select event_id as id from raw.events order by stream_position')).map((x) => x.id);
    expect(ids).toEqual(['a', 'b', 'c']);
  });

  it('refuses the same id with another payload and commits nothing of the batch', async () => {
    const w = new RawEventWriter(wh);
    const store = new StreamStore(wh);
    await store.activate({ streamId: 's1', name: 'n', environment: 'e', apiOrigin: 'http://h', trialIds: ['T'], eventTypes: ['x'] });
    await wh.transaction(async () => {
      await w.appendPages('s1', 0, [{ bodyText: body([ev('a')]), pageNumber: 1 }], 'r');
      await store.saveCursor('s1', 'http://h/c1', true, 1);
    });
    await expect(
      wh.transaction(async () => {
        await w.appendPages('s1', 1, [{ bodyText: body([ev('b'), ev('a', { message: { patientStatus: 'enrolled' } })]), pageNumber: 7 }], 'r');
        await store.saveCursor('s1', 'http://h/c2', true, 3);
      }),
    ).rejects.toThrow(UpstreamContractError);
    const n = await wh.one<{ n: bigint }>('select count(*) as n from raw.events');
    expect(Number(n!.n)).toBe(1);
    expect((await store.get('s1'))!.nextPage).toBe('http://h/c1');
  });

  it('creates the database file 0600 in a 0700 folder', async () => {
    await wh.checkpoint();
    expect(statSync(wh.path).mode & 0o777).toBe(0o600);
  });
  // The direct path (the extract's hot path) must store exactly what the exact path stores.
  const times = [
    '2026-01-05T08:00:00.123Z', '2026-01-05T08:00:00Z', '2026-01-05T08:00:00.123456Z', '2026-01-05T08:00:00.1234567Z',
    '2026-01-05T10:00:00+02:00', '2026-01-05T03:00:00.5-05:00', '2026-01-05T08:00:00+0530', '2026-01-05 08:00:00',
    '2026-02-30T08:00:00Z', '2026-01-05T25:00:00Z', '2026-01-05', 'yesterday', '', 12345, null, undefined,
    'infinity', '-infinity', '2026-01-05T08:00:00.000+00:00',
  ];
  const mixedPage = (prefix: string) =>
    body(
      times.map((t, i) => {
        const e: Record<string, unknown> = ev(`${prefix}${i}`);
        if (t === undefined) delete e['publishedTime'];
        else e['publishedTime'] = t;
        if (i === 3) e['message'] = null;
        if (i === 4) { delete e['eventType']; e['name'] = 'v1.patient.created'; }
        if (i === 5) e['unknownKey'] = { deep: ['x', 1.5e3, true] };
        return e;
      }),
    );
  const snapshot = (w: Warehouse) =>
    w.all<Record<string, unknown>>(
      `select stream_id, stream_position, event_id, event_type, epoch_us(published_time) as us, published_time::varchar as published_text,
              message::varchar as message, envelope::varchar as envelope, run_id
       from raw.events order by stream_position`,
    );

  it('direct path: the same rows as the exact path, publishedTime cast as TRY_CAST does (offsets included)', async () => {
    const pages = [
      { bodyText: mixedPage('a'), pageNumber: 1 },
      { bodyText: body([]), pageNumber: 2 },
      { bodyText: mixedPage('b'), pageNumber: 3 },
    ];
    const other = await Warehouse.open(join(tmp.dir, 'exact.duckdb'));
    try {
      await other.migrate();
      const direct = await wh.transaction(() => new RawEventWriter(wh).appendPagesDirect('s1', 10, pages, 'run1'));
      const exact = await other.transaction(() => new RawEventWriter(other).appendPages('s1', 10, pages, 'run1'));
      expect(direct).toEqual({ inserted: 2 * times.length, duplicates: 0, lastPosition: 10 + 2 * times.length });
      expect(exact).toEqual(direct);
      const a = await snapshot(wh);
      expect(a).toEqual(await snapshot(other));
      expect(a.map((r) => Number(r['stream_position']))).toEqual([...Array(2 * times.length).keys()].map((k) => 11 + k));
      // spot checks against DuckDB's own TRY_CAST, offsets applied
      const us = (i: number) => a[i]!['us'];
      expect(a.map((r) => r['published_text'])).toContain('infinity');
      expect(a.map((r) => r['published_text'])).toContain('-infinity');
      expect(us(4)).toBe(BigInt(Date.UTC(2026, 0, 5, 8)) * 1000n);
      expect(us(5)).toBe(BigInt(Date.UTC(2026, 0, 5, 8, 0, 0, 500)) * 1000n);
      expect(us(8)).toBeNull();
      expect(us(11)).toBeNull();
      const ids = await wh.all<{ n: bigint }>('select count(*) as n from etl.event_ids');
      expect(Number(ids[0]!.n)).toBe(2 * times.length);
    } finally {
      await other.close();
    }
  });

  it('direct path: an id already on the stream, or twice in the batch, throws RepeatedEventIdsError and the rollback leaves nothing', async () => {
    const w = new RawEventWriter(wh);
    await wh.transaction(() => w.appendPagesDirect('s1', 0, [{ bodyText: body([ev('a'), ev('b')]), pageNumber: 1 }], 'r'));
    const before = await snapshot(wh);
    await expect(
      wh.transaction(() => w.appendPagesDirect('s1', 2, [{ bodyText: body([ev('c'), ev('a')]), pageNumber: 2 }], 'r')),
    ).rejects.toBeInstanceOf(RepeatedEventIdsError);
    await expect(
      wh.transaction(() => w.appendPagesDirect('s1', 2, [{ bodyText: body([ev('c')]), pageNumber: 2 }, { bodyText: body([ev('c')]), pageNumber: 3 }], 'r')),
    ).rejects.toBeInstanceOf(RepeatedEventIdsError);
    expect(await snapshot(wh)).toEqual(before);
    expect(Number((await wh.one<{ n: bigint }>('select count(*) as n from etl.event_ids'))!.n)).toBe(2);
    // the same id on another stream is not a repeat
    await wh.transaction(() => w.appendPagesDirect('s2', 0, [{ bodyText: body([ev('a')]), pageNumber: 1 }], 'r'));
    expect(Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))!.n)).toBe(3);
  });

  it('direct path: an event without an id is a contract error naming the page', async () => {
    const w = new RawEventWriter(wh);
    await expect(
      wh.transaction(() => w.appendPagesDirect('s1', 0, [{ bodyText: body([ev('a'), { eventType: 'x', message: {} }]), pageNumber: 4 }], 'r')),
    ).rejects.toThrow(/page 4: an event has no id/);
    expect(Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))!.n)).toBe(0);
  });
  it(`writes raw.events in row groups of ${ROW_GROUP_SIZE} rows, under the catalog named after the file`, async () => {
    const w = new RawEventWriter(wh);
    const pages = Array.from({ length: 20 }, (_, p) => ({
      bodyText: body(Array.from({ length: 1000 }, (_, i) => ev(`e${p}-${i}`))),
      pageNumber: p + 1,
    }));
    await wh.transaction(() => w.appendPagesDirect('s1', 0, pages, 'r'));
    await wh.checkpoint();
    const groups = await wh.all<{ rows: bigint | number }>(
      `select max(count) as rows from pragma_storage_info('raw.events') group by row_group_id order by row_group_id`,
    );
    // 20,000 rows: DuckDB's default (122,880) would make one row group of them.
    expect(ROW_GROUP_SIZE).toBe(16_384);
    expect(groups.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...groups.map((g) => Number(g.rows)))).toBe(16_384);
    expect((await wh.one<{ c: string }>('select current_database() as c'))!.c).toBe('w');
  });
  it('opens a writable file whatever its name, under the catalog DuckDB gives it when it opens it directly', async () => {
    for (const name of ['main.duckdb', 'memory.duckdb', 'my.data.duckdb', "it's.duckdb"]) {
      const file = join(tmp.dir, name);
      const rw = await Warehouse.open(file);
      await rw.migrate();
      const writable = (await rw.one<{ c: string }>('select current_database() as c'))!.c;
      await rw.close();
      const ro = await Warehouse.open(file, { readOnly: true });
      const readOnly = (await ro.one<{ c: string }>('select current_database() as c'))!.c;
      expect(Number((await ro.one<{ n: bigint }>('select count(*) as n from etl.schema_migrations'))!.n)).toBeGreaterThan(0);
      await ro.close();
      if (name === 'memory.duckdb') expect(writable).toBe('recruit_etl_warehouse'); // "memory" is the session's own
      else expect(writable).toBe(readOnly);
    }
  });

  it("a writable open removes the spill folder a killed run left (<db>.tmp); a read-only open or another folder is left alone", async () => {
    const file = join(tmp.dir, 'spill.duckdb');
    const stale = `${file}.tmp`;
    const leave = () => {
      mkdirSync(stale, { recursive: true });
      writeFileSync(join(stale, 'duckdb_temp_storage_S32K-0.tmp'), 'x');
    };
    const first = await Warehouse.open(file);
    await first.migrate();
    await first.close();
    leave();
    const ro = await Warehouse.open(file, { readOnly: true });
    await ro.close();
    expect(existsSync(join(stale, 'duckdb_temp_storage_S32K-0.tmp'))).toBe(true);
    const own = join(tmp.dir, 'elsewhere');
    const other = await Warehouse.open(file, { tempDirectory: own });
    await other.close();
    expect(existsSync(stale)).toBe(true);
    const rw = await Warehouse.open(file);
    expect(existsSync(stale)).toBe(false);
    await rw.close();
  });

  it("publishing the copy removes a killed run's temporary copy and leaves the readers' spill folder (<copy>.tmp) alone", async () => {
    const copy = publishedCopyPath(wh.path);
    const spill = `${copy}.tmp`;
    mkdirSync(spill);
    writeFileSync(join(spill, 'duckdb_temp_storage_S32K-0.tmp'), 'x');
    const killed = `${copy}.run-killed.tmp`;
    writeFileSync(killed, 'partial copy');
    expect(await publishReadOnlyCopy(wh, 'run-2')).toBe(copy);
    expect(existsSync(killed)).toBe(false);
    expect(existsSync(join(spill, 'duckdb_temp_storage_S32K-0.tmp'))).toBe(true);
    expect(existsSync(copy)).toBe(true);
  });
});
