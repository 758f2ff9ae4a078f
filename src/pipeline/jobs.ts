/**
 * The jobs behind the CLI commands: each opens the warehouse once, records itself in
 * `etl.runs`, runs its stages and closes everything in `finally`. The CLI only parses
 * options and maps errors to exit codes (STYLE.md "A thin CLI over a library core").
 *
 * @module
 */
import { EtlError, InterruptedError, LockError } from '../errors.js';
import type { Config } from '../config/config.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { extractEvents, type ExtractResult } from '../extract/extractEvents.js';
import { snapshotSites, type SnapshotSitesResult } from '../extract/snapshotSites.js';
import { exportParquet, type Manifest } from '../export/exportParquet.js';
import { runTransform, type TransformResult } from '../transform/runTransform.js';
import { HttpClient } from '../upstream/http.js';
import { TokenProvider } from '../upstream/auth.js';
import { EventsClient } from '../upstream/events.js';
import { SitesClient } from '../upstream/sites.js';
import { newRunId, RunLog, type RunCounts } from '../warehouse/RunLog.js';
import { CHECKPOINT_THRESHOLD, sqlString, Warehouse } from '../warehouse/Warehouse.js';
import { readStatus, type WarehouseStatus } from '../warehouse/readStatus.js';
import { publishedCopyPath, publishReadOnlyCopy } from '../warehouse/publishCopy.js';
import { failpoint } from '../failpoints.js';
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { resolve } from 'node:path';

/**
 * DuckDB `memory_limit` while the extract stage runs; the job's `--memory-limit` is restored
 * right after it. With 16k-row groups (see `ROW_GROUP_SIZE`) the hot path's buffers stay
 * under 20 MB. Peak RSS of the extract (bench, the bin's V8 flags):
 * 32MB → 245 MiB at 1M events and 260–263 MiB at 5M; 24MB → 249–255 MiB at 5M; 16MB → 239
 * MiB at 5M but about 1 s slower per million events. 64MB → 380–400 MiB at 1M (without the
 * V8 flags). A batch written on the exact path (repeated ids: a staging table and envelope
 * comparisons, measured to run out of memory under 32 MB for 25 pages of 1,000 events) runs
 * under the job's own limit, as does a batch smaller than a row group (see
 * `ExtractOptions.memoryLimits`).
 */
export const EXTRACT_MEMORY_LIMIT = '24MB';

/**
 * V8's old-generation growing factor while the extract runs, as `--heap-growing-percent`
 * (the factor is 1 + percent/100; 0 restores V8's own heuristic). The extract allocates
 * about 350 bytes of short-lived page text per event; by default V8 lets its old space
 * grow to about four times the live data (30–50 MB) before a full collection. A soft
 * setting, not a cap: the heap still grows when the live data does, so it cannot fail with
 * an out-of-memory error the way `--max-old-space-size` can. Bench at 1M events with the
 * bin's `--max-semi-space-size=4` (src/cli.ts), 32MB cap: 340–350 → 245–255 MiB peak RSS,
 * about 1 s more per million events (the young generation's scavenges cost most of it).
 * Set at run time: V8 reads it at every full collection.
 */
export const EXTRACT_V8_HEAP_GROWING_PERCENT = 20;

/**
 * DuckDB `checkpoint_threshold` while the extract commits a batch smaller than a row group:
 * DuckDB holds such a batch in memory, as WAL data, until a checkpoint (see
 * `ExtractOptions.checkpointThresholds`). Other batches keep the session's 512 MB.
 */
export const EXTRACT_SMALL_BATCH_CHECKPOINT_THRESHOLD = '16MB';

/** DuckDB `disabled_compression_methods` while the extract stage runs. */
export const EXTRACT_DISABLED_COMPRESSION = 'dictionary,dict_fsst';

/** Stages a job can run, in pipeline order. */
export type Stage = 'extract' | 'sites' | 'transform' | 'export';

/** Dependencies a job can be given (tests inject them; the CLI builds the defaults). */
export interface JobContext {
  config: Config;
  logger?: Logger;
  signal?: AbortSignal;
  /** HTTP dispatcher options for tests (e.g. short timeouts). */
  http?: HttpClient;
}

