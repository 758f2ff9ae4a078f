/**
 * Appends pages of events to `raw.events` (DESIGN.md "Warehouse contract").
 *
 * The page bodies go to DuckDB as they were received; DuckDB's JSON functions split them
 * into events, so no per-event serialisation happens in JavaScript. Must be called inside
 * the caller's transaction, together with the cursor update (DESIGN.md guarantee 1).
 *
 * @module
 */
import { UpstreamContractError } from '../errors.js';
import type { Warehouse } from './Warehouse.js';
import { failpoint } from '../failpoints.js';

/** One fetched page to append: its body exactly as received and where it came from. */
export interface PageToWrite {
  /** The response body of the page (a JSON object with an `events` array). */
  bodyText: string;
  /** 1-based page number within this run (for error messages). */
  pageNumber: number;
}

/** What {@link RawEventWriter.appendPages} did. */
export interface AppendResult {
  /** Rows inserted into raw.events. */
  inserted: number;
  /** Events skipped because the same id with the same envelope was already on the stream. */
  duplicates: number;
  /** Position of the last inserted row (the new stream high-water mark). */
  lastPosition: number;
}

/**
 * Writes pages into `raw.events`. One instance per open {@link Warehouse}.
 */
export class RawEventWriter {
  private prepared = false;

  constructor(private readonly wh: Warehouse) {}

  private async prepare(): Promise<void> {
    if (this.prepared) return;
    await this.wh.run('create temp table if not exists _page_bodies (seq integer, body varchar)');
    this.prepared = true;
  }

  /**
   * Append the events of `pages` (in order) to stream `streamId` at positions
   * `basePosition + 1 …`, contiguous. An event whose id is already on the stream (in an
   * earlier batch or earlier in this one) with the same envelope is skipped (delivered
   * once); the same id with another envelope breaks the stream's immutability (spec §6.1).
   *
   * Call inside {@link Warehouse.transaction}.
   *
   * @throws {UpstreamContractError} an event id re-sent with a different payload (exit 6)
   * @throws {WarehouseError} DuckDB failed (exit 7)
   */
  async appendPages(
    streamId: string,
    basePosition: number,
    pages: readonly PageToWrite[],
    runId: string,
    streamLabel = streamId,
  ): Promise<AppendResult> {
    if (pages.length === 0) return { inserted: 0, duplicates: 0, lastPosition: basePosition };
    await this.prepare();
    failpoint('extract.before-append');
    await this.wh.run('delete from _page_bodies');
    const appender = await this.wh.connection().createAppender('_page_bodies', 'main', 'temp');
    try {
      for (const [i, page] of pages.entries()) {
        appender.appendInteger(i);
        appender.appendVarchar(page.bodyText);
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
    failpoint('extract.mid-append');
    await this.wh.run(`
      create or replace temp table _batch as
      select seq, i, ev->>'id' as event_id, ev as envelope
      from (
        select seq, unnest(evs) as ev, generate_subscripts(evs, 1) as i
        from (select seq, (body::json->'events')::json[] as evs from _page_bodies)
      )`);
    const conflicts = await this.wh.all<{ seq: number; n: bigint }>(
      `with mine as (
         select seq, event_id, envelope from _batch
       ),
       within_batch as (
         -- the page that re-sent an id with another payload, not the page of the original
         select seq, event_id from (
           select seq, event_id, json(envelope)::varchar as e,
                  first_value(json(envelope)::varchar) over (partition by event_id order by seq, i) as first_e
           from _batch
         ) where e <> first_e
       ),
       across as (
         select m.seq, m.event_id from mine m
         join raw.events r on r.stream_id = ? and r.event_id = m.event_id
         where json(r.envelope)::varchar <> json(m.envelope)::varchar
       )
       select seq, count(*) as n from (select * from within_batch union all select * from across) group by seq order by seq limit 1`,
      [streamId],
    );
    const conflict = conflicts[0];
    if (conflict) {
      const page = pages[conflict.seq]?.pageNumber ?? conflict.seq + 1;
      throw new UpstreamContractError(
        `stream ${streamLabel}, page ${page}: ${conflict.n} event id(s) were sent again with a different payload; the stream is immutable (spec §6.1)`,
        { hint: 'report it to the API provider; nothing of this batch was committed, earlier batches are kept' },
      );
    }
    await this.wh.run(
      `create or replace temp table _fresh as
       select b.* from (
         select *, row_number() over (partition by event_id order by seq, i) as dup from _batch
       ) b
       where b.dup = 1
         and not exists (select 1 from raw.events r where r.stream_id = ? and r.event_id = b.event_id)`,
      [streamId],
    );
    const counts = await this.wh.all<{ total: bigint; fresh: bigint }>(
      'select (select count(*) from _batch) as total, (select count(*) from _fresh) as fresh',
    );
    await this.wh.run(
      `insert into raw.events
       select ?::varchar, ?::bigint + row_number() over (order by seq, i), event_id,
              coalesce(envelope->>'eventType', envelope->>'name'),
              try_cast(envelope->>'publishedTime' as timestamptz),
              envelope->'message', envelope, ?::varchar, now()
       from _fresh`,
      [streamId, basePosition, runId],
    );
    const total = Number(counts[0]?.total ?? 0n);
    const inserted = Number(counts[0]?.fresh ?? 0n);
    return { inserted, duplicates: total - inserted, lastPosition: basePosition + inserted };
  }
}
