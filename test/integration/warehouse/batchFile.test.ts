import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { statSync, truncateSync, writeFileSync } from 'node:fs';
import { WarehouseError } from '../../../src/errors.js';
import { RawEventWriter } from '../../../src/warehouse/RawEventWriter.js';
import { Warehouse, sqlString } from '../../../src/warehouse/Warehouse.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { BatchFile, batchFileReader, decodedField, PART_BYTES } from '../../../src/warehouse/BatchFile.js';
import type { PageEvents } from '../../../src/events/PageEvents.js';
import { readEventsPage } from '../../../src/upstream/page.js';
import { tempDir } from '../../helpers/tmp.js';

/** The events of a page whose `events` array holds `texts` as sent, read as the client reads it (body bytes as UTF-8). */
function eventsOf(texts: string[], sep = ','): PageEvents {
  const body = `{"events":[${texts.join(sep)}],"pagination":{"nextPage":"n","hasNextPage":false}}`;
  return readEventsPage(body, Buffer.from(body, 'utf8')).events;
}

interface Row {
  pos: bigint;
  id: string;
  type: string | null;
  published: string | null;
  message: string | null;
  envelope: string;
}

describe('BatchFile: a batch of events as rows DuckDB loads (docs/ingest.md "How a batch is written")', () => {
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  let n = 0;
  beforeEach(async () => {
    tmp = tempDir();
    wh = await Warehouse.open(join(tmp.dir, 'w.duckdb'));
  });
  afterEach(async () => {
    await wh.close();
    tmp.cleanup();
  });

  const fileOf = (...pages: PageEvents[]): BatchFile => {
    const f = BatchFile.create(join(tmp.dir, `${(n += 1)}.rows`));
    for (const p of pages) f.appendPage(p);
    f.flush();
    return f;
  };
  /** The rows as DuckDB reads them, fields decoded as the loader decodes them. */
  const read = (f: BatchFile, json = false): Promise<Row[]> =>
    wh.all<Row>(
      `select pos, ${decodedField('id')} as id, ${decodedField('type')} as type, ${decodedField('published')} as published,
              message::varchar as message, envelope::varchar as envelope
       from ${batchFileReader(f.paths, f.longestRow, json)} order by pos`,
    );

  it('DuckDB reads back exactly what the page reader read: escapes, control characters, empty strings, nulls, other JSON values', async () => {
    const texts = [
      '{"id":"plain","eventType":"v1.patient.created","publishedTime":"2026-01-05T08:00:00.123Z","message":{"a":1}}',
      '{"id":"e\\u0000\\u0001\\u001f\\n\\"\\\\\\/\\u00e9\\ud83d\\ude00","eventType":"t\\t","publishedTime":"\\u0032026","message":"a string"}',
      '{"id":"empty-type","eventType":"","publishedTime":"","message":null}',
      '{"id":"no-type","name":"v1.patient.contactAttempt.created","publishedTime":12345,"message":[1,{"b":null}]}',
      '{"id":"nothing"}',
      '{"id":"non-ascii é €","eventType":"v1.patient.created","message":{"note":"naïve 😀 \\u2028"},"extra":"日本"}',
    ];
    const events = eventsOf(texts);
    const rows = await read(fileOf(events));
    expect(rows.map((r) => Number(r.pos))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows.map((r) => r.id)).toEqual(events.all(events.id));
    expect(rows.map((r) => r.type)).toEqual(events.all(events.type));
    expect(rows.map((r) => r.published)).toEqual(events.all(events.publishedTime));
    expect(rows.map((r) => r.message)).toEqual(events.all(events.message));
    expect(rows.map((r) => r.envelope)).toEqual(texts);
    expect(rows[2]!.type).toBe(''); // an empty string is not NULL
    expect(rows[4]!.type).toBeNull();
    expect(rows[1]!.id).toBe('e\u0000\u0001\u001f\n"\\/\u00e9\ud83d\ude00');
  });

  it('a page with line breaks (pretty-printed JSON) keeps them in message, envelope and a publishedTime that is not a string', async () => {
    const body = JSON.stringify(
      {
        events: [
          { id: 'a', eventType: 't', publishedTime: { at: [1, 2] }, message: { x: 'y', z: [1, 2] } },
          { id: 'b', message: 'm' },
        ],
        pagination: { nextPage: 'n', hasNextPage: false },
      },
      null,
      '\t',
    ).replaceAll('\n', '\r\n');
    const events = readEventsPage(body, Buffer.from(body, 'utf8')).events;
    expect(events.hasLineBreak).toBe(true);
    const rows = await read(fileOf(events), true);
    expect(rows.map((r) => r.envelope)).toEqual(events.all(events.envelope));
    expect(rows.map((r) => r.message)).toEqual(events.all(events.message));
    expect(rows.map((r) => r.published)).toEqual(events.all(events.publishedTime));
    expect(rows[0]!.envelope).toContain('\r\n\t');
  });

  it('positions run on across pages; readRow gives back the texts of any row', async () => {
    const p1 = eventsOf(['{"id":"a","eventType":"t","message":{"k":"\\u0000"}}', '{"id":"b\\u0001"}']);
    const p2 = eventsOf(['{"id":"c","eventType":"","publishedTime":"x"}']);
    const f = fileOf(p1, p2);
    expect(f.rows).toBe(3);
    expect((await read(f)).map((r) => [Number(r.pos), r.id])).toEqual([
      [1, 'a'],
      [2, 'b\u0001'],
      [3, 'c'],
    ]);
    expect(f.readRow(0)).toEqual({
      id: 'a',
      type: 't',
      publishedTime: null,
      message: '{"k":"\\u0000"}',
      envelope: '{"id":"a","eventType":"t","message":{"k":"\\u0000"}}',
    });
    expect(f.readRow(1)).toEqual({ id: 'b\u0001', type: null, publishedTime: null, message: null, envelope: '{"id":"b\\u0001"}' });
    expect(f.readRow(2)).toEqual({
      id: 'c',
      type: '',
      publishedTime: 'x',
      message: null,
      envelope: '{"id":"c","eventType":"","publishedTime":"x"}',
    });
  });

  it('appendFrom renumbers: rows left out, rows replaced by another form (their id and publishedTime kept as sent)', async () => {
    const f = fileOf(
      eventsOf([
        '{"id":"a"}',
        '{"id":"b\\n","publishedTime":"2026-01-05T08:00:00Z","message":{"n":"\\ud800"}}',
        '{"id":"c"}',
        '{"id":"d"}',
      ]),
    );
    const g = BatchFile.create(join(tmp.dir, 'again.rows'));
    const rowsOf = g.appendFrom(f, 3, (k) =>
      k === 0
        ? 'skip'
        : k === 1
          ? { envelope: '{"id":"b\\n","message":{"n":"\ufffd"}}', message: '{"n":"\ufffd"}', type: 'x\u0007' }
          : 'keep',
    );
    g.flush();
    expect([...rowsOf]).toEqual([1, 2]);
    const rows = await read(g, true);
    expect(rows.map((r) => [Number(r.pos), r.id, r.type, r.published, r.message])).toEqual([
      [1, 'b\n', 'x\u0007', '2026-01-05T08:00:00Z', '{"n":"\ufffd"}'],
      [2, 'c', null, null, null],
    ]);
  });

  it('a row of tens of megabytes is read whole', async () => {
    const big = `{"id":"big","eventType":"t","message":{"pad":"${'x'.repeat(12_000_000)}"}}`;
    const f = fileOf(eventsOf([big, '{"id":"small"}']));
    expect(f.longestRow).toBeGreaterThan(24_000_000);
    const rows = await wh.all<{ id: string; n: bigint }>(
      `select id, length(envelope) as n from ${batchFileReader(f.paths, f.longestRow, true)} order by pos`,
    );
    expect(rows.map((r) => [r.id, Number(r.n)])).toEqual([
      ['big', big.length],
      ['small', 14],
    ]);
  });

  it('a file with a row over 8 KiB is cut into parts of about 4 MiB at row boundaries: positions run on, every row reads back', async () => {
    const wide = (i: number) => `{"id":"w${i}","eventType":"t","message":{"pad":"${String(i).repeat(200_000)}"}}`;
    const f = fileOf(eventsOf([...Array.from({ length: 30 }, (_, i) => wide(i)), '{"id":"last"}']));
    expect(f.paths.length).toBeGreaterThan(2);
    expect(f.paths[0]).toBe(f.path);
    expect(f.paths.every((p) => statSync(p).size <= PART_BYTES + f.longestRow)).toBe(true);
    const rows = await read(f, true);
    expect(rows.map((r) => [Number(r.pos), r.id])).toEqual([...Array.from({ length: 30 }, (_, i) => [i + 1, `w${i}`]), [31, 'last']]);
    expect(f.readRow(17).id).toBe('w17');
    expect(f.readRow(30).envelope).toBe('{"id":"last"}');
    const narrow = fileOf(eventsOf(Array.from({ length: 20_000 }, (_, i) => `{"id":"n${i}","message":{"x":"${'y'.repeat(300)}"}}`)));
    expect(narrow.bytes).toBeGreaterThan(PART_BYTES);
    expect(narrow.paths).toEqual([narrow.path]);
  });

  it('a batch file that cannot be written is a warehouse failure (exit 7) naming the file; a file cut short loads nothing', async () => {
    const err = (() => {
      try {
        BatchFile.create(join(tmp.dir, 'no-such-folder', '1.rows'));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(WarehouseError);
    expect((err as Error).message).toMatch(/cannot write the batch file .*1\.rows: ENOENT/);
    // Cut after its first row: the load refuses to commit part of a batch.
    const f = fileOf(eventsOf(['{"id":"a"}', '{"id":"b"}', '{"id":"c"}']));
    truncateSync(f.path, f.bytes - 2 * '3\x1fc\x1f\x1f\x1f\x1f{"id":"c"}\n'.length);
    await wh.migrate();
    const writer = new RawEventWriter(wh);
    await expect(
      wh.transaction(() => writer.load({ streamId: 's', basePosition: 0, file: f, runId: 'r', extractedAt: new Date() })),
    ).rejects.toThrow(/a batch file of 3 rows loaded 1 rows/);
    expect(Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))!.n)).toBe(0);
  });

  it('is created 0600 and removed with remove()', () => {
    const f = fileOf(eventsOf(['{"id":"a"}']));
    expect(statSync(f.path).mode & 0o777).toBe(0o600);
    f.remove();
    f.remove();
    expect(() => statSync(f.path)).toThrow();
  });

  // DuckDB's errors quote the input they failed on, which may be event payload: neither the
  // message nor, with --verbose, the causes and stacks may carry it (docs/security.md).
  describe('a DuckDB error quotes no input, with --verbose either (a CSV error printed a whole batch row in the cause before)', () => {
    const CANARY = 'RS-CANARY-4711';
    const failure = async (sql: string) => {
      const err = await wh.run(sql).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      return describeFailure(err, true).text;
    };

    it('a conversion error (Input: …)', async () => {
      const text = await failure(`select ${sqlString(`{"referralSubjectId": "${CANARY}", `)}::json`);
      expect(text).toMatch(/DuckDB failed while running SQL: .*JSON/);
      expect(text).toMatch(/caused by: Error: .*JSON/);
      expect(text).not.toContain(CANARY);
    });

    it('a CSV error (Original Line: …), its second line and after', async () => {
      const file = join(tmp.dir, 'rows.csv');
      writeFileSync(file, `1,a\n2,b,{"referralSubjectId":"${CANARY}"}\n`);
      const text = await failure(
        `select * from read_csv(${sqlString(file)}, auto_detect = false, delim = ',', quote = '', escape = '', header = false, columns = {'a': 'integer', 'b': 'varchar'}, strict_mode = true)`,
      );
      expect(text).toMatch(/CSV Error/);
      expect(text).not.toContain(CANARY);
    });
  });
});
