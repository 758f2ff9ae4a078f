/**
 * The extract stage: page the configured stream from its stored cursor into `raw.events`.
 *
 * Per batch of pages, the events and the new cursor commit in one DuckDB transaction
 * (DESIGN.md guarantee 1); a failure keeps every batch committed before it. While a batch
 * commits, the pages of the next one are fetched (never written before it has committed;
 * measured at 1M events: 9.4 → 8.7 s). The first
 * request is built from the filter only when the stream has no cursor yet; after that the
 * stored `nextPage` is used verbatim (spec §4.3 rules 4, 5, 7).
 *
 * @module
 */
import { InterruptedError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { type EventsClient, firstPageUrl, pageStream } from '../upstream/events.js';
import { ROW_GROUP_SIZE, sqlString, type Warehouse } from '../warehouse/Warehouse.js';
import { type AppendResult, PageContractError, RawEventWriter, RepeatedEventIdsError } from '../warehouse/RawEventWriter.js';
import { StreamStore } from '../warehouse/StreamStore.js';
import { defineStream } from './streamDefinition.js';
import { failpoint } from '../failpoints.js';

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
  /**
   * Pages per transaction (default 25); see {@link batchComplete} for when a batch takes more,
   * up to twice as many. The last batch of a run, or the pages kept after a failure, may be
   * fewer. The cursor always commits with its events.
   */
  batchPages?: number;
  /**
   * DuckDB `memory_limit`s (e.g. `'24MB'`, `'2GB'`). `streaming` is the one the caller set for
   * the extract: enough for a batch of at least one row group (`ROW_GROUP_SIZE` rows), which
   * DuckDB writes to the file as it goes. `fallback` is set while a batch needs more and
   * `streaming` again after it: a batch written on the exact path (a staging table, envelope
   * comparisons), or one with fewer rows than a row group, which DuckDB keeps in memory as WAL
   * data until the next checkpoint (measured: 12 pages of 1,000 events per batch ran out of
   * memory under 24 MB). Default: the session's limit throughout.
   */
  memoryLimits?: { streaming: string; fallback: string };
  /**
   * DuckDB `checkpoint_threshold`s: `smallBatch` while a batch smaller than a row group is
   * committed, so that the WAL data DuckDB holds in memory for such batches is folded into the
   * file often; `streaming` (the session's) again after it. Not for every batch: a 16 MB
   * threshold throughout cost 1.5 s per million events in 25-page batches (measured: 9.85
   * against 8.31 s). Measured with 12-page batches at 1M events: 584 MiB peak RSS without,
   * 244 MiB with 16 MB. Default: the session's threshold throughout.
   */
  checkpointThresholds?: { streaming: string; smallBatch: string };
  runId: string;
  logger?: Logger;
  signal?: AbortSignal;
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
  batches: number;
  /** Rows on the stream after the run (= last stream_position). */
  streamEventCount: number;
  /** Whether the run started from a stored cursor (true) or from the beginning (false). */
  resumed: boolean;
  bytes: number;
}

/**
 * Whether a batch ends here: once it has `batchPages` pages, at the first page where its last
 * row group comes out more than half full (or empty), and at `2 × batchPages` pages in any
 * case. Pages of half a row group or more end it at `batchPages`: one more page would not
 * fix the remainder, and each page held costs memory.
 *
 * Why: DuckDB writes a batch of at least a row group ({@link ROW_GROUP_SIZE} rows) to the file
 * as it goes, its remainder as a row group of its own. At a checkpoint DuckDB merges three
 * neighbouring row groups that fit in two, so remainders of at most half a row group get
 * merged and rewritten: measured at 1M events, 20 pages of 1,000 per batch (remainders of
 * 3,616 rows) took 1.6 GB and 2 s at the final checkpoint, against under 256 MiB for 25 pages
 * (remainders of 8,616). A batch under one row group goes through the WAL into whole row
 * groups and ends at `batchPages`.
 *
 * @param pages pages in the batch so far
 * @param rows events in those pages
 * @param batchPages `--batch-pages`
 * @returns true when the batch should be committed now
 */
export function batchComplete(pages: number, rows: number, batchPages: number): boolean {
  if (pages < batchPages) return false;
  if (pages >= 2 * batchPages || rows / pages >= ROW_GROUP_SIZE / 2) return true;
  const remainder = rows % ROW_GROUP_SIZE;
  return rows < ROW_GROUP_SIZE || remainder === 0 || remainder > ROW_GROUP_SIZE / 2;
}

