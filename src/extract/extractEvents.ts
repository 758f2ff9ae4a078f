/**
 * The extract stage: page the configured stream from its stored cursor into `raw.events`
 * (`docs/ingest.md`).
 *
 * Pages are read once by the upstream client (`src/upstream/page.ts`), written to the file of
 * their batch as they arrive, and committed in batches by {@link BatchWriter}, each with the
 * cursor after its last page (exactly once). While DuckDB loads a batch, the pages of the next
 * one are fetched and written to its own file (never loaded before the first has committed). The first request is built from the filter only when the stream has no cursor
 * yet; after that the stored `nextPage` is used verbatim (docs/upstream.md "Reading the stream" rules 4, 5, 7).
 *
 * @module
 */
import { InterruptedError, UpstreamContractError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { NO_PROGRESS, type StageProgress } from '../log/progress.js';
import { DEFAULT_MAX_EMPTY_PAGES, type EventsClient, type EventsPage, firstPageUrl, pageStream } from '../upstream/events.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { StreamStore } from '../warehouse/StreamStore.js';
import { type Batch, BatchWriter } from './BatchWriter.js';
import { batchComplete, DEFAULT_BATCH_PAGES, pageSlices } from './batches.js';
import { defineStream } from './streamDefinition.js';

/** Full batches that may wait for DuckDB while the next one is filled (`docs/ingest.md` "Batches"). */
const QUEUED_BATCHES = 2;

/** Options of {@link extractEvents}. */
export interface ExtractOptions {
  wh: Warehouse;
  client: EventsClient;
  /** `--base-url` (spec `{base_url}`). */
  baseUrl: string;
  environment: string;
  trialIds: readonly string[];
  eventTypes: readonly string[];
  /** `limit` sent on the first request only (later pages follow `nextPage` verbatim). */
  pageSize?: number;
  /** `--batch-pages`: the most pages a batch takes (default {@link DEFAULT_BATCH_PAGES}); see {@link batchComplete}. */
  batchPages?: number;
  /** `--max-empty-pages`: pages in a row that bring no new event (none, or only events already stored), `hasNextPage` true, before exit 6. */
  maxEmptyPages?: number;
  /** DuckDB settings for a batch DuckDB holds in memory (`BatchWriterOptions.heldBatchSettings`). Default: the session's. */
  heldBatchSettings?: Readonly<Record<string, string>>;
  runId: string;
  logger?: Logger;
  signal?: AbortSignal;
  /** Receives pages fetched, events committed and the stream position (src/log/progress.ts). */
  progress?: StageProgress;
  /** Called after each batch commits, with its pages and inserted events (what a failed run still counts). */
  onCommitted?: (pages: number, events: number) => void;
}

/** What one extract did. */
export interface ExtractResult {
  streamId: string;
  streamName: string;
  /** Streams retired because the filter changed. */
  retiredStreams: string[];
  pages: number;
  eventsLoaded: number;
  /** Events skipped as re-deliveries of an id already on the stream. */
  duplicatesSkipped: number;
  /** Events stored in their quarantined form (`docs/ingest.md` "Quarantine"). */
  quarantined: number;
  batches: number;
  /** Rows on the stream after the run (= last stream_position). */
  streamEventCount: number;
  /** Whether the run started from a stored cursor (true) or from the beginning (false). */
  resumed: boolean;
  bytes: number;
}

/**
 * Extract one stream (`docs/ingest.md`: one configuration = one stream by default).
 *
 * @throws {UpstreamUnavailableError} exit 4, {@link AuthError} exit 3, {@link UpstreamContractError} exit 6,
 *   {@link WarehouseError} exit 7, {@link InterruptedError} when `signal` aborts; batches committed before stay.
 */
export async function extractEvents(opts: ExtractOptions): Promise<ExtractResult> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'extract' });
  const store = new StreamStore(opts.wh);
  const { def, state, retired, resumed, startUrl } = await openStream(opts, store, logger);
  logger.info({ stream: def.streamId, resumed, position: state.eventCount }, 'extract started');

  const result: ExtractResult = {
    streamId: def.streamId,
    streamName: def.name,
    retiredStreams: retired,
    pages: 0,
    eventsLoaded: 0,
    duplicatesSkipped: 0,
    quarantined: 0,
    batches: 0,
    streamEventCount: state.eventCount,
    resumed,
    bytes: 0,
  };
  const writer = await BatchWriter.open({
    wh: opts.wh,
    store,
    streamId: def.streamId,
    position: state.eventCount,
    runId: opts.runId,
    logger,
    ...(opts.heldBatchSettings !== undefined ? { heldBatchSettings: opts.heldBatchSettings } : {}),
  });
  const progress = opts.progress ?? NO_PROGRESS;
  progress.update({ pages: 0, events: 0, position: state.eventCount });
  const run = new ExtractRun(opts, writer, result, logger, progress);
  const streamOpts = {
    label: def.streamId,
    newStream: !resumed,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.maxEmptyPages !== undefined ? { maxEmptyPages: opts.maxEmptyPages } : {}),
  };
  try {
    await run.readPages(pageStream(opts.client, startUrl, streamOpts));
  } catch (err) {
    throw await run.afterFailure(err);
  } finally {
    run.close();
  }
  if (opts.signal?.aborted) {
    const reason = opts.signal.reason;
    throw reason instanceof InterruptedError ? reason : new InterruptedError('SIGTERM');
  }
  logger.info(
    {
      stream: def.streamId,
      pages: result.pages,
      events: result.eventsLoaded,
      duplicates: result.duplicatesSkipped,
      quarantined: result.quarantined,
      position: result.streamEventCount,
    },
    'extract finished',
  );
  return result;
}

