/**
 * Appends events to `raw.events` (`docs/ingest.md` "How a batch is written"), inside the
 * caller's transaction, together with the cursor update (exactly once; on any error the
 * caller rolls back).
 *
 * The events arrive as read by `readEventsPage` (texts as sent). DuckDB's appender writes
 * them at contiguous positions, their id hashes go to `etl.event_ids`, events to quarantine
 * go in their readable form with their text as sent in `raw.quarantined_events`, and one
 * query over the new rows returns what the caller must check: each row's id hash (for the
 * repeat check) and whether DuckDB's JSON reader accepts its envelope (the quarantine check).
 * Why the appender and not DuckDB's own JSON reader: measured in `docs/performance.md`.
 *
 * @module
 */
import { type DuckDBAppender, DuckDBTimestampTZValue, listValue } from '@duckdb/node-api';
import { failpoint } from '../failpoints.js';
import type { PageEvents } from '../upstream/page.js';
import type { Warehouse } from './Warehouse.js';

/** One page of a batch: its events as read, and its 1-based number in the run (for messages). */
export interface PageToWrite {
  events: PageEvents;
  pageNumber: number;
}

/** How a quarantined event is stored (`docs/ingest.md` "Quarantine"). */
export interface QuarantinedEvent {
  /** The envelope stored in `raw.events`: valid JSON that every model reads. */
  envelope: string;
  /** Its `message`, or null. */
  message: string | null;
  /** `event_type`, or null. */
  type: string | null;
  /** Why: a reason from our own vocabulary, never text of the event. */
  reason: string;
}

/** Options of {@link RawEventWriter.append}. */
export interface AppendOptions {
  streamId: string;
  /** The stream's last position before this batch; rows take `basePosition + 1 …`. */
  basePosition: number;
  pages: readonly PageToWrite[];
  runId: string;
  /** Indexes in the batch (0-based over all its events) not to write: redeliveries. */
  skip?: ReadonlySet<number>;
  /** Indexes in the batch to write in a quarantined form; the text as sent goes beside it. */
  quarantine?: ReadonlyMap<number, QuarantinedEvent>;
}

/** What {@link RawEventWriter.append} wrote, for the caller's checks. */
export interface AppendResult {
  /** Rows inserted into raw.events. */
  inserted: number;
  /** Position of the last row (the new stream high-water mark). */
  lastPosition: number;
  /** Batch index of each inserted row, in position order. */
  indexOf: Int32Array;
  /** High and low 32 bits of each inserted row's `hash(event_id)`, in position order. */
  hashHi: Uint32Array;
  hashLo: Uint32Array;
  /** Batch indexes whose stored envelope DuckDB's JSON reader refuses. */
  refused: number[];
}

/**
 * `publishedTime` texts that the appender's own cast reads exactly as `TRY_CAST(… AS
 * TIMESTAMPTZ)` does: ISO 8601 in UTC (`Z`), at most microseconds. The appender ignores a
 * UTC offset (measured: `+02:00` was read as UTC), so any other text is cast by DuckDB in SQL.
 */
const UTC_ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z$/;

/** No `publishedTime` text to look up (the usual page: every text is UTC_ISO_TIMESTAMP). */
const NO_TIMES: ReadonlyMap<string, DuckDBTimestampTZValue | null> = new Map();

/** The distinct `publishedTime` texts of a page that {@link UTC_ISO_TIMESTAMP} does not cover. */
function otherPublishedTimes(times: readonly (string | null)[]): Set<string> {
  const texts = new Set<string>();
  for (const t of times) if (t !== null && !UTC_ISO_TIMESTAMP.test(t)) texts.add(t);
  return texts;
}

/** Append a text value, or NULL. */
function appendText(appender: DuckDBAppender, value: string | null | undefined): void {
  if (value === null || value === undefined) appender.appendNull();
  else appender.appendVarchar(value);
}

const NO_SKIP: ReadonlySet<number> = new Set();
const NO_QUARANTINE: ReadonlyMap<number, QuarantinedEvent> = new Map();

