/**
 * Commits batches of pages to one stream (`docs/ingest.md` "How a batch is written"): the
 * events and the cursor after the batch's last page in one transaction (exactly once), the
 * repeat check against the stream's id hashes held in memory ({@link SeenIds}), redeliveries
 * compared by JSON value, and events DuckDB cannot store as JSON quarantined.
 *
 * A batch is written once in the usual case. When the checks find something, the transaction
 * is rolled back and the batch written again with what they found: redeliveries skipped,
 * refused events in their quarantined form (repaired first, minimal if still refused).
 *
 * @module
 */
import { UpstreamContractError, type EtlErrorOptions } from '../errors.js';
import { failpoint } from '../failpoints.js';
import type { Logger } from '../log/logger.js';
import type { PageEvents } from '../upstream/page.js';
import { type AppendResult, type QuarantinedEvent, RawEventWriter } from '../warehouse/RawEventWriter.js';
import type { StreamStore } from '../warehouse/StreamStore.js';
import { ROW_GROUP_SIZE, type Warehouse } from '../warehouse/Warehouse.js';
import { BATCH_MAX_BYTES } from './batches.js';
import { quarantinedForm } from './quarantine.js';
import { sameJson } from './sameJson.js';
import { SeenIds } from './SeenIds.js';

/** One fetched page waiting for its commit. */
export interface FetchedPage {
  events: PageEvents;
  /** 1-based page number in the run (messages). */
  pageNumber: number;
  /** The page's `nextPage` and `hasNextPage`: the cursor to store once it is committed. */
  nextPage: string;
  hasNextPage: boolean;
  /** Body size in bytes. */
  bytes: number;
}

/** What one committed batch added. */
export interface BatchResult {
  inserted: number;
  /** Redeliveries skipped: an id already on the stream (or earlier in the batch) with the same JSON value. */
  duplicates: number;
  quarantined: number;
  lastPosition: number;
}

/**
 * A page of the batch broke the contract (exit 6): `pageNumber` tells the caller which pages
 * before it are valid and still committed (nothing of that page is).
 */