/**
 * The stream of this configuration, activated (the streams of an older filter retired), and
 * the URL to read it from: its stored cursor, else the first page of the filter.
 */
async function openStream(opts: ExtractOptions, store: StreamStore, logger: Logger) {
  const filterDef = defineStream({
    environment: opts.environment,
    baseUrl: opts.baseUrl,
    trialIds: opts.trialIds,
    eventTypes: opts.eventTypes,
  });
  // A stream started again (`recruit-etl streams reset`) goes by its latest restart's id.
  const def = { ...filterDef, streamId: await store.currentId(filterDef.streamId) };
  const { state, retired } = await store.activate(def);
  if (retired.length > 0) {
    logger.warn({ stream: def.streamId, retired }, 'filter changed: older streams retired, this stream starts from the beginning');
  }
  const resumed = state.nextPage !== null;
  const startUrl =
    state.nextPage ??
    firstPageUrl(opts.baseUrl, {
      trialIds: def.trialIds,
      eventTypes: def.eventTypes,
      ...(opts.pageSize !== undefined ? { limit: opts.pageSize } : {}),
    });
  return { def, state, retired, resumed, startUrl };
}

/**
 * The pages of one extract on their way into batches: the batch being filled, the full
 * batches queued for DuckDB, and the counts of {@link ExtractResult}.
 *
 * Pipelining: DuckDB loads batch k while the pages of the next batches are fetched and
 * written to their files; up to {@link QUEUED_BATCHES} full batches wait their turn, so that
 * neither side waits for the other's slow moments. Batches still commit one after the
 * other, in order, each with its cursor. After a failed write nothing later is written.
 */
class ExtractRun {
  /** The batch being filled. */
  private batch: Batch;
  /**
   * Pages in a row that brought no new event. The page stream counts pages with no event at
   * all; a page of events already stored (redeliveries) is known only once its batch is
   * written, so it counts here, per batch (docs/ingest.md "Bounded time").
   */
  private idlePages = 0;
  private readonly maxIdlePages: number;
  private readonly batchPages: number;
  private fetchedEvents = 0;
  /** Full batches committing or waiting to, in order. */
  private readonly queued: Promise<void>[] = [];
  private writeFailed = false;

  constructor(
    private readonly opts: ExtractOptions,
    private readonly writer: BatchWriter,
    private readonly result: ExtractResult,
    private readonly logger: Logger,
    private readonly progress: StageProgress,
  ) {
    this.batchPages = Math.max(1, opts.batchPages ?? DEFAULT_BATCH_PAGES);
    this.maxIdlePages = opts.maxEmptyPages ?? DEFAULT_MAX_EMPTY_PAGES;
    this.batch = writer.begin();
  }