/** Writes batches into `raw.events`. One instance per open {@link Warehouse}. */
export class RawEventWriter {
  constructor(private readonly wh: Warehouse) {}

  /**
   * Append the events of `opts.pages` (in order, minus `skip`) at contiguous positions, their
   * id hashes to `etl.event_ids`, quarantined texts to `raw.quarantined_events`. Call inside
   * {@link Warehouse.transaction}.
   *
   * @returns what was written and what the caller must check before it commits
   * @throws {WarehouseError} DuckDB failed (exit 7)
   */
  async append(opts: AppendOptions): Promise<AppendResult> {
    const { streamId, basePosition, runId } = opts;
    const skip = opts.skip ?? NO_SKIP;
    const quarantine = opts.quarantine ?? NO_QUARANTINE;
    const extractedAt = new Date().toISOString();
    const total = opts.pages.reduce((n, p) => n + p.events.count, 0);
    const indexOf = new Int32Array(total - skip.size);
    const quarantined: { position: number; id: string; reason: string; text: string }[] = [];
    failpoint('extract.before-append');
    // A page at a time: appended and flushed into the transaction's storage.
    let appender: DuckDBAppender | undefined;
    let position = basePosition;
    let index = 0;
    try {
      for (const page of opts.pages) {
        const cols = page.events;
        const times = cols.all(cols.publishedTime);
        let otherTimes = NO_TIMES;
        const texts = otherPublishedTimes(times);
        if (texts.size > 0) {
          // A query on the connection: with no appender open on it.
          const open = appender;
          appender = undefined;
          open?.closeSync();
          otherTimes = await this.castPublishedTimes(texts);
        }
        appender ??= await this.wh.connection().createAppender('events', 'raw');
        const n = cols.count;
        for (let i = 0; i < n; i += 1, index += 1) {
          if (skip.has(index)) continue;
          indexOf[position - basePosition] = index;
          position += 1;
          const q = quarantine.get(index);
          const id = cols.id(i);
          if (q !== undefined) quarantined.push({ position, id, reason: q.reason, text: cols.envelope(i) });
          appender.appendVarchar(streamId);
          appender.appendBigInt(BigInt(position));
          appender.appendVarchar(id);
          appendText(appender, q === undefined ? cols.type(i) : q.type);
          const published = times[i];
          if (published === null || published === undefined || (q !== undefined && !published.isWellFormed())) appender.appendNull();
          else if (UTC_ISO_TIMESTAMP.test(published)) {
            try {
              appender.appendVarchar(published);
            } catch {
              appender.appendNull(); // e.g. 2026-02-30T…Z: TRY_CAST gives NULL too
            }
          } else {
            const value = otherTimes.get(published);
            if (value === null || value === undefined) appender.appendNull();
            else appender.appendTimestampTZ(value);
          }
          appendText(appender, q === undefined ? cols.message(i) : q.message);
          appender.appendVarchar(q === undefined ? cols.envelope(i) : q.envelope);
          appender.appendVarchar(runId);
          appender.appendVarchar(extractedAt);
          appender.endRow();
        }
        appender.flushSync();
      }
      const last = appender;
      appender = undefined;
      last?.closeSync();
    } catch (err) {
      try {
        appender?.closeSync();
      } catch {
        // the transaction is rolled back anyway
      }
      throw err;
    }
    failpoint('extract.mid-append');
    for (const q of quarantined) {
      await this.wh.run('insert into raw.quarantined_events values (?, ?, ?, ?, ?, ?, now())', [streamId, q.position, q.id, q.reason, q.text, runId]);
    }
    // The id hashes go to etl.event_ids and come back in the same statement. No ORDER BY (a
    // sort of the batch under the extract's small memory cap): each row says where it goes.
    const [at, hi, lo] = await this.wh.columns<[number, number, number]>(
      `insert into etl.event_ids
       select stream_id, hash(event_id), stream_position from raw.events
       where stream_id = ? and stream_position > ?
       returning (stream_position - ${basePosition + 1})::integer, (id_hash >> 32)::uinteger, (id_hash & 4294967295::ubigint)::uinteger`,
      [streamId, basePosition],
    );
    const inserted = position - basePosition;
    const hashHi = new Uint32Array(inserted);
    const hashLo = new Uint32Array(inserted);
    for (let r = 0; r < at.length; r += 1) {
      const k = at[r]!;
      hashHi[k] = hi[r]!;
      hashLo[k] = lo[r]!;
    }
    // DuckDB's JSON reader judges every envelope that holds an escape: the only texts that
    // JSON.parse accepts and DuckDB refuses are escapes (docs/ingest.md "Quarantine").
    let refused: number[] = [];
    if (opts.pages.some((p) => p.events.hasEscape)) {
      const [bad] = await this.wh.columns<[number]>(
        `select (stream_position - ?)::integer from raw.events
         where stream_id = ? and stream_position > ? and contains(envelope::varchar, '\\') and not json_valid(envelope)`,
        [basePosition + 1, streamId, basePosition],
      );
      refused = bad.map((k) => indexOf[k]!);
    }
    return { inserted, lastPosition: position, indexOf, hashHi, hashLo, refused };
  }