/** What a job did: one entry per stage that ran. */
export interface JobResult {
  runId: string;
  command: string;
  extract?: ExtractResult;
  sites?: SnapshotSitesResult;
  transform?: TransformResult;
  export?: Manifest;
  /** The read-only copy published for analysts after a successful run that changed data (not `export` alone). */
  publishedCopy?: string;
  durationMs: number;
}

function counts(r: JobResult): RunCounts {
  return {
    eventsLoaded: r.extract?.eventsLoaded ?? 0,
    pagesFetched: r.extract?.pages ?? 0,
    sitesLoaded: r.sites?.sites ?? 0,
    modelsBuilt: r.transform?.models.length ?? 0,
    filesExported: r.export?.files.length ?? 0,
  };
}

function summary(r: JobResult): Record<string, unknown> {
  return {
    extract: r.extract && {
      stream: r.extract.streamId,
      pages: r.extract.pages,
      events: r.extract.eventsLoaded,
      duplicatesSkipped: r.extract.duplicatesSkipped,
      streamEventCount: r.extract.streamEventCount,
      resumed: r.extract.resumed,
    },
    sites: r.sites,
    transform: r.transform && { models: r.transform.models.length, dq: r.transform.dq },
    export: r.export && { files: r.export.files.map((f) => ({ model: f.model, rows: f.rows })) },
  };
}

/**
 * Run `stages` in pipeline order as one recorded run.
 *
 * @param command the CLI command name recorded in `etl.runs`
 * @throws {EtlError} the first stage failure (after it is recorded in `etl.runs`)
 */