  /** Add every page of `pages` to batches and commit them all, in order. */
  async readPages(pages: AsyncIterable<EventsPage>): Promise<void> {
    const result = this.result;
    for await (const page of pages) {
      result.pages += 1;
      result.bytes += page.bytes;
      this.fetchedEvents += page.events.count;
      this.progress.update({ pages: result.pages, events: this.fetchedEvents });
      // A large page is committed in slices, each ending its batch (docs/ingest.md "Large pages").
      const slices = pageSlices(page.events, page.bytes);
      for (let k = 0; k < slices.length; k += 1) {
        const last = k === slices.length - 1;
        const cursor = last
          ? { nextPage: page.nextPage, hasNextPage: page.hasNextPage }
          : { nextPage: page.url, hasNextPage: true, partial: true };
        const batch = this.batch;
        batch.add({ events: slices[k]!, pageNumber: result.pages, ...cursor });
        if (!last || !page.hasNextPage || batchComplete(batch.pages.length, batch.bytes, batch.file.longestRow, this.batchPages))
          await this.startCommit();
        if (this.writeFailed) break;
      }
      if (this.opts.signal?.aborted || this.writeFailed) break; // a failed write surfaces below at once
    }
    await this.startCommit();
    await this.settle();
  }

  /**
   * After a failure of the fetch or of a write: wait for the queued writes, keep the pages
   * fetched whole before a fetch failure, and return the error that decides the exit.
   */
  async afterFailure(err: unknown): Promise<unknown> {
    let failure = err;
    try {
      await this.settle();
    } catch (writeErr) {
      // A write failed while the fetch failed: the write's error decides the exit.
      this.logger.debug({ err: { message: (err as Error)?.message } }, 'fetch failed while a failed batch was being written');
      failure = writeErr;
    }
    // Pages fetched whole before a fetch failure are valid: keep them (unless a write failed,
    // which would leave a gap), then report the failure.
    if (!this.writeFailed && !this.batch.broken && this.batch.pages.length > 0 && !this.opts.wh.busy) {
      try {
        const rest = this.batch;
        this.batch = this.writer.begin();
        await this.commit(rest);
      } catch (commitErr) {
        this.logger.warn({ err: { message: (commitErr as Error).message } }, 'could not commit the pages fetched before the failure');
      }
    }
    return failure;
  }

  /** Remove the file of the batch being filled and close the writer. */
  close(): void {
    this.batch.file.remove();
    this.writer.close();
  }

  /** Queue the batch being filled (if it holds a page) behind the others, and begin the next. */
  private async startCommit(): Promise<void> {
    if (this.batch.pages.length === 0) return;
    const full = this.batch;
    this.batch = this.writer.begin();
    const queued = this.queued;
    const previous = queued[queued.length - 1];
    const p = (previous ?? Promise.resolve())
      .then(() => this.commit(full))
      .catch((err: unknown) => {
        this.writeFailed = true;
        full.file.remove();
        throw err;
      });
    p.catch(() => undefined); // observed by settle()
    queued.push(p);
    while (queued.length > QUEUED_BATCHES) await queued.shift();
  }

  /** Wait for every queued batch; the first failed write's error is thrown. */
  private async settle(): Promise<void> {
    while (this.queued.length > 0) await this.queued.shift();
  }

  /**
   * Write and commit one batch, count it.
   * @throws {UpstreamContractError} when too many pages in a row brought no new event
   */
  private async commit(pages: Batch): Promise<void> {
    const { result, logger } = this;
    const r = await this.writer.write(pages);
    this.idlePages = r.inserted === 0 ? this.idlePages + r.pages : 0;
    if (this.idlePages >= this.maxIdlePages && pages.pages[pages.pages.length - 1]?.hasNextPage === true) {
      throw new UpstreamContractError(
        `stream ${result.streamId}: ${this.idlePages} pages in a row brought no new event (only events already stored, or none) while hasNextPage stayed true (limit --max-empty-pages ${this.maxIdlePages})`,
        { hint: 'the upstream keeps re-sending what it sent before; report it. Every page before these was stored' },
      );
    }
    result.streamEventCount = r.lastPosition;
    result.eventsLoaded += r.inserted;
    result.duplicatesSkipped += r.duplicates;
    result.quarantined += r.quarantined;
    result.batches += 1;
    this.opts.onCommitted?.(r.pages, r.inserted);
    this.progress.update({ position: r.lastPosition });
    if (r.quarantined > 0)
      logger.warn(
        { stream: result.streamId, quarantined: r.quarantined, position: r.lastPosition },
        'events quarantined: stored in a readable form, their text as sent kept in raw.quarantined_events',
      );
    logger.debug({ stream: result.streamId, pages: r.pages, events: r.inserted, position: r.lastPosition }, 'batch committed');
  }
}
