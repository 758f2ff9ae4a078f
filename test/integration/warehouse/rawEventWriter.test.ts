import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { ROW_GROUP_SIZE, Warehouse } from '../../../src/warehouse/Warehouse.js';
import { StreamStore } from '../../../src/warehouse/StreamStore.js';
import { prepareReadOnlyCopy, publishedCopyPath } from '../../../src/warehouse/publishCopy.js';
import { UpstreamContractError } from '../../../src/errors.js';
import { BatchWriter, type FetchedPage, PageContractError } from '../../../src/extract/BatchWriter.js';
import { readEventsPage } from '../../../src/upstream/page.js';
import { silentLogger } from '../../../src/log/logger.js';
import { tempDir } from '../../helpers/tmp.js';

const ev = (id: string, extra: object = {}) => ({
  id,
  eventType: 'v1.patient.statusChanged',
  publishedTime: '2026-01-05T08:00:00.123Z',
  message: { patientStatus: 'preScreening', referralSubjectId: 'RS-1' },
  ...extra,
});

/** Commit `pages` as one batch of `w`. */
function commit(w: BatchWriter, pages: FetchedPage[]): ReturnType<BatchWriter['write']> {
  const b = w.begin();
  for (const p of pages) b.add(p);
  return w.write(b);
}

/** A fetched page of `events` (objects, or texts as sent), read as the client reads it. */
function page(pageNumber: number, events: (object | string)[], nextPage = `http://h/c${pageNumber}`, hasNextPage = true): FetchedPage {
  const texts = events.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)));
  const body = `{"events":[${texts.join(',')}],"pagination":${JSON.stringify({ nextPage, hasNextPage })}}`;
  return { events: readEventsPage(body).events, pageNumber, nextPage, hasNextPage };
}