/**
 * Run `fn` under the DuckDB settings `during` (name → value), then set `after` (also when
 * `fn` throws; best effort and logged, so that it cannot hide `fn`'s own error). `after` is
 * given, not read back: `memory_limit` reads back rounded (`24MB` → `22.8 MiB`), and setting
 * that again drifts. With no settings, just `fn`.
 */
async function withSettings<T>(
  wh: Warehouse,
  during: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
  fn: () => Promise<T>,
  logger: Logger,
): Promise<T> {
  for (const [name, value] of Object.entries(during)) await wh.run(`set ${name} = ${sqlString(value)}`);
  try {
    return await fn();
  } finally {
    for (const [name, value] of Object.entries(after)) {
      await wh.run(`set ${name} = ${sqlString(value)}`).catch((err: unknown) => {
        logger.warn({ err: { message: (err as Error).message }, setting: name }, 'could not restore a DuckDB setting after a batch');
      });
    }
  }
}

/**
 * Extract one stream (DESIGN.md: one configuration = one stream by default).
 *
 * @throws {UpstreamUnavailableError} exit 4, {@link AuthError} exit 3, {@link UpstreamContractError} exit 6,
 *   {@link WarehouseError} exit 7, {@link InterruptedError} when `signal` aborts; batches committed before stay.
 */
