/**
 * The jobs behind the CLI commands: each opens the warehouse once, records itself in
 * `etl.runs`, runs its stages and closes everything in `finally`. The CLI only parses
 * options and maps errors to exit codes (docs/architecture.md "A thin CLI over a library core").
 *
 * @module
 */
import { EtlError, InterruptedError, LockError } from '../errors.js';
import type { Config } from '../config/config.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { Progress, type RunSummary, type StageProgress, type StageSummary } from '../log/progress.js';
import type { SecretRegistry } from '../log/secrets.js';
import { extractEvents, type ExtractResult } from '../extract/extractEvents.js';
import { snapshotSites, type SnapshotSitesResult } from '../extract/snapshotSites.js';
import { exportParquet, type Manifest } from '../export/exportParquet.js';
import { runTransform, type TransformResult } from '../transform/runTransform.js';
import type { ReportResult } from '../report/writeReport.js';
import { HttpClient } from '../upstream/http.js';
import { TokenProvider } from '../upstream/auth.js';
import { EventsClient } from '../upstream/events.js';
import { SitesClient } from '../upstream/sites.js';
import { newRunId, RunLog, type RunCounts } from '../warehouse/RunLog.js';
import { Warehouse } from '../warehouse/Warehouse.js';
import { readStatus, type StreamStatus, type WarehouseStatus } from '../warehouse/readStatus.js';
import { StreamStore } from '../warehouse/StreamStore.js';
import { prepareReadOnlyCopy, publishedCopyPath, type PreparedCopy } from '../warehouse/publishCopy.js';
import { readWarehouseSeries, type WarehouseSeries } from '../metrics/warehouseSeries.js';
import { failpoint } from '../failpoints.js';
import { pipelineSchema, publishToLake, type PublishResult } from '../publish/lake.js';
import { readerModes } from '../fs/readerFiles.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * DuckDB settings while the extract stage runs, set once around it (`docs/performance.md`
 * "Settings"): a small memory cap (DuckDB loads a batch file row group by row group and needs
 * little of its memory, and it keeps blocks cached up to its limit), one thread (a batch file
 * is read in order; a second thread only spins beside the HTTP client and the page reader),
 * and no dictionary compression (event ids and JSON texts are all distinct: its analysis of
 * every row group costs time and never wins).
 */
export const EXTRACT_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  memory_limit: '24MB',
  threads: '1',
  disabled_compression_methods: 'dictionary,dict_fsst',
});

/**
 * DuckDB settings for a batch DuckDB holds in memory, in proportion to its size, until a
 * checkpoint (`BatchWriterOptions.heldBatchSettings`): a batch of wide events, and a batch
 * written again after its checks. It runs under the job's `--memory-limit` and checkpoints
 * every 16 MB of WAL (`docs/performance.md` "Settings").
 *
 * @param memoryLimit `--memory-limit`
 */
export function heldBatchSettings(memoryLimit: string): Record<string, string> {
  return { memory_limit: memoryLimit, checkpoint_threshold: '16MB' };
}

/**
 * Run `work`, then checkpoint under the same settings, also after a failure (best effort
 * then): the batches it committed reach the file without a vacuum, which a later checkpoint
 * under the session's settings would do (see {@link EXTRACT_SETTINGS}).
 */
async function checkpointAfter<T>(wh: Warehouse, work: Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work;
  } catch (err) {
    await wh.checkpoint().catch(() => undefined);
    throw err;
  }
  await wh.checkpoint();
  return result;
}

/** Stages a job can run, in pipeline order. */
export type Stage = 'extract' | 'sites' | 'transform' | 'export' | 'report' | 'publish';

/** Dependencies a job can be given (tests inject them; the CLI builds the defaults). */
export interface JobContext {
  config: Config;
  logger?: Logger;
  signal?: AbortSignal;
  /** HTTP dispatcher options for tests (e.g. short timeouts). */
  http?: HttpClient;
  /** The run's secret values (`docs/security.md`); the CLI passes its registry. */
  secrets?: SecretRegistry;
  /**
   * Progress and summary reporting (src/log/progress.ts); default: log lines only, every
   * `config.progressInterval` seconds. The CLI passes one with stderr as its terminal.
   */
  progress?: Progress;
  /** Told the counts recorded in `etl.runs` when the run ends, whatever its outcome, and the series of the CLI's metrics file. */
  onRecorded?: (counts: RunCounts, facts: RunFacts) => void;
  /**
   * Called when the run's work is done (checkpoint and published copy included, the copy not
   * yet renamed into place), just before `etl.runs` records it as succeeded: the CLI writes the
   * metrics file with exit 0. A throw fails the run (recorded `failed`, the copy discarded).
   */
  beforeSucceeded?: () => Promise<void>;
}

