/**
 * Loads batches into `raw.events` (`docs/ingest.md` "How a batch is written"), inside the
 * caller's transaction, together with the cursor update (exactly once; on any error the
 * caller rolls back).
 *
 * A batch arrives as a {@link BatchFile}: DuckDB's CSV reader loads it in one statement, on
 * DuckDB's own thread while the extract goes on fetching, at the positions after the stream's
 * last one. `message` and `envelope` are read as JSON there, so DuckDB's JSON reader judges
 * every event (the quarantine check); the id hashes go to `etl.event_ids` and are probed for
 * the repeat check; events to quarantine have their text as sent stored in
 * `raw.quarantined_events`. Why a file and not DuckDB's appender: `docs/ingest.md` "Two workers".
 *
 * @module
 */
import { WarehouseError } from '../errors.js';
import { failpoint } from '../failpoints.js';
import { listValue } from '@duckdb/node-api';
import { type BatchFile, batchFileReader, decodedField } from './BatchFile.js';
import type { Warehouse } from './Warehouse.js';

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

/** Options of {@link RawEventWriter.load}. */
export interface LoadOptions {
  streamId: string;
  /** The stream's last position before this batch; the file's row k takes `basePosition + k + 1`. */
  basePosition: number;
  file: BatchFile;
  runId: string;
  /** When the batch began to be written: `extracted_at` of its rows. */
  extractedAt: Date;
  /** Rows of the file stored in a quarantined form, with their text as sent for `raw.quarantined_events`. */
  quarantined?: readonly { row: number; id: string; reason: string; text: string }[];
}

/** What {@link RawEventWriter.load} wrote, for the caller's checks. */
export interface LoadResult {
  /** Rows inserted into raw.events (the file's rows). */
  inserted: number;
  /** Position of the last row (the new stream high-water mark). */
  lastPosition: number;
  /**
   * File rows whose `hash(event_id)` the stream already held, or an earlier row of the file:
   * maybe a redelivery, to be compared exactly (usually none).
   */
  repeats: number[];
}

/** DuckDB could not load a batch file; {@link RawEventWriter.refusedRows} tells whether its JSON was the reason. */
export class LoadFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('the batch file could not be loaded');
  }
}

/** The string whose DuckDB `hash()` is stored in `etl.event_id_hashing` beside the id hashes. */
const HASH_PROBE = 'recruit-etl etl.event_ids';

/** Writes batches into `raw.events`. One instance per open {@link Warehouse}. */
export class RawEventWriter {
  constructor(private readonly wh: Warehouse) {}

  /**
   * Make sure `etl.event_ids` holds this DuckDB's `hash()` of every id (docs/ingest.md
   * "Redeliveries"). DuckDB does not promise the function across versions, and hashes from
   * another version would let every redelivery of an older event through as a new event. When
   * the stored probe hash differs from this engine's, or none is stored beside existing
   * hashes, every hash is computed again from `raw.events`, in one transaction (once per
   * engine upgrade). Call outside a transaction.
   *
   * @returns whether the hashes were computed again
   * @throws {WarehouseError}
   */
  async ensureIdHashes(): Promise<boolean> {
    return this.wh.transaction(async () => {
      const row = await this.wh.one<{ engine: bigint; stored: bigint | null; hashes: bigint }>(
        `select hash('${HASH_PROBE}'::varchar) as engine, (select max(probe_hash) from etl.event_id_hashing) as stored,
                (select count(*) from etl.event_ids) as hashes`,
      );
      if (row === undefined || row.stored === row.engine) return false;
      const rehash = row.hashes > 0n;
      if (rehash) {
        await this.wh.run(
          'delete from etl.event_ids; insert into etl.event_ids select stream_id, hash(event_id), stream_position from raw.events',
        );
      }
      await this.wh.run(`delete from etl.event_id_hashing; insert into etl.event_id_hashing values (hash('${HASH_PROBE}'::varchar))`);
      return rehash;
    });
  }

