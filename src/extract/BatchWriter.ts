/**
 * Commits batches of pages to one stream (`docs/ingest.md` "How a batch is written"): the
 * events and the cursor after the batch's last page in one transaction (exactly once), the
 * repeat check against the stream's id hashes (`etl.event_ids`), redeliveries compared by JSON
 * value, and events DuckDB cannot store as JSON quarantined.
 *
 * A batch is a {@link BatchFile} that its pages are written to as they arrive, loaded by
 * DuckDB in one statement. When the checks find something, the transaction is rolled back
 * and a new file written from the first with what they found: redeliveries left out,
 * refused events in their quarantined form (repaired first, minimal if still refused).
 * Usually a batch is loaded once.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpstreamContractError, type EtlErrorOptions } from '../errors.js';
import { failpoint } from '../failpoints.js';
import type { Logger } from '../log/logger.js';
import type { PageEvents } from '../events/PageEvents.js';
import { BatchFile } from '../warehouse/BatchFile.js';
import { LoadFailed, type QuarantinedEvent, RawEventWriter } from '../warehouse/RawEventWriter.js';
import type { StreamStore } from '../warehouse/StreamStore.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { wideBatch } from './batches.js';
import { quarantinedForm } from './quarantine.js';
import { sameJson } from './sameJson.js';

/** One fetched page, to be added to a batch. */
export interface FetchedPage {
  events: PageEvents;
  /** 1-based page number in the run (messages). */
  pageNumber: number;
  /**
   * The cursor to store once it is committed: the page's `nextPage` and `hasNextPage`; for a
   * slice of a large page that is not its last, the page's own URL and true (the next run
   * fetches the page again, and its committed events are redeliveries: `docs/ingest.md` "Large pages").
   */
  nextPage: string;
  hasNextPage: boolean;
  /** A slice of a large page that is not its last: it does not count as a page committed. */
  partial?: boolean;
}

/** What a batch keeps of a page once its events are in the batch file. */
interface PageEntry {
  pageNumber: number;
  nextPage: string;
  hasNextPage: boolean;
  /** Events of the page (rows of the batch file). */
  rows: number;
  /** See {@link FetchedPage.partial}. */
  partial: boolean;
}

/** A batch being filled: its pages' events in a file, the rest of each page kept here. */
export class Batch {
  /** @internal the pages, in order */
  readonly pages: PageEntry[] = [];
  /** A page could not be written whole (its file may end in part of it): never to be committed. */
  broken = false;

  /** @internal use {@link BatchWriter.begin} */
  constructor(readonly file: BatchFile) {}

  /**
   * Write the page's events to the batch file; the page itself is not kept.
   * @throws {WarehouseError} the disk refused the write (exit 7); the batch is then broken
   */
  add(page: FetchedPage): void {
    try {
      this.file.appendPage(page.events);
    } catch (err) {
      this.broken = true;
      throw err;
    }
    this.pages.push({
      pageNumber: page.pageNumber,
      nextPage: page.nextPage,
      hasNextPage: page.hasNextPage,
      rows: page.events.count,
      partial: page.partial === true,
    });
  }

  /** Size of the batch file so far, bytes. */
  get bytes(): number {
    return this.file.bytes;
  }
}

/** What one committed batch added. */
export interface BatchResult {
  inserted: number;
  /** Redeliveries skipped: an id already on the stream (or earlier in the batch) with the same JSON value. */
  duplicates: number;
  quarantined: number;
  lastPosition: number;
  /** Pages committed (a slice of a large page counts with the page's last slice). */
  pages: number;
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
  constructor(
    /** Batch rows whose JSON DuckDB refused. */
    readonly refused: readonly number[],
    /** Batch rows whose id hash the stream or an earlier row held: maybe redeliveries. */
    readonly hits: readonly number[],
  ) {
    super('write the batch again');
  }
}

/** Writes of one batch at most: the usual one, then quarantine repaired, minimal, redeliveries. */
const MAX_WRITES = 5;

/** A quarantined row: its stored form, and what `raw.quarantined_events` keeps. */
type Quarantine = QuarantinedEvent & { level: 'repaired' | 'minimal'; id: string; text: string };

/** What the checks of a batch found so far, by batch row. */
interface Checks {
  /** Redeliveries, not written. */
  skip: Set<number>;
  /** Events written in their quarantined form. */
  quarantine: Map<number, Quarantine>;
  /** Events whose id hash hit but whose id is not on the stream (a hash collision). */
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
   * DuckDB settings for a batch DuckDB holds in memory, in proportion to its size, until a
   * checkpoint: a wide batch ({@link wideBatch}), a batch written again after its checks
   * (its redeliveries are compared in SQL), and the id hashes computed again after an engine
   * upgrade. Default: the session's settings.
   */
  heldBatchSettings?: Readonly<Record<string, string>>;
}