/** What the metrics file reports about a run (docs/contracts.md "Metrics"). */
export interface RunFacts {
  /** Wall time of each stage that started, seconds. */
  stageSeconds: Record<string, number>;
  /** The warehouse's series (absent when the warehouse could not be read). */
  warehouse?: WarehouseSeries;
}

/** What a job did: one entry per stage that ran. */
export interface JobResult {
  runId: string;
  command: string;
  extract?: ExtractResult;
  sites?: SnapshotSitesResult;
  transform?: TransformResult;
  export?: Manifest;
  /** The HTML report written (docs/report.md). */
  report?: ReportResult;
  /** What the publish into the lake did (`--lake`; docs/lakehouse.md). */
  publish?: PublishResult;
  /** The read-only copy published for analysts after a successful run that changed data (not `export` alone). */
  publishedCopy?: string;
  durationMs: number;
  /** Per stage that started: its wall time and counts (also `etl.runs.stages`). */
  stages: Partial<Record<Stage, StageSummary>>;
  /** Wall time of each stage that ran, milliseconds (docs/incremental.md "Measuring a night"). */
  stageMs: Partial<Record<Stage, number>>;
  /** The summary reported at the end (docs/contracts.md "Progress and the run summary"). */
  summary?: RunSummary;
}

/** The counts of a stage for the summary and `etl.runs.stages`. */
function stageCounts(r: JobResult, stage: Stage): Record<string, number> {
  switch (stage) {
    case 'extract':
      return r.extract
        ? { pages: r.extract.pages, events: r.extract.eventsLoaded, duplicatesSkipped: r.extract.duplicatesSkipped, quarantined: r.extract.quarantined, position: r.extract.streamEventCount }
        : {};
    case 'sites':
      return r.sites ? { sites: r.sites.sites } : {};
    case 'transform':
      return r.transform ? { models: r.transform.models.length, seeds: r.transform.seeds.length } : {};
    case 'export':
      return r.export ? { files: r.export.files.length } : {};
    case 'report':
      return r.report ? { trials: r.report.trials, bytes: r.report.bytes } : {};
    case 'publish':
      return r.publish ? { events: r.publish.events, models: r.publish.models.length, merged: r.publish.merged.length, snapshot: r.publish.snapshotId } : {};
  }
}

/**
 * The end-of-run summary: what `result` holds, the data-quality counts (this run's
 * transform, else the `dq_summary` last built) and the cursor's age. Best effort: a
 * warehouse that fails here leaves those parts null.
 */
async function buildSummary(wh: Warehouse, r: JobResult, status: string, error?: string): Promise<RunSummary> {
  let dq: Record<string, number> | null = null;
  let dqSource: RunSummary['dqSource'] = null;
  let cursorAgeSeconds: number | null = null;
  try {
    if (r.transform) {
      dq = Object.fromEntries(r.transform.dq.map((d) => [d.check, d.count]));
      dqSource = 'this run';
    } else if ((await wh.one<{ n: bigint }>("select count(*) as n from information_schema.tables where table_schema = 'main' and table_name = 'dq_summary'"))?.n) {
      const rows = await wh.all<{ check_name: string; issue_count: bigint | number }>('select check_name, issue_count from main.dq_summary order by check_name');
      dq = Object.fromEntries(rows.map((x) => [x.check_name, Number(x.issue_count)]));
      dqSource = 'last transform';
    }
    const age = await wh.one<{ age: number | null }>("select epoch(now() - max(last_polled_at))::double as age from etl.streams where status = 'active'");
    cursorAgeSeconds = age?.age === null || age?.age === undefined ? null : Math.max(0, Math.round(age.age));
  } catch {
    // The warehouse may be what failed; the summary still reports the rest.
  }
  return {
    runId: r.runId,
    command: r.command,
    status,
    durationMs: r.durationMs,
    stages: r.stages,
    quarantined: r.extract?.quarantined ?? 0,
    dq,
    dqSource,
    cursorAgeSeconds,
    ...(error !== undefined ? { error } : {}),
  };
}