  /**
   * Load `opts.file` into `raw.events` at contiguous positions, its id hashes into
   * `etl.event_ids`, the quarantined texts into `raw.quarantined_events`. Call inside
   * {@link Warehouse.transaction}.
   *
   * @returns what was written and the id hashes the caller must check before it commits
   * @throws {LoadFailed} DuckDB refused the file's insert (e.g. an envelope its JSON reader
   *   refuses): the transaction is aborted; roll back, then ask {@link refusedRows}
   * @throws {WarehouseError} DuckDB failed otherwise (exit 7)
   */
  async load(opts: LoadOptions): Promise<LoadResult> {
    const { streamId, basePosition, runId, file } = opts;
    file.flush();
    failpoint('extract.before-append');
    let loaded = 0;
    try {
      for (const part of file.paths) {
        loaded += await this.wh.runChanging(
          `insert into raw.events
           select $1, $2 + pos, ${decodedField('id')}, ${decodedField('type')}, try_cast(${decodedField('published')} as timestamptz),
                  message, envelope, $3, $4::timestamptz
           from ${batchFileReader([part], file.longestRow, true)}`,
          [streamId, BigInt(basePosition), runId, opts.extractedAt.toISOString()],
        );
      }
    } catch (err) {
      throw new LoadFailed(err);
    }
    // Every row of the file, or nothing: a file cut short must not move the cursor past events.
    if (loaded !== file.rows)
      throw new WarehouseError(`a batch file of ${file.rows} rows loaded ${loaded} rows`, {
        hint: 'check the disk; nothing of this batch was committed',
      });
    failpoint('extract.mid-append');
    for (const q of opts.quarantined ?? []) {
      await this.wh.run('insert into raw.quarantined_events values (?, ?, ?, ?, ?, ?, now())', [
        streamId,
        basePosition + q.row + 1,
        q.id,
        q.reason,
        q.text,
        runId,
      ]);
    }
    // The id hashes go to etl.event_ids, then two probes find the rows whose hash came before
    // (docs/ingest.md "Redeliveries"): they cost the batch plus one scan of the table's 8-byte
    // hashes, and hold nothing in memory between batches.
    await this.wh.run(
      `insert into etl.event_ids
       select stream_id, hash(event_id), stream_position from raw.events
       where stream_id = $1 and stream_position > $2`,
      [streamId, BigInt(basePosition)],
    );
    const first = basePosition + 1;
    const last = basePosition + file.rows;
    // Hashes of the batch stored before it. Every stream's are probed, and the few hits kept
    // only if on this stream: filtering the table's rows by stream_id, a text, cost more than
    // the probe itself (docs/ingest.md "Two workers").
    const [hitStreams, hitHashes] = await this.wh.columns<[string, bigint]>(
      `select o.stream_id, o.id_hash from etl.event_ids o
       where o.stream_position < ${first}
         and o.id_hash in (select id_hash from etl.event_ids where stream_id = $1 and stream_position between ${first} and ${last})`,
      [streamId],
    );
    // Integers read from the table: safe to write into the statement.
    const earlier = hitHashes.filter((_, k) => hitStreams[k] === streamId).map(String);
    const onStream = earlier.length === 0 ? '' : ` or id_hash in (${earlier.join(', ')})`;
    // Rows of the batch whose hash came before: on the stream, or earlier in the batch.
    const [repeats] = await this.wh.columns<[number]>(
      `select (stream_position - ${first})::integer from (
         select stream_position, id_hash, row_number() over (partition by id_hash order by stream_position) as nth
         from etl.event_ids where stream_id = $1 and stream_position between ${first} and ${last})
       where nth > 1${onStream}
       order by stream_position`,
      [streamId],
    );
    return { inserted: file.rows, lastPosition: basePosition + file.rows, repeats };
  }

  /**
   * The rows of `file` whose `envelope` or `message` DuckDB's JSON reader refuses (after a
   * {@link LoadFailed}, outside the aborted transaction). Empty when the load failed for
   * another reason.
   *
   * @throws {WarehouseError} DuckDB cannot even read the file (exit 7)
   */
  async refusedRows(file: BatchFile): Promise<number[]> {
    file.flush();
    const [rows] = await this.wh.columns<[number]>(
      `select (pos - 1)::integer from ${batchFileReader(file.paths, file.longestRow, false)}
       where try_cast(envelope as json) is null or (message is not null and try_cast(message as json) is null)`,
    );
    return rows;
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
   * The rows of `file` (ascending) whose `id` is one of `ids`, for the redelivery check of a
   * batch whose rows repeat an id hash.
   */
  async rowsWithIds(file: BatchFile, ids: readonly string[]): Promise<number[]> {
    file.flush();
    const [rows] = await this.wh.columns<[number]>(
      `select (pos - 1)::integer from ${batchFileReader(file.paths, file.longestRow, false)}
       where ${decodedField('id')} in (select unnest(?::varchar[])) order by pos`,
      [listValue([...ids])],
    );
    return rows;
  }
}