  /**
   * The stored envelope (the text as sent for a quarantined event) of each `id` on the
   * stream, for the redelivery check (`docs/ingest.md` "Redeliveries"). Scans the stream's ids:
   * only for the rare batch with a repeated id hash.
   */
  async storedEnvelopes(streamId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.wh.all<{ event_id: string; envelope: string }>(
      `select r.event_id, coalesce(q.body, r.envelope::varchar) as envelope
       from raw.events r left join raw.quarantined_events q using (stream_id, stream_position)
       where r.stream_id = ? and r.event_id in (select unnest(?::varchar[]))`,
      [streamId, listValue([...ids])],
    );
    return new Map(rows.map((r) => [r.event_id, r.envelope]));
  }

  /**
   * Every id hash on the stream as high and low 32-bit halves, a chunk at a time (to fill
   * the extract's in-memory set at its start).
   */
  async *idHashes(streamId: string): AsyncGenerator<[number[], number[]]> {
    yield* this.wh.streamColumns<[number, number]>(
      `select (id_hash >> 32)::uinteger, (id_hash & 4294967295::ubigint)::uinteger from etl.event_ids where stream_id = ?`,
      [streamId],
    );
  }

  /**
   * `TRY_CAST(t AS TIMESTAMPTZ)` of each text (see {@link otherPublishedTimes}), as appender
   * values: microseconds since the epoch, ±infinity, or null when unparseable. One query, the
   * texts bound as one list.
   */
  private async castPublishedTimes(texts: ReadonlySet<string>): Promise<Map<string, DuckDBTimestampTZValue | null>> {
    const out = new Map<string, DuckDBTimestampTZValue | null>();
    // A text that is not valid Unicode cannot be bound; TRY_CAST would give null anyway.
    const list = [...texts].filter((t) => t.isWellFormed());
    for (const t of texts) out.set(t, null);
    if (list.length === 0) return out;
    const rows = await this.wh.all<{ i: bigint | number; us: bigint | number | null; inf: number }>(
      `select i, epoch_us(ts) as us, case when isinf(ts) then (case when ts > 'epoch'::timestamptz then 1 else -1 end) else 0 end as inf
       from (select generate_subscripts($1::varchar[], 1) as i, try_cast(unnest($1::varchar[]) as timestamptz) as ts)`,
      [listValue(list)],
    );
    for (const r of rows) {
      const text = list[Number(r.i) - 1]!;
      if (r.inf === 1) out.set(text, DuckDBTimestampTZValue.PosInf);
      else if (r.inf === -1) out.set(text, DuckDBTimestampTZValue.NegInf);
      else out.set(text, r.us === null ? null : new DuckDBTimestampTZValue(BigInt(r.us)));
    }
    return out;
  }
}