/** The stages' wall times and the warehouse's series (best effort: the warehouse may be what failed). */
async function runFacts(wh: Warehouse, r: JobResult): Promise<RunFacts> {
  const stageSeconds = Object.fromEntries(Object.entries(r.stageMs).map(([k, ms]) => [k, ms / 1000]));
  try {
    return { stageSeconds, warehouse: await readWarehouseSeries(wh) };
  } catch {
    return { stageSeconds };
  }
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
      quarantined: r.extract.quarantined,
      streamEventCount: r.extract.streamEventCount,
      resumed: r.extract.resumed,
    },
    sites: r.sites,
    transform: r.transform && {
      models: r.transform.models.length,
      mode: r.transform.mode,
      ...(r.transform.fullReason ? { fullReason: r.transform.fullReason } : {}),
      newDeliveries: r.transform.newDeliveries,
      dq: r.transform.dq,
    },
    stageMs: r.stageMs,
    export: r.export && { files: r.export.files.map((f) => ({ model: f.model, rows: f.rows })) },
    report: r.report && { file: r.report.path, bytes: r.report.bytes, trials: r.report.trials },
    publish: r.publish && { schema: r.publish.schema, snapshotId: r.publish.snapshotId, events: r.publish.events, models: r.publish.models, merged: r.publish.merged, compacted: r.publish.compacted },
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
  const result: JobResult = { runId, command, durationMs: 0, stages: {}, stageMs: {} };
  const progress = ctx.progress ?? new Progress({ logger, intervalSeconds: config.progressInterval });
  /** Run one stage with its progress reporter, recording its wall time and counts. */
  const stage = async <T>(name: Stage, fn: (p: StageProgress) => Promise<T>): Promise<T> => {
    const p = progress.start(name);
    const t0 = Date.now();
    let failed = true;
    try {
      const value = await fn(p);
      failed = false;
      return value;
    } finally {
      p.end();
      result.stageMs[name] = Date.now() - t0;
      result.stages[name] = { durationMs: result.stageMs[name], ...(failed ? { failed: true } : {}) };
    }
  };
  /** Add each stage's counts to its wall time (once the stage's result is assigned). */
  const stagesWithCounts = (): JobResult['stages'] => {
    for (const [name, st] of Object.entries(result.stages) as [Stage, StageSummary][]) Object.assign(st, stageCounts(result, name));
    return result.stages;
  };
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  const ownsHttp = ctx.http === undefined;
  let http: HttpClient | undefined = ctx.http;
  let committed = 0;
  let committedPages = 0;
  /** The report stage's module with its charting libraries, loaded once the extract is done (src/report). */
  let reportModule: Promise<typeof import('../report/writeReport.js')> | undefined;
  try {
    await wh.migrate();
    const runLog = new RunLog(wh, ctx.secrets);
    await runLog.start(runId, command, config.environment);
    logger.info({ runId, command, stages }, 'run started');
    try {
      const needsHttp = stages.includes('extract') || stages.includes('sites');
      if (needsHttp && !http) {
        http = new HttpClient({
          logger,
          policy: {
            maxRetryAfterMs: config.maxRetryAfter * 1000,
            bodyTotalTimeoutMs: config.bodyTimeout * 1000,
            maxResponseBytes: config.maxPageBytes,
            ...(config.deadline !== undefined ? { deadlineMs: Date.now() + config.deadline * 1000 } : {}),
          },
        });
      }
      const signalOpt = ctx.signal ? { signal: ctx.signal } : {};
      if (stages.includes('extract')) {
        const tokens = new TokenProvider({
          credentials: {
            authUrl: config.authUrl!,
            clientId: config.clientId!,
            clientSecret: config.clientSecret!,
            audience: config.audience!,
            requestFormat: config.tokenRequestFormat,
            clientAuth: config.tokenClientAuth,
            audienceParameter: config.tokenAudienceParameter,
          },
          http: http!,
          logger,
          secrets: ctx.secrets,
        });
        const client = new EventsClient({ baseUrl: config.baseUrl!, http: http!, tokens, logger });
        result.extract = await stage('extract', (p) => wh.withSettings(EXTRACT_SETTINGS, () => checkpointAfter(wh,
          extractEvents({
            wh,
            client,
            baseUrl: config.baseUrl!,
            environment: config.environment,
            trialIds: config.trialId,
            eventTypes: config.eventType,
            ...(config.pageSize !== undefined ? { pageSize: config.pageSize } : {}),
            batchPages: config.batchPages,
            maxEmptyPages: config.maxEmptyPages,
            heldBatchSettings: heldBatchSettings(config.memoryLimit),
            runId,
            logger,
            progress: p,
            onCommitted: (pages) => { committedPages += pages; },
            ...signalOpt,
          }),
        )));
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('sites')) {
        const client = new SitesClient({ baseUrl: config.baseUrl!, origin: config.origin!, http: http!, logger });
        result.sites = await stage('sites', () => snapshotSites({
          wh,
          client,
          micrositeId: config.micrositeId!,
          trialIds: config.trialId,
          runId,
          logger,
          ...signalOpt,
        }));
      }
      throwIfAborted(ctx.signal);
      // The charting libraries (about 170 ms of the JavaScript thread and some MiB of heap) load
      // while DuckDB transforms: not during the extract, whose peak memory they would raise.
      if (stages.includes('report')) {
        reportModule = import('../report/writeReport.js');
        reportModule.catch(() => undefined);
      }
      if (stages.includes('transform')) {
        failpoint('transform.before');
        result.transform = await stage('transform', (p) =>
          wh.interruptible(ctx.signal, () => runTransform(wh, { logger, progress: p, fullRefresh: config.fullRefresh, ...(config.siteNames !== undefined ? { siteNames: config.siteNames } : {}), ...(config.trialTargets !== undefined ? { trialTargets: config.trialTargets } : {}) })),
        );
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('export')) {
        result.export = await stage('export', (p) =>
          wh.interruptible(ctx.signal, () => exportParquet({ wh, exportDir: config.exportDir, runId, logger, progress: p, modes: readerModes(config.fileMode) })),
        );
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('report')) {
        const { writeReport } = await (reportModule ?? import('../report/writeReport.js'));
        result.report = await stage('report', (p) =>
          writeReport({ wh, exportDir: config.exportDir, worklistRows: config.reportWorklistRows, runId, logger, progress: p, modes: readerModes(config.fileMode) }),
        );
      }
      throwIfAborted(ctx.signal);
      if (stages.includes('publish') && config.lake !== undefined) {
        const lake = config.lake;
        result.publish = await stage('publish', (p) =>
          wh.interruptible(ctx.signal, () =>
            publishToLake({
              wh,
              lake,
              ...(config.lakeDataPath !== undefined ? { dataPath: config.lakeDataPath } : {}),
              schema: pipelineSchema(config.lakeSchema, config.environment),
              environment: config.environment,
              pipelineMoved: config.lakePipelineMoved,
              runId,
              logger,
              progress: p,
            }),
          ),
        );
      }
      // The run is recorded as succeeded last (docs/contracts.md "Guarantees"): after the
      // checkpoint, the published copy (which records it so itself) and the metrics file.
      result.durationMs = Date.now() - started;
      const recordedStages = stagesWithCounts();
      const succeeded = (catalog?: string): Promise<void> => runLog.finish(runId, 'succeeded', counts(result), summary(result), undefined, recordedStages, catalog);
      let copy: PreparedCopy | undefined;
      // The copy is refreshed when the warehouse's data changed. `export`, `report` and `publish`
      // alone only read (their etl.runs row reaches the copy with the next run); a copy costs more than an export.
      if (wh.path !== ':memory:' && stages.some((s) => s !== 'export' && s !== 'report' && s !== 'publish')) {
        copy = await prepareReadOnlyCopy(wh, runId, readerModes(config.fileMode), succeeded);
      } else if (wh.path !== ':memory:') {
        await wh.checkpoint();
      }
      try {
        ctx.onRecorded?.(counts(result), await runFacts(wh, result));
        failpoint('run.before-metrics');
        await ctx.beforeSucceeded?.();
        if (copy) result.publishedCopy = copy.commit();
      } catch (err) {
        copy?.discard();
        throw err;
      }
      failpoint('run.before-succeeded');
      await succeeded();
      logger.info(
        {
          runId,
          durationMs: result.durationMs,
          ...counts(result),
          ...(result.transform ? { dq: Object.fromEntries(result.transform.dq.map((d) => [d.check, d.count])) } : {}),
        },
        'run finished',
      );
      result.summary = await buildSummary(wh, result, 'succeeded');
      progress.summary(result.summary);
      return result;
    } catch (err) {
      result.durationMs = Date.now() - started;
      // After a signal, whatever failed (an interrupted statement, an aborted request) failed
      // because of it: the run is interrupted, and the CLI says so (exit 130 / 143).
      const failure = interruption(err, ctx.signal);
      const status = failure instanceof InterruptedError ? 'interrupted' : 'failed';
      const line = failure instanceof EtlError ? failure.message : 'unexpected error';
      try {
        // An extract that stopped early returned no result: count what its batches committed.
        if (result.extract === undefined && stages.includes('extract')) committed = await committedEvents(wh, runId);
        if (result.extract === undefined && result.stages.extract) Object.assign(result.stages.extract, { events: committed, pages: committedPages });
        const recorded = {
          ...counts(result),
          eventsLoaded: result.extract?.eventsLoaded ?? committed,
          pagesFetched: result.extract?.pages ?? committedPages,
        };
        ctx.onRecorded?.(recorded, await runFacts(wh, result));
        await runLog.finish(runId, status, recorded, summary(result), line, stagesWithCounts());
      } catch {
        // The warehouse itself may be what failed; the CLI still reports the original error.
      }
      stagesWithCounts();
      result.summary = await buildSummary(wh, result, status, ctx.secrets ? ctx.secrets.scrub(line) : line);
      progress.summary(result.summary);
      throw failure;
    }
  } finally {
    if (ownsHttp && http) await http.close();
    await wh.close();
  }
}