export async function extractEvents(opts: ExtractOptions): Promise<ExtractResult> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'extract' });
  const store = new StreamStore(opts.wh);
  const writer = new RawEventWriter(opts.wh);
  const def = defineStream({
    environment: opts.environment,
    baseUrl: opts.baseUrl,
    trialIds: opts.trialIds,
    eventTypes: opts.eventTypes,
  });
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
  const batchPages = Math.max(1, opts.batchPages ?? 25);
  logger.info({ stream: def.streamId, resumed, position: state.eventCount }, 'extract started');

  const result: ExtractResult = {
    streamId: def.streamId,
    streamName: def.name,
    retiredStreams: retired,
    pages: 0,
    eventsLoaded: 0,
    duplicatesSkipped: 0,
    batches: 0,
    streamEventCount: state.eventCount,
    resumed,
    bytes: 0,
  };
  // Only the body and cursor of a fetched page are kept until its commit; the parsed events
  // are left to the garbage collector (memory stays flat however long the stream).
  let pending: { bodyText: string; events: number; nextPage: string; hasNextPage: boolean }[] = [];
  /** The last batch held repeated ids: write the next one on the exact path directly. */
  let preferExact = false;

  const commit = async (): Promise<void> => {
    if (pending.length === 0) return;
    const pages = pending;
    pending = [];
    const firstPageNumber = result.pages - pages.length + 1;
    const toWrite = pages.map((p, i) => ({ bodyText: p.bodyText, pageNumber: firstPageNumber + i }));
    const write = async (path: 'direct' | 'exact', upTo = pages.length): Promise<AppendResult> => {
      const small = pages.slice(0, upTo).reduce((n, p) => n + p.events, 0) < ROW_GROUP_SIZE;
      const during: Record<string, string> = {};
      const after: Record<string, string> = {};
      if (opts.memoryLimits && (path === 'exact' || small)) {
        during['memory_limit'] = opts.memoryLimits.fallback;
        after['memory_limit'] = opts.memoryLimits.streaming;
      }
      if (opts.checkpointThresholds && small) {
        during['checkpoint_threshold'] = opts.checkpointThresholds.smallBatch;
        after['checkpoint_threshold'] = opts.checkpointThresholds.streaming;
      }
      return withSettings(opts.wh, during, after, () => writeIn(path, upTo), logger);
    };
    const writeIn = (path: 'direct' | 'exact', upTo: number) =>
      opts.wh.transaction(async () => {
        const append = path === 'direct' ? writer.appendPagesDirect.bind(writer) : writer.appendPages.bind(writer);
        const r = await append(def.streamId, result.streamEventCount, toWrite.slice(0, upTo), opts.runId, def.streamId);
        const end = pages[upTo - 1]!;
        await store.saveCursor(def.streamId, end.nextPage, end.hasNextPage, r.lastPosition);
        failpoint('extract.before-commit');
        return r;
      });
    const committed = (appended: AppendResult, count: number): void => {
      failpoint('extract.after-commit');
      result.streamEventCount = appended.lastPosition;
      result.eventsLoaded += appended.inserted;
      result.duplicatesSkipped += appended.duplicates;
      result.batches += 1;
      logger.debug({ stream: def.streamId, pages: count, events: appended.inserted, position: appended.lastPosition }, 'batch committed');
    };
    let appended: AppendResult;
    try {
      if (preferExact) {
        appended = await write('exact');
        // Back to the hot path once a batch has no repeats.
        preferExact = appended.duplicates > 0;
      } else {
        try {
          appended = await write('direct');
        } catch (err) {
          if (!(err instanceof RepeatedEventIdsError)) throw err;
          // Rolled back: the same pages again through the exact path, which skips a re-sent
          // event with the same payload and refuses one with another (spec §6.1). An API that
          // repeats events at page boundaries would repeat them in the next batch too: that
          // one goes straight to the exact path.
          logger.debug({ stream: def.streamId, repeats: err.repeats }, 'repeated event ids in the batch: writing it on the exact path');
          appended = await write('exact');
          preferExact = true;
        }
      }
    } catch (err) {
      // A page broke the contract: nothing of it is committed, but the pages of the batch
      // before it are valid and stay (DESIGN.md guarantee 4), with the cursor after them.
      const good = err instanceof PageContractError ? err.pageNumber - firstPageNumber : 0;
      if (good > 0 && good < pages.length) {
        try {
          committed(await write('exact', good), good);
        } catch (keepErr) {
          logger.warn({ err: { message: (keepErr as Error).message } }, 'could not commit the pages before the one that broke the contract');
        }
      }
      throw err;
    }
    committed(appended, pages.length);
  };

  // Pipelining: batch k commits while the pages of batch k+1 are fetched (DuckDB works on its
  // own threads; the JS thread is free during the commit). Batches still commit one after
  // the other, in order, each with its cursor. After a failed write nothing later is written.
  let inFlight: Promise<void> | undefined;
  let writeFailed = false;
  const settle = async (): Promise<void> => {
    const p = inFlight;
    inFlight = undefined;
    if (p) await p;
  };
  const startCommit = async (): Promise<void> => {
    await settle();
    if (pending.length === 0) return;
    const p = commit().catch((err: unknown) => {
      writeFailed = true;
      throw err;
    });
    p.catch(() => undefined); // observed by the next settle()
    inFlight = p;
  };

  const signalOpts = opts.signal ? { signal: opts.signal } : {};
  try {
    for await (const page of pageStream(opts.client, startUrl, { ...signalOpts, label: def.streamId })) {
      pending.push({ bodyText: page.bodyText, events: page.events.length, nextPage: page.nextPage, hasNextPage: page.hasNextPage });
      result.pages += 1;
      result.bytes += page.bytes;
      const rows = pending.reduce((n, p) => n + p.events, 0);
      if (!page.hasNextPage || batchComplete(pending.length, rows, batchPages)) await startCommit();
      if (opts.signal?.aborted || writeFailed) break; // a failed write surfaces below at once
    }
    await startCommit();
    await settle();
  } catch (err) {
    let failure = err;
    try {
      await settle();
    } catch (writeErr) {
      // A write failed while the fetch failed: the write's error decides the exit.
      logger.debug({ err: { message: (err as Error)?.message } }, 'fetch failed while a failed batch was being written');
      failure = writeErr;
    }
    // Pages fetched whole before a fetch failure are valid: keep them (unless a write failed,
    // which would leave a gap), then report the failure.
    if (!writeFailed && pending.length > 0 && !opts.wh.busy) {
      try {
        await commit();
      } catch (commitErr) {
        logger.warn({ err: { message: (commitErr as Error).message } }, 'could not commit the pages fetched before the failure');
      }
    }
    throw failure;
  }
  if (opts.signal?.aborted) {
    const reason = opts.signal.reason;
    throw reason instanceof InterruptedError ? reason : new InterruptedError('SIGTERM');
  }
  logger.info(
    { stream: def.streamId, pages: result.pages, events: result.eventsLoaded, duplicates: result.duplicatesSkipped, position: result.streamEventCount },
    'extract finished',
  );
  return result;
}
