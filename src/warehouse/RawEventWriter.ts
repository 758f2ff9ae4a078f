/**
 * Appends pages of events to `raw.events` (DESIGN.md "Warehouse contract").
 *
 * Per batch: {@link splitEvents} slices each page body into its events as sent (no
 * per-event parse or stringify), the appender loads them as text into a temporary staging
 * table, the exactly-once check probes `etl.event_ids` (hashes of the ids already on the
 * stream), and one set-based `INSERT … SELECT` writes the rows at contiguous positions.
 * Must be called inside the caller's transaction, together with the cursor update
 * (DESIGN.md guarantee 1); on any error the caller rolls back.
 *
 * @module
 */
import { UpstreamContractError } from '../errors.js';
import { failpoint } from '../failpoints.js';
import { emptyColumns, splitEvents } from './splitEvents.js';
import type { Warehouse } from './Warehouse.js';

/** One fetched page to append: its body exactly as received and where it came from. */
export interface PageToWrite {
  /** The response body of the page (a JSON object with an `events` array), already validated. */
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
  constructor(private readonly wh: Warehouse) {}

  /**
   * An empty staging table: created when missing (also after a rolled-back batch took its
   * creation with it), emptied otherwise; never rebuilt per batch.
   */
  private async prepare(): Promise<void> {
    await this.wh.run(
      `create temp table if not exists _raw_stage (
         ord integer, page integer, event_id varchar, event_type varchar,
         published_time varchar, message varchar, envelope varchar)`,
    );
    await this.wh.run('truncate _raw_stage');
  }

  /**
   * Append the events of `pages` (in order) to stream `streamId` at positions
   * `basePosition + 1 …`, contiguous. An event whose id is already on the stream (in an
   * earlier batch or earlier in this one) with the same envelope is skipped (delivered
   * once, the first kept); the same id with another envelope breaks the stream's
   * immutability (spec §6.1).
   *
   * Call inside {@link Warehouse.transaction}.
   *
   * @throws {UpstreamContractError} an event id re-sent with a different payload, or an event
   *   without an id (exit 6); the message names the stream and the page
   * @throws {WarehouseError} DuckDB failed (exit 7)
   */
  async appendPages(
    streamId: string,
    basePosition: number,
    pages: readonly PageToWrite[],
    runId: string,
    streamLabel = streamId,
  ): Promise<AppendResult> {
    const cols = emptyColumns();
    const pageOf: number[] = [];
    for (const page of pages) {
      const n = splitEvents(page.bodyText, cols);
      for (let k = 0; k < n; k += 1) pageOf.push(page.pageNumber);
    }
    const total = cols.envelope.length;
    // An empty poll takes the same path (and failpoints) as any batch: it commits the cursor.
    await this.prepare();
    failpoint('extract.before-append');
    const appender = await this.wh.connection().createAppender('_raw_stage', 'main', 'temp');
    try {
      for (let i = 0; i < total; i += 1) {
        const id = cols.id[i];
        if (id === null || id === undefined || id === '') {
          throw new UpstreamContractError(`stream ${streamLabel}, page ${pageOf[i]}: an event has no id (spec §2.4)`);
        }
        appender.appendInteger(i);
        appender.appendInteger(pageOf[i]!);
        appender.appendVarchar(id);
        const type = cols.type[i];
        if (type === null || type === undefined) appender.appendNull();
        else appender.appendVarchar(type);
        const published = cols.publishedTime[i];
        if (published === null || published === undefined) appender.appendNull();
        else appender.appendVarchar(published);
        const message = cols.message[i];
        if (message === null || message === undefined) appender.appendNull();
        else appender.appendVarchar(message);
        appender.appendVarchar(cols.envelope[i]!);
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
    failpoint('extract.mid-append');

    const skip = await this.findDuplicates(streamId, streamLabel);
    const inserted = total - skip.length;
    const position = skip.length === 0 ? '?::bigint + ord + 1' : '?::bigint + row_number() over (order by ord)';
    const where = skip.length === 0 ? '' : `where ord not in (${skip.join(',')})`;
    await this.wh.run(
      `insert into raw.events
       select ?::varchar, ${position}, event_id, event_type, try_cast(published_time as timestamptz),
              message::json, envelope::json, ?::varchar, now()
       from _raw_stage ${where}`,
      [streamId, basePosition, runId],
    );
    await this.wh.run(
      `insert into etl.event_ids select ?::varchar, hash(event_id), ${position} from _raw_stage ${where}`,
      [streamId, basePosition],
    );
    return { inserted, duplicates: skip.length, lastPosition: basePosition + inserted };
  }

  /**
   * The staged rows to skip (`ord`s): ids already on the stream, or repeated earlier in the
   * batch, with the same envelope. Candidates come from a probe of the 64-bit id hashes;
   * only those are compared exactly.
   *
   * @throws {UpstreamContractError} an id re-sent with another envelope
   */
  private async findDuplicates(streamId: string, streamLabel: string): Promise<number[]> {
    const candidates = await this.wh.all<{ ord: number; pos: bigint | null }>(
      `select s.ord, x.stream_position as pos
       from _raw_stage s join etl.event_ids x on x.stream_id = ? and x.id_hash = hash(s.event_id)
       union all
       select ord, null from _raw_stage qualify count(*) over (partition by event_id) > 1`,
      [streamId],
    );
    if (candidates.length === 0) return [];
    const positions = [...new Set(candidates.filter((c) => c.pos !== null).map((c) => Number(c.pos)))];
    const checked = await this.wh.all<{ ord: number; page: number; same: boolean }>(
      `with repeated as (
         select ord, page, envelope,
                first(envelope) over (partition by event_id order by ord) as first_envelope,
                row_number() over (partition by event_id order by ord) as nth
         from _raw_stage
         qualify count(*) over (partition by event_id) > 1
       )
       select ord, page, json(envelope)::varchar = json(first_envelope)::varchar as same from repeated where nth > 1
       union all
       select s.ord, s.page, json(s.envelope)::varchar = json(r.envelope)::varchar as same
       from _raw_stage s join raw.events r on r.event_id = s.event_id
       where r.stream_id = ? and r.stream_position in (${positions.length > 0 ? positions.join(',') : 'null'})
       order by ord`,
      [streamId],
    );
    const conflict = checked.find((c) => c.same !== true);
    if (conflict) {
      const n = checked.filter((c) => c.same !== true).length;
      throw new UpstreamContractError(
        `stream ${streamLabel}, page ${conflict.page}: ${n} event id(s) were sent again with a different payload; the stream is immutable (spec §6.1)`,
        { hint: 'report it to the API provider; nothing of this batch was committed, earlier batches are kept' },
      );
    }
    return [...new Set(checked.map((c) => c.ord))];
  }
}