describe('BatchWriter and RawEventWriter (docs/ingest.md "How a batch is written")', () => {
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

  async function batchWriter(streamId = 's1'): Promise<BatchWriter> {
    const store = new StreamStore(wh);
    const state = (
      await store.activate({ streamId, name: streamId, environment: 'e', apiOrigin: 'http://h', trialIds: [streamId], eventTypes: ['x'] })
    ).state;
    return BatchWriter.open({ wh, store, streamId, position: state.eventCount, runId: 'run1', logger: silentLogger() });
  }
  const ids = async (stream = 's1') =>
    (await wh.all<{ id: string }>('select event_id as id from raw.events where stream_id = ? order by stream_position', [stream])).map(
      (x) => x.id,
    );
  const count = async (sql: string) => Number((await wh.one<{ n: bigint }>(sql))!.n);

  it('appends pages at contiguous positions in page order, envelope and message as sent, the cursor with them', async () => {
    const w = await batchWriter();
    const e2 =
      '{ "id" : "a", "name": "x", "eventType": "v1.patient.statusChanged", "unknownKey": {"deep": [1, 2]} , "message": {"b": 2,  "a": 1} }';
    const r = await commit(w, [
      page(1, [ev('z'), e2]),
      page(2, [{ id: 'm', name: 'v1.patient.created', publishedTime: '2026-01-05T10:00:00+02:00', message: { a: 1 } }]),
    ]);
    expect(r).toEqual({ inserted: 3, duplicates: 0, quarantined: 0, lastPosition: 3, pages: 2 });
    const rows = await wh.all<{ p: bigint; id: string; t: string; pt: string | null; env: string; msg: string; eid: string }>(
      `select stream_position as p, event_id as id, event_type as t, strftime(published_time, '%Y-%m-%dT%H:%M:%S.%gZ') as pt,
              envelope::varchar as env, message::varchar as msg, envelope->>'id' as eid from raw.events order by stream_position`,
    );
    expect(rows.map((x) => [Number(x.p), x.id, x.t, x.eid])).toEqual([
      [1, 'z', 'v1.patient.statusChanged', 'z'],
      [2, 'a', 'v1.patient.statusChanged', 'a'],
      [3, 'm', 'v1.patient.created', 'm'],
    ]);
    expect(rows[1]!.env).toBe(e2);
    expect(rows[1]!.msg).toBe('{"b": 2,  "a": 1}');
    expect(rows[2]!.pt).toBe('2026-01-05T08:00:00.000Z');
    expect((await wh.one<{ n: string }>("select next_page as n from etl.streams where stream_id = 's1'"))!.n).toBe('http://h/c2');
  });

  it('publishedTime is cast as TRY_CAST does (offsets applied, unparseable as NULL, ±infinity kept)', async () => {
    const times = [
      '2026-01-05T10:00:00+02:00',
      '2026-01-05T03:00:00.5-05:00',
      '2026-02-30T08:00:00Z',
      'yesterday',
      'infinity',
      '-infinity',
      12345,
      null,
    ];
    const w = await batchWriter();
    await commit(w, [
      page(
        1,
        times.map((t, i) => ev(`t${i}`, { publishedTime: t })),
      ),
    ]);
    const rows = await wh.all<{ us: bigint | null; txt: string | null }>(
      'select epoch_us(published_time) as us, published_time::varchar as txt from raw.events order by stream_position',
    );
    expect(rows[0]!.us).toBe(BigInt(Date.UTC(2026, 0, 5, 8)) * 1000n);
    expect(rows[1]!.us).toBe(BigInt(Date.UTC(2026, 0, 5, 8, 0, 0, 500)) * 1000n);
    expect(rows.slice(2).map((r) => (r.txt === 'infinity' || r.txt === '-infinity' ? r.txt : r.us))).toEqual([
      null,
      null,
      'infinity',
      '-infinity',
      null,
      null,
    ]);
  });

  it('skips an id re-sent with the same payload, within and across batches', async () => {
    const w = await batchWriter();
    await commit(w, [page(1, [ev('a'), ev('b'), ev('a')])]);
    const r2 = await commit(w, [page(2, [ev('b'), ev('c')])]);
    expect(r2).toEqual({ inserted: 1, duplicates: 1, quarantined: 0, lastPosition: 3, pages: 1 });
    expect(await ids()).toEqual(['a', 'b', 'c']);
  });

  it('a redelivery with its keys in another order and other white space is the same event (exit 6 on every rerun before)', async () => {
    const w = await batchWriter();
    await commit(w, [page(1, [ev('a', { message: { x: 1, y: [1, { p: 'q', r: null }] } })])]);
    const reordered =
      '{ "message" : { "y" : [ 1 , { "r": null, "p": "q" } ], "x": 1.0 }, "publishedTime": "2026-01-05T08:00:00.123Z", "eventType": "v1.patient.statusChanged", "id": "a" }';
    const r = await commit(w, [page(2, [reordered, ev('b')])]);
    expect([r.inserted, r.duplicates]).toEqual([1, 1]);
    expect(await ids()).toEqual(['a', 'b']);
  });

  it('refuses the same id with another payload: nothing of that page, the pages before it kept with their cursor', async () => {
    const w = await batchWriter();
    await commit(w, [page(1, [ev('a')])]);
    const err = await commit(w, [page(2, [ev('b')]), page(7, [ev('c'), ev('a', { message: { patientStatus: 'enrolled' } })])]).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PageContractError);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as Error).message).toMatch(/page 7: an event id was sent again with a different payload/);
    expect(await ids()).toEqual(['a', 'b']);
    expect((await wh.one<{ n: string }>("select next_page as n from etl.streams where stream_id = 's1'"))!.n).toBe('http://h/c2');
  });

  it('an id hash already on the stream whose id is not (a hash collision) is written, not skipped', async () => {
    const w0 = await batchWriter();
    await commit(w0, [page(1, [ev('a')])]);
    // A stored hash of an id that raw.events does not hold: the probe hits, the exact check finds no such id.
    await wh.run("insert into etl.event_ids values ('s1', hash('ghost'), 1)");
    const w = await batchWriter();
    const r = await commit(w, [page(2, [ev('ghost'), ev('b')])]);
    expect([r.inserted, r.duplicates]).toEqual([2, 0]);
    expect(await ids()).toEqual(['a', 'ghost', 'b']);
  });

  it('id hashes of another DuckDB version are computed again when a writer opens: an older event redelivered after an engine upgrade is still skipped', async () => {
    await commit(await batchWriter(), [page(1, [ev('a'), ev('b')])]);
    // What an engine whose hash() differs would find: neither the probe nor any id hashes as stored.
    await wh.run('update etl.event_ids set id_hash = id_hash + 1; update etl.event_id_hashing set probe_hash = probe_hash + 1');
    const r = await commit(await batchWriter(), [page(2, [ev('a'), ev('c')])]);
    expect([r.inserted, r.duplicates]).toEqual([1, 1]);
    expect(await ids()).toEqual(['a', 'b', 'c']);
    const probe = await wh.one<{ same: boolean }>(
      "select probe_hash = hash('recruit-etl etl.event_ids'::varchar) as same from etl.event_id_hashing",
    );
    expect(probe?.same).toBe(true);
    expect(await count("select count(*) as n from etl.event_ids where id_hash = hash('a')")).toBe(1);
  });

  it('the same id on another stream is not a repeat', async () => {
    await commit(await batchWriter('s1'), [page(1, [ev('a')])]);
    await commit(await batchWriter('s2'), [page(1, [ev('a')])]);
    expect(await count('select count(*) as n from raw.events')).toBe(2);
  });

  it("an id stored on another stream before the batch's positions is not a repeat either (the probe reads every stream's hashes)", async () => {
    await commit(await batchWriter('s1'), [page(1, [ev('x'), ev('a'), ev('y')])]);
    const s2 = await batchWriter('s2');
    await commit(s2, [page(1, [ev('b'), ev('c'), ev('d')])]);
    // 'a' is at position 2 of s1: below this batch's first position (4) on s2.
    const r = await commit(s2, [page(2, [ev('a'), ev('e'), ev('e')])]);
    expect([r.inserted, r.duplicates]).toEqual([2, 1]);
    expect(await ids('s2')).toEqual(['b', 'c', 'd', 'a', 'e']);
  });

  it('a lone surrogate in a message is quarantined: its place kept, a readable form stored, the text as sent beside it (the warehouse was bricked before)', async () => {
    const w = await batchWriter();
    const bad =
      '{"id":"q1","eventType":"v1.patient.statusChanged","publishedTime":"2026-01-05T08:00:00.123Z","message":{"patientStatus":"preScreening","referralSubjectId":"RS-1","note":"x\\ud800y"}}';
    const bad2 = '{"id":"q2","eventType":"v1.patient.statusChanged\\udfff","message":{"\\udbff":1}}';
    const r = await commit(w, [page(1, [ev('a'), bad, ev('b'), bad2])]);
    expect(r).toEqual({ inserted: 4, duplicates: 0, quarantined: 2, lastPosition: 4, pages: 1 });
    expect(await ids()).toEqual(['a', 'q1', 'b', 'q2']);
    expect(await count('select count(*) as n from raw.events where not json_valid(envelope) or not json_valid(message)')).toBe(0);
    const stored = await wh.all<{ env: string; status: string; note: string; t: string }>(
      "select envelope::varchar as env, message->>'patientStatus' as status, message->>'note' as note, event_type as t from raw.events where event_id in ('q1', 'q2') order by stream_position",
    );
    expect(stored[0]!.status).toBe('preScreening');
    expect(stored[0]!.note).toBe('x\ufffdy');
    expect(stored[1]!.t).toBe('v1.patient.statusChanged\ufffd');
    const q = await wh.all<{ p: bigint; id: string; body: string; reason: string }>(
      'select stream_position as p, event_id as id, body, reason from raw.quarantined_events order by stream_position',
    );
    expect(q.map((x) => [Number(x.p), x.id, x.body])).toEqual([
      [2, 'q1', bad],
      [4, 'q2', bad2],
    ]);
    expect(q[0]!.reason).toMatch(/lone surrogate/);
    // Redelivered as sent: recognised as the same event.
    const again = await commit(w, [page(2, [bad, ev('c')])]);
    expect([again.inserted, again.duplicates, again.quarantined]).toEqual([1, 1, 0]);
  });

  it('an event nested 50,000 deep with a lone surrogate is quarantined, and its redelivery with other white space skipped (a RangeError stopped the stream for good before)', async () => {
    const deep = (inner: string, space = '') => `{"a":${space}`.repeat(50_000) + inner + '}'.repeat(50_000);
    const text = (space = '') => `{"id":"deep","eventType":"v1.patient.statusChanged","message":${deep('"\\ud800"', space)}}`;
    const w = await batchWriter();
    const r = await commit(w, [page(1, [text(), ev('b')])]);
    expect([r.inserted, r.quarantined]).toEqual([2, 1]);
    const again = await commit(w, [page(2, [text(' '), ev('c')])]);
    expect([again.inserted, again.duplicates]).toEqual([1, 1]);
    expect(await ids()).toEqual(['deep', 'b', 'c']);
  });

  it('DuckDB refuses, of what JSON.parse accepts, only lone surrogate escapes: only an event with a backslash can be quarantined', async () => {
    const deep = (d: number) => '['.repeat(d) + ']'.repeat(d);
    const cases: [string, boolean][] = [
      ['{"a":"x\\ud800y"}', false],
      ['{"a":"\\udc00"}', false],
      ['{"\\udbff":1}', false],
      ['{"a":"\\ud83d\\ude00"}', true],
      ['{"a":"\\u0000"}', true],
      ['{"a":"\\uffff\\ufffe"}', true],
      ['{"a":1e400,"b":-0,"c":0.1e-400}', true],
      [`{"a":${deep(100_000)}}`, true],
      ['{"a":"\u2028\u00e9\ud83d\ude00"}', true],
    ];
    for (const [text, valid] of cases) {
      expect(() => JSON.parse(text)).not.toThrow();
      const r = await wh.one<{ ok: boolean }>('select json_valid(?) as ok', [text]);
      expect([text.slice(0, 40), r!.ok]).toEqual([text.slice(0, 40), valid]);
      if (!valid) expect(text).toContain('\\');
    }
  });

  it('creates the database file 0600 in a 0700 folder', async () => {
    await wh.checkpoint();
    expect(statSync(wh.path).mode & 0o777).toBe(0o600);
  });

  it(`writes raw.events in row groups of ${ROW_GROUP_SIZE} rows, under the catalog named after the file`, async () => {
    const w = await batchWriter();
    await commit(
      w,
      Array.from({ length: 20 }, (_, p) =>
        page(
          p + 1,
          Array.from({ length: 1000 }, (_, i) => ev(`e${p}-${i}`)),
        ),
      ),
    );
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
      if (name === 'memory.duckdb')
        expect(writable).toBe('recruit_etl_warehouse'); // "memory" is the session's own
      else expect(writable).toBe(readOnly);
    }
  });

  it('a writable open removes the spill folder a killed run left (<db>.tmp); a read-only open or another folder is left alone', async () => {
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
    expect((await prepareReadOnlyCopy(wh, 'run-2')).commit().target).toBe(copy);
    expect(existsSync(killed)).toBe(false);
    expect(existsSync(join(spill, 'duckdb_temp_storage_S32K-0.tmp'))).toBe(true);
    expect(existsSync(copy)).toBe(true);
  });
});