export async function runJob(command: string, stages: readonly Stage[], ctx: JobContext): Promise<JobResult> {
  const { config } = ctx;
  const logger = ctx.logger ?? silentLogger();
  const started = Date.now();
  const runId = newRunId();
  const result: JobResult = { runId, command, durationMs: 0 };
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  const ownsHttp = ctx.http === undefined;
  let http: HttpClient | undefined = ctx.http;
  try {
    await wh.migrate();
    const runLog = new RunLog(wh);
    await runLog.start(runId, command, config.environment);
    logger.info({ runId, command, stages }, 'run started');
    try {
      const needsHttp = stages.includes('extract') || stages.includes('sites');
      if (needsHttp && !http) {
        http = new HttpClient({
          logger,
          policy: {
            maxRetryAfterMs: config.maxRetryAfter * 1000,
            ...(config.deadline !== undefined ? { deadlineMs: Date.now() + config.deadline * 1000 } : {}),
          },
        });
      }
      const signalOpt = ctx.signal ? { signal: ctx.signal } : {};
      // After the extract: the job's own memory limit and compression again, for the sites
      // stage, the models (whose columns do compress by dictionary) and the final checkpoint.
      // Best effort: a failure here must not hide the extract's own error.
      const restoreJobSettings = async (): Promise<void> => {
        setFlagsFromString('--heap-growing-percent=0');
        await wh.run('reset disabled_compression_methods').catch(() => undefined);
        await wh.run(`set memory_limit = ${sqlString(config.memoryLimit)}`).catch(() => undefined);
      };
      if (stages.includes('extract')) {
        // The writer streams batches and needs little of DuckDB's memory; a small cap keeps
        // the extract's footprint flat however long the stream (bench: RSS at 1M and 5M).
        // Dictionary compression is off while raw.events is written: its event ids and JSON
        // texts are all distinct, so it never wins, and its analysis at each checkpoint was
        // the extract's peak of memory (bench at 1M: 390 → 294 MiB, the file no larger).
        const tokens = new TokenProvider({
          credentials: {
            authUrl: config.authUrl!,
            clientId: config.clientId!,
            clientSecret: config.clientSecret!,
            audience: config.audience!,
          },
          http: http!,
          logger,
        });
        const client = new EventsClient({ baseUrl: config.baseUrl!, http: http!, tokens, logger });
        try {
          // Inside the try: whatever fails from here, the job's settings come back.
          await wh.run(`set memory_limit = '${EXTRACT_MEMORY_LIMIT}'`);
          await wh.run(`set disabled_compression_methods = '${EXTRACT_DISABLED_COMPRESSION}'`);
          setFlagsFromString(`--heap-growing-percent=${EXTRACT_V8_HEAP_GROWING_PERCENT}`);
          result.extract = await extractEvents({
            wh,
            client,
            baseUrl: config.baseUrl!,
            environment: config.environment,
            trialIds: config.trialId,
            eventTypes: config.eventType,
            ...(config.pageSize !== undefined ? { pageSize: config.pageSize } : {}),
            batchPages: config.batchPages,
            memoryLimits: { streaming: EXTRACT_MEMORY_LIMIT, fallback: config.memoryLimit },
            checkpointThresholds: { streaming: CHECKPOINT_THRESHOLD, smallBatch: EXTRACT_SMALL_BATCH_CHECKPOINT_THRESHOLD },
            runId,
            logger,
            ...signalOpt,
          });
        } finally {
          await restoreJobSettings();
        }
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('sites')) {
        const client = new SitesClient({ baseUrl: config.baseUrl!, origin: config.origin!, http: http!, logger });
        result.sites = await snapshotSites({
          wh,
          client,
          micrositeId: config.micrositeId!,
          trialIds: config.trialId,
          runId,
          logger,
          ...signalOpt,
        });
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('transform')) {
        failpoint('transform.before');
        result.transform = await runTransform(wh, { logger });
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('export')) {
        result.export = await exportParquet({ wh, exportDir: config.exportDir, runId, logger });
      }
      result.durationMs = Date.now() - started;
      await runLog.finish(runId, 'succeeded', counts(result), summary(result));
      // The copy is refreshed when the warehouse's data changed. `export` alone only reads
      // (its etl.runs row reaches the copy with the next run): republishing the whole file
      // after it doubled the export's time (bench at 1M: copy 1.1–1.6 s, export 0.6 s).
      if (wh.path !== ':memory:' && stages.some((s) => s !== 'export')) {
        result.publishedCopy = await publishReadOnlyCopy(wh, runId);
      } else if (wh.path !== ':memory:') {
        await wh.checkpoint();
      }
      logger.info(
        {
          runId,
          durationMs: result.durationMs,
          ...counts(result),
          ...(result.transform ? { dq: Object.fromEntries(result.transform.dq.map((d) => [d.check, d.count])) } : {}),
        },
        'run finished',
      );
      return result;
    } catch (err) {
      result.durationMs = Date.now() - started;
      const status = err instanceof InterruptedError || ctx.signal?.aborted ? 'interrupted' : 'failed';
      const line = err instanceof EtlError ? err.message : 'unexpected error';
      try {
        await runLog.finish(runId, status, counts(result), summary(result), line);
      } catch {
        // The warehouse itself may be what failed; the CLI still reports the original error.
      }
      throw err;
    }
  } finally {
    if (ownsHttp && http) await http.close();
    await wh.close();
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  const reason: unknown = signal.reason;
  throw reason instanceof InterruptedError ? reason : new InterruptedError('SIGTERM');
}

/**
 * Read the warehouse state for `status` (read-only; fails with exit 5 while a run holds the file).
 * @throws {LockError} {@link WarehouseError}
 */
export async function statusJob(config: Config): Promise<WarehouseStatus> {
  let wh: Warehouse;
  let note: string | undefined;
  try {
    wh = await Warehouse.open(config.db, { readOnly: true, memoryLimit: config.memoryLimit });
  } catch (err) {
    // A run holds the live file: show the copy published by the last successful run.
    const copy = publishedCopyPath(resolve(config.db));
    if (!(err instanceof LockError) || !existsSync(copy)) throw err;
    wh = await Warehouse.open(copy, { readOnly: true, memoryLimit: config.memoryLimit });
    note = `a run holds ${config.db}; showing the copy published by the last successful run`;
  }
  try {
    const status = await readStatus(wh);
    if (note) status.note = note;
    return status;
  } finally {
    await wh.close();
  }
}