export class PageContractError extends UpstreamContractError {
  constructor(
    message: string,
    /** The 1-based page number (within the run) that broke the contract. */
    readonly pageNumber: number,
    options: EtlErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** Rolls a batch back to be written again with what the checks found. */
class WriteAgain extends Error {
  constructor(readonly refused: readonly number[], readonly hits: readonly number[]) {
    super('write the batch again');
  }
}

/** Writes of one batch at most: the usual one, then quarantine repaired, minimal, redeliveries. */
const MAX_WRITES = 5;

/** What the checks of a batch found so far, by index in the batch. */
interface Checks {
  /** Redeliveries, not written. */
  skip: Set<number>;
  /** Events written in their quarantined form. */
  quarantine: Map<number, QuarantinedEvent & { level: 'repaired' | 'minimal' }>;
  /** Events whose id hash hit but whose id is not on the stream (a fingerprint collision). */
  distinct: Set<number>;
}

/** Options of {@link BatchWriter.open}. */
export interface BatchWriterOptions {
  wh: Warehouse;
  store: StreamStore;
  streamId: string;
  /** Rows on the stream before the first batch (its last stream_position). */
  position: number;
  runId: string;
  logger: Logger;
  /**
   * DuckDB settings for a batch that DuckDB holds in memory: fewer rows than a row group (kept
   * as WAL data until a checkpoint), more bytes than the byte budget, or written again after
   * its checks (read whole). Other batches run under the session's.
   */
  heldBatchSettings?: Readonly<Record<string, string>>;
}

export class BatchWriter {
  private readonly writer: RawEventWriter;
  /** The stream's last committed position. */
  position: number;

  private constructor(
    private readonly opts: BatchWriterOptions,
    private seen: SeenIds,
  ) {
    this.writer = new RawEventWriter(opts.wh);
    this.position = opts.position;
  }

  /** Load the stream's id hashes (one pass over `etl.event_ids` for the stream). */
  static async open(opts: BatchWriterOptions): Promise<BatchWriter> {
    const writer = new RawEventWriter(opts.wh);
    return new BatchWriter(opts, await SeenIds.load(writer.idHashes(opts.streamId), opts.position));
  }

  /**
   * Commit `pages` with the cursor after the last one.
   *
   * @throws {PageContractError} an id sent again with another JSON value (docs/upstream.md "Stream properties"): the pages
   *   before its page are committed first, with their cursor
   * @throws {WarehouseError} DuckDB failed (exit 7)
   */
  async write(pages: readonly FetchedPage[]): Promise<BatchResult> {
    try {
      return await this.writeUnder(pages);
    } catch (err) {
      const good = err instanceof PageContractError ? pages.findIndex((p) => p.pageNumber === err.pageNumber) : 0;
      if (good > 0) {
        try {
          await this.writeUnder(pages.slice(0, good));
        } catch (keepErr) {
          this.opts.logger.warn({ err: { message: (keepErr as Error).message } }, 'could not commit the pages before the one that broke the contract');
        }
      }
      throw err;
    }
  }

  /** {@link writeAll} under `heldBatchSettings` for a batch DuckDB holds in memory. */
  private writeUnder(pages: readonly FetchedPage[]): Promise<BatchResult> {
    const rows = pages.reduce((n, p) => n + p.events.count, 0);
    const bytes = pages.reduce((n, p) => n + p.bytes, 0);
    const settings = this.opts.heldBatchSettings;
    if (settings === undefined) return this.writeAll(pages);
    if (rows < ROW_GROUP_SIZE || bytes > BATCH_MAX_BYTES) return this.opts.wh.withSettings(settings, () => this.writeAll(pages));
    return this.writeAll(pages, settings);
  }

  /** Write `pages` until their checks pass; writes after the first under `againSettings`. */
  private async writeAll(pages: readonly FetchedPage[], againSettings?: Readonly<Record<string, string>>): Promise<BatchResult> {
    const checks: Checks = { skip: new Set(), quarantine: new Map(), distinct: new Set() };
    const total = pages.reduce((n, p) => n + p.events.count, 0);
    if (!this.seen.fits(total)) this.seen = await SeenIds.load(this.writer.idHashes(this.opts.streamId), this.seen.size + total);
    const first = await this.attempt(pages, checks);
    if (!(first instanceof WriteAgain)) return first;
    const again = async (): Promise<BatchResult> => {
      let found = first;
      for (let write = 2; ; write += 1) {
        await this.learn(pages, found, checks);
        const r = await this.attempt(pages, checks);
        if (!(r instanceof WriteAgain)) return r;
        if (write >= MAX_WRITES) throw new Error(`a batch still failed its checks after ${write} writes`);
        found = r;
      }
    };
    return againSettings === undefined ? again() : this.opts.wh.withSettings(againSettings, again);
  }

  /** One write of the batch with what the checks found so far: committed, or rolled back with what it found. */
  private async attempt(pages: readonly FetchedPage[], checks: Checks): Promise<BatchResult | WriteAgain> {
    const { wh, store, streamId, runId } = this.opts;
    const { skip, quarantine, distinct } = checks;
    const last = pages[pages.length - 1]!;
    try {
      const appended = await wh.transaction(async () => {
        const r = await this.writer.append({ streamId, basePosition: this.position, pages, runId, skip, quarantine });
        const refused = r.refused.filter((i) => quarantine.get(i)?.level !== 'minimal');
        const hits = this.repeats(r, distinct);
        if (refused.length > 0 || hits.length > 0) throw new WriteAgain(refused, hits);
        await store.saveCursor(streamId, last.nextPage, last.hasNextPage, r.lastPosition);
        failpoint('extract.before-commit');
        return r;
      });
      this.seen.commit();
      failpoint('extract.after-commit');
      this.position = appended.lastPosition;
      const quarantined = [...quarantine.keys()].filter((i) => !skip.has(i)).length;
      return { inserted: appended.inserted, duplicates: skip.size, quarantined, lastPosition: appended.lastPosition };
    } catch (err) {
      this.seen.rollback();
      if (err instanceof WriteAgain) return err;
      throw err;
    }
  }

  /** Fold what a rolled-back write found into `checks`: quarantined forms, redeliveries resolved. */
  private async learn(pages: readonly FetchedPage[], found: WriteAgain, checks: Checks): Promise<void> {
    const at = locate(pages);
    for (const i of found.refused) {
      const { cols, k } = at(i);
      const level = checks.quarantine.has(i) ? 'minimal' : 'repaired';
      checks.quarantine.set(i, { ...quarantinedForm(cols.envelope(k), cols.id(k), cols.type(k), level), level });
    }
    if (found.hits.length > 0) await this.resolveRepeats(pages, found.hits, checks.skip, checks.distinct);
    this.opts.logger.debug({ stream: this.opts.streamId, refused: found.refused.length, repeats: found.hits.length }, 'batch written again after its checks');
  }

  /** Batch indexes of the rows whose id hash is on the stream or earlier in the batch (adds the rest, tentatively). */
  private repeats(r: AppendResult, distinct: ReadonlySet<number>): number[] {
    const hits: number[] = [];
    for (let k = 0; k < r.inserted; k += 1) {
      if (!this.seen.tryAdd(r.hashHi[k]!, r.hashLo[k]!) && !distinct.has(r.indexOf[k]!)) hits.push(r.indexOf[k]!);
    }
    return hits;
  }

  /**
   * Compare each event whose id hash hit with the event of that id already stored (or earlier
   * in the batch): the same JSON value is a redelivery, skipped; another value breaks the
   * stream's immutability (docs/upstream.md "Stream properties"); no such id is a hash collision, written.
   */
  private async resolveRepeats(pages: readonly FetchedPage[], hits: readonly number[], skip: Set<number>, distinct: Set<number>): Promise<void> {
    const at = locate(pages);
    const ids = new Set(hits.map((i) => { const { cols, k } = at(i); return cols.id(k); }));
    const stored = await this.writer.storedEnvelopes(this.opts.streamId, [...ids]);
    const first = new Map<string, string>();
    let index = 0;
    for (const page of pages) {
      const cols = page.events;
      for (let k = 0; k < cols.count; k += 1, index += 1) {
        const id = cols.id(k);
        if (!ids.has(id) || skip.has(index)) continue;
        const before = stored.get(id) ?? first.get(id);
        if (before === undefined) {
          first.set(id, cols.envelope(k));
          distinct.add(index);
        } else if (sameJson(before, cols.envelope(k))) skip.add(index);
        else {
          throw new PageContractError(
            `stream ${this.opts.streamId}, page ${page.pageNumber}: an event id was sent again with a different payload; the stream is immutable (docs/upstream.md "Stream properties")`,
            page.pageNumber,
            { hint: 'report it to the API provider; nothing of this page was committed, the pages before it are kept' },
          );
        }
      }
    }
  }
}

/** Batch index → the page's columns and the index within the page. */
function locate(pages: readonly FetchedPage[]): (i: number) => { cols: PageEvents; k: number } {
  return (i) => {
    let k = i;
    for (const p of pages) {
      if (k < p.events.count) return { cols: p.events, k };
      k -= p.events.count;
    }
    throw new Error(`batch index ${i} out of range`);
  };
}