/** `err`, or the signal's {@link InterruptedError} (with `err` as its cause) once the signal fired. */
function interruption(err: unknown, signal: AbortSignal | undefined): unknown {
  if (err instanceof InterruptedError || !signal?.aborted) return err;
  const reason: unknown = signal.reason;
  return new InterruptedError(reason instanceof InterruptedError ? reason.signal : 'SIGTERM', { cause: err });
}

/** Events of `raw.events` the run committed (its batches commit one by one). */
async function committedEvents(wh: Warehouse, runId: string): Promise<number> {
  const row = await wh.one<{ n: bigint | number }>('select count(*) as n from raw.events where run_id = ?', [runId]);
  return Number(row?.n ?? 0);
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  const reason: unknown = signal.reason;
  throw reason instanceof InterruptedError ? reason : new InterruptedError('SIGTERM');
}

/**
 * Read the warehouse state for `status` (read-only). While a run holds the live file, the
 * copy published by the last successful run is read instead, and the status says so
 * (`source: "published copy"`, `note`; docs/contracts.md "status --json").
 * @throws {LockError} a run holds the file and no copy was published yet (exit 5)
 * @throws {WarehouseError} the file cannot be read (exit 7)
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
    if (note) {
      status.source = 'published copy';
      status.note = note;
    }
    return status;
  } finally {
    await wh.close();
  }
}

/**
 * `recruit-etl streams reset <stream-id>`: start a stream again from the first page
 * (docs/contracts.md "Streams"); the old stream is retired and its rows stay.
 * @returns the new stream's status line
 * @throws {ConfigError} no such stream, {@link LockError} a run holds the file, {@link WarehouseError}
 */
export async function resetStreamJob(config: Config, streamId: string, logger: Logger): Promise<StreamStatus> {
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  try {
    await wh.migrate();
    const state = await new StreamStore(wh).reset(streamId);
    logger.debug({ retired: streamId, stream: state.streamId }, 'stream reset: the next extract of its filter starts from the first page');
    const status = await readStatus(wh);
    const line = status.streams.find((s) => s.streamId === state.streamId);
    if (!line) throw new Error(`stream ${state.streamId} vanished`);
    return line;
  } finally {
    await wh.close();
  }
}