/** The folder of the batch files beside the database (`<db>.ingest`), or a temporary one for `:memory:`. */
function ingestFolder(wh: Warehouse): string {
  if (wh.path === ':memory:') return mkdtempSync(join(tmpdir(), 'recruit-etl-ingest-'));
  const dir = `${wh.path}.ingest`;
  // Files a killed run left: this process holds the database's write lock, so nobody else uses them.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export class BatchWriter {
  private readonly writer: RawEventWriter;
  /** The stream's last committed position. */
  position: number;
  private files = 0;

  private constructor(
    private readonly opts: BatchWriterOptions,
    private readonly dir: string,
  ) {
    this.writer = new RawEventWriter(opts.wh);
    this.position = opts.position;
  }

  /**
   * A writer for the stream; empties the batch folder (what a killed run left) and makes sure
   * the id hashes of the repeat check are this engine's ({@link RawEventWriter.ensureIdHashes}).
   * @throws {WarehouseError}
   */
  static async open(opts: BatchWriterOptions): Promise<BatchWriter> {
    const w = new BatchWriter(opts, ingestFolder(opts.wh));
    // Computing every hash again holds them in memory until a checkpoint: the held settings.
    const rehashed = await w.heldIf(true, async () => {
      if (!(await w.writer.ensureIdHashes())) return false;
      await opts.wh.checkpoint();
      return true;
    });
    if (rehashed) opts.logger.info('etl.event_ids hashed again: DuckDB hashes ids differently since they were stored');
    return w;
  }

  /** A new, empty batch (its file in the batch folder). */
  begin(): Batch {
    return new Batch(this.newFile());
  }

  /** Remove the batch folder and whatever is left in it. */
  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Commit `b` with the cursor after its last page; its file is removed either way.
   *
   * @throws {PageContractError} an id sent again with another JSON value (docs/upstream.md "Stream properties"): the pages
   *   before its page are committed first, with their cursor
   * @throws {WarehouseError} DuckDB failed (exit 7)
   */
  async write(b: Batch): Promise<BatchResult> {
    if (b.broken) throw new Error('a broken batch cannot be committed (bug)');
    const held = wideBatch(b.file.longestRow);
    try {
      return await this.writePages(b, b.pages.length, held);
    } catch (err) {
      const good = err instanceof PageContractError ? b.pages.findIndex((p) => p.pageNumber === err.pageNumber) : 0;
      if (good > 0) {
        try {
          await this.writePages(b, good, true);
        } catch (keepErr) {
          this.opts.logger.warn(
            { err: { message: (keepErr as Error).message } },
            'could not commit the pages before the one that broke the contract',
          );
        }
      }
      throw err;
    } finally {
      b.file.remove();
    }
  }

  private newFile(): BatchFile {
    this.files += 1;
    return BatchFile.create(join(this.dir, `${this.files}.rows`));
  }

  /** `fn` under {@link BatchWriterOptions.heldBatchSettings} when `held`. */
  private heldIf<T>(held: boolean, fn: () => Promise<T>): Promise<T> {
    const settings = this.opts.heldBatchSettings;
    return held && settings !== undefined ? this.opts.wh.withSettings(settings, fn) : fn();
  }

  /**
   * Write the first `pageCount` pages of `batch` until their checks pass; the first write
   * under the held settings when `held`, any later one always.
   */
  private async writePages(batch: Batch, pageCount: number, held: boolean): Promise<BatchResult> {
    const pages = batch.pages.slice(0, pageCount);
    const rows = pages.reduce((n, p) => n + p.rows, 0);
    const checks: Checks = { skip: new Set(), quarantine: new Map(), distinct: new Set() };
    for (let write = 1; ; write += 1) {
      // The batch's own file the first time; later a file written from it with what the checks found.
      let file = batch.file;
      let rowsOf: Int32Array | undefined;
      try {
        if (write > 1 || rows < batch.file.rows) {
          file = this.newFile();
          rowsOf = file.appendFrom(batch.file, rows, (k) => (checks.skip.has(k) ? 'skip' : (checks.quarantine.get(k) ?? 'keep')));
        }
        const heldNow = held || write > 1;
        const r = await this.heldIf(heldNow, async () => {
          const done = await this.attempt(file, rowsOf, pages, checks);
          // What DuckDB holds of a held batch is written out while the held settings still
          // apply: a checkpoint under the extract's small cap could fail (a 100 MB page: exit 7).
          if (heldNow && !(done instanceof WriteAgain)) await this.opts.wh.checkpoint();
          return done;
        });
        if (!(r instanceof WriteAgain)) return r;
        if (write >= MAX_WRITES) throw new Error(`a batch still failed its checks after ${write} writes`);
        await this.heldIf(true, () => this.learn(batch, pages, r, checks));
      } finally {
        if (file !== batch.file) file.remove();
      }
    }
  }

  /**
   * One load of `file` (rows of the batch: `rowsOf`, or all of them in order) with what the
   * checks found so far: committed, or rolled back with what it found.
   */
  private async attempt(
    file: BatchFile,
    rowsOf: Int32Array | undefined,
    pages: readonly PageEntry[],
    checks: Checks,
  ): Promise<BatchResult | WriteAgain> {
    const { wh, store, streamId, runId } = this.opts;
    const row = (j: number): number => (rowsOf === undefined ? j : rowsOf[j]!);
    const last = pages[pages.length - 1]!;
    const quarantined: { row: number; id: string; reason: string; text: string }[] = [];
    for (let j = 0; j < file.rows; j += 1) {
      const q = checks.quarantine.get(row(j));
      if (q !== undefined) quarantined.push({ row: j, id: q.id, reason: q.reason, text: q.text });
    }
    try {
      const loaded = await wh.transaction(async () => {
        const r = await this.writer.load({ streamId, basePosition: this.position, file, runId, extractedAt: new Date(), quarantined });
        const hits = r.repeats.map(row).filter((k) => !checks.distinct.has(k));
        if (hits.length > 0) throw new WriteAgain([], hits);
        await store.saveCursor(streamId, last.nextPage, last.hasNextPage, r.lastPosition);
        failpoint('extract.before-commit');
        return r;
      });
      failpoint('extract.after-commit');
      this.position = loaded.lastPosition;
      return {
        inserted: loaded.inserted,
        duplicates: checks.skip.size,
        quarantined: quarantined.length,
        lastPosition: loaded.lastPosition,
        pages: pages.filter((p) => !p.partial).length,
      };
    } catch (err) {
      if (err instanceof WriteAgain) return err;
      if (!(err instanceof LoadFailed)) throw err;
      // DuckDB's JSON reader refused an event, or the load failed for another reason: which one.
      const refused = await this.writer.refusedRows(file).catch(() => []);
      const fresh = refused.map(row).filter((k) => checks.quarantine.get(k)?.level !== 'minimal');
      if (fresh.length === 0) throw err.cause;
      return new WriteAgain(fresh, []);
    }
  }

  /** Fold what a rolled-back load found into `checks`: quarantined forms, redeliveries resolved. */
  private async learn(batch: Batch, pages: readonly PageEntry[], found: WriteAgain, checks: Checks): Promise<void> {
    for (const k of found.refused) {
      const sent = batch.file.readRow(k);
      const level = checks.quarantine.has(k) ? 'minimal' : 'repaired';
      checks.quarantine.set(k, { ...quarantinedForm(sent.envelope, sent.id, sent.type, level), level, id: sent.id, text: sent.envelope });
    }
    if (found.hits.length > 0) await this.resolveRepeats(batch, pages, found, checks);
    this.opts.logger.debug(
      { stream: this.opts.streamId, refused: found.refused.length, repeats: found.hits.length },
      'batch written again after its checks',
    );
  }

  /**
   * Compare each row whose id hash hit with the event of that id already stored (or earlier in
   * the batch): the same JSON value is a redelivery, skipped; another value breaks the
   * stream's immutability (docs/upstream.md "Stream properties"); no such id is a hash
   * collision, written. Reads back only the rows that carry a hit's id.
   */
  private async resolveRepeats(batch: Batch, pages: readonly PageEntry[], found: WriteAgain, checks: Checks): Promise<void> {
    const ids = [...new Set(found.hits.map((k) => batch.file.readRow(k).id))];
    const stored = await this.writer.storedEnvelopes(this.opts.streamId, ids);
    const first = new Map<string, string>();
    const rows = pages.reduce((n, p) => n + p.rows, 0);
    for (const k of await this.writer.rowsWithIds(batch.file, ids)) {
      if (k >= rows || checks.skip.has(k)) continue;
      const { id, envelope } = batch.file.readRow(k);
      const before = stored.get(id) ?? first.get(id);
      if (before === undefined) {
        first.set(id, envelope);
        checks.distinct.add(k);
      } else if (sameJson(before, envelope)) checks.skip.add(k);
      else {
        const pageNumber = pageOf(pages, k);
        throw new PageContractError(
          `stream ${this.opts.streamId}, page ${pageNumber}: an event id was sent again with a different payload; the stream is immutable (docs/upstream.md "Stream properties")`,
          pageNumber,
          { hint: 'report it to the API provider; nothing of this page was committed, the pages before it are kept' },
        );
      }
    }
  }
}

/** The page number of batch row `k`. */
function pageOf(pages: readonly PageEntry[], k: number): number {
  let rest = k;
  for (const p of pages) {
    if (rest < p.rows) return p.pageNumber;
    rest -= p.rows;
  }
  throw new Error(`batch row ${k} out of range`);
}
