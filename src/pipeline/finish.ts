/**
 * How a run ends, in one place: recorded succeeded only after its checkpoint, published copy
 * and metrics file (docs/contracts.md "Guarantees", 2), or recorded failed / interrupted with
 * what its stages did; and the views of the run's one result ({@link JobResult}) that
 * `etl.runs`, the metrics file and the run summary keep.
 *
 * @module
 */
import { EtlError, InterruptedError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Progress, RunSummary } from '../log/progress.js';
import type { RunCounts, RunLog } from '../warehouse/RunLog.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { prepareReadOnlyCopy, type PreparedCopy, type PublishedCopy } from '../warehouse/publishCopy.js';
import { readWarehouseSeries } from '../metrics/warehouseSeries.js';
import { failpoint } from '../failpoints.js';
import { readerModes } from '../fs/readerFiles.js';
import type { JobContext, JobResult, RunFacts } from './job.js';
import type { RunParts, StageDef } from './stages.js';

/** A run under way: what its end needs. */
export interface RunState {
  ctx: JobContext;
  logger: Logger;
  wh: Warehouse;
  runLog: RunLog;
  progress: Progress;
  /** The stages planned, in order. */
  plan: readonly StageDef[];
  /** Start of the run, ms since the epoch. */
  started: number;
  result: JobResult;
}

/** The counts `etl.runs` keeps, read from the stages' records (a stopped extract: what its batches committed). */
function runCounts(r: JobResult): RunCounts {
  const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
  return {
    eventsLoaded: n(r.stages.extract?.['events']),
    pagesFetched: n(r.stages.extract?.['pages']),
    sitesLoaded: n(r.stages.sites?.['sites']),
    modelsBuilt: n(r.stages.transform?.['models']),
    filesExported: n(r.stages.export?.['files']),
  };
}

/** Wall time of each stage that started, ms (`etl.runs.summary.stageMs`; docs/incremental.md "Measuring a night"). */
function stageMs(r: JobResult): Record<string, number> {
  return Object.fromEntries(Object.entries(r.stages).map(([k, s]) => [k, s.durationMs]));
}

/** `etl.runs.summary`: what each stage did, in more detail than its counts. */
function runSummaryJson(r: JobResult): Record<string, unknown> {
  const { extract: e, transform: t, publish: p } = r;
  return {
    extract: e && {
      stream: e.streamId,
      pages: e.pages,
      events: e.eventsLoaded,
      duplicatesSkipped: e.duplicatesSkipped,
      quarantined: e.quarantined,
      streamEventCount: e.streamEventCount,
      resumed: e.resumed,
    },
    sites: r.sites,
    transform: t && {
      models: t.models.length,
      mode: t.mode,
      ...(t.fullReason ? { fullReason: t.fullReason } : {}),
      newDeliveries: t.newDeliveries,
      dq: t.dq,
    },
    stageMs: stageMs(r),
    export: r.export && { files: r.export.files.map((f) => ({ model: f.model, rows: f.rows })) },
    report: r.report && { file: r.report.path, bytes: r.report.bytes, trials: r.report.trials },
    publish: p && {
      schema: p.schema,
      snapshotId: p.snapshotId,
      events: p.events,
      models: p.models,
      merged: p.merged,
      compacted: p.compacted,
    },
  };
}

/** The data-quality counts and the cursor's age for the summary (this run's transform, else the `dq_summary` last built). */
async function summaryFacts(wh: Warehouse, r: JobResult): Promise<Pick<RunSummary, 'dq' | 'dqSource' | 'cursorAgeSeconds'>> {
  const facts: Pick<RunSummary, 'dq' | 'dqSource' | 'cursorAgeSeconds'> = { dq: null, dqSource: null, cursorAgeSeconds: null };
  try {
    if (r.transform) {
      facts.dq = Object.fromEntries(r.transform.dq.map((d) => [d.check, d.count]));
      facts.dqSource = 'this run';
    } else if (
      (
        await wh.one<{ n: bigint }>(
          "select count(*) as n from information_schema.tables where table_schema = 'main' and table_name = 'dq_summary'",
        )
      )?.n
    ) {
      const rows = await wh.all<{ check_name: string; issue_count: bigint | number }>(
        'select check_name, issue_count from main.dq_summary order by check_name',
      );
      facts.dq = Object.fromEntries(rows.map((x) => [x.check_name, Number(x.issue_count)]));
      facts.dqSource = 'last transform';
    }
    const age = await wh.one<{ age: number | null }>(
      "select epoch(now() - max(last_polled_at))::double as age from etl.streams where status = 'active'",
    );
    facts.cursorAgeSeconds = age?.age === null || age?.age === undefined ? null : Math.max(0, Math.round(age.age));
  } catch {
    // The warehouse may be what failed; the summary still reports the rest.
  }
  return facts;
}

/**
 * The end-of-run summary (docs/contracts.md "Progress and the run summary"), reported on the
 * run's progress. Best effort: a warehouse that fails here leaves its parts null.
 */
async function reportSummary(run: RunState, status: string, error?: string): Promise<void> {
  const r = run.result;
  const { dq, dqSource, cursorAgeSeconds } = await summaryFacts(run.wh, r);
  r.summary = {
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
  run.progress.summary(r.summary);
}

/** The stages' wall times and the warehouse's series (best effort: the warehouse may be what failed). */
async function runFacts(wh: Warehouse, r: JobResult): Promise<RunFacts> {
  const stageSeconds = Object.fromEntries(Object.entries(r.stages).map(([k, s]) => [k, s.durationMs / 1000]));
  try {
    return { stageSeconds, warehouse: await readWarehouseSeries(wh) };
  } catch {
    return { stageSeconds };
  }
}

/**
 * End a run whose stages all succeeded. The run is recorded as succeeded last (docs/contracts.md
 * "Guarantees", 2): the checkpoint, the published copy (which records the run succeeded in
 * itself), the metrics file, the copy renamed into place (the previous one kept aside), then
 * the live `etl.runs` row, then the kept copy removed.
 *
 * @throws the failure of any of those steps (the copy is then discarded; once in place, the
 *   previous copy is put back)
 */
export async function finishSucceeded(run: RunState): Promise<JobResult> {
  const { ctx, wh, result } = run;
  result.durationMs = Date.now() - run.started;
  const succeeded = (catalog?: string): Promise<void> =>
    run.runLog.finish(result.runId, 'succeeded', runCounts(result), runSummaryJson(result), undefined, result.stages, catalog);
  let copy: PreparedCopy | undefined;
  // The copy is refreshed when the warehouse's data changed. `export`, `report` and `publish`
  // alone only read (their etl.runs row reaches the copy with the next run); a copy costs more than an export.
  if (wh.path !== ':memory:' && run.plan.some((s) => s.writes)) {
    copy = await prepareReadOnlyCopy(wh, result.runId, readerModes(ctx.config.fileMode), succeeded);
  } else if (wh.path !== ':memory:') {
    await wh.checkpoint();
  }
  let published: PublishedCopy | undefined;
  try {
    ctx.onRecorded?.(runCounts(result), await runFacts(wh, result));
    failpoint('run.before-metrics');
    await ctx.beforeSucceeded?.();
    published = copy?.commit();
    if (published) result.publishedCopy = published.target;
  } catch (err) {
    copy?.discard();
    throw err;
  }
  try {
    failpoint('run.before-succeeded');
    await succeeded();
  } catch (err) {
    // The copy in place must not call the run succeeded: the previous one goes back.
    published?.revert();
    throw err;
  }
  published?.confirm();
  const dq = result.transform ? { dq: Object.fromEntries(result.transform.dq.map((d) => [d.check, d.count])) } : {};
  run.logger.info({ runId: result.runId, durationMs: result.durationMs, ...runCounts(result), ...dq }, 'run finished');
  await reportSummary(run, 'succeeded');
  return result;
}

/**
 * End a run a stage (or its setup) failed: record it `failed`, or `interrupted` once the
 * signal fired, with what its stages did, and report the summary.
 *
 * @returns the error to throw: `err`, or the signal's {@link InterruptedError}
 */
export async function finishFailed(run: RunState, err: unknown, parts: RunParts): Promise<unknown> {
  const { ctx, result } = run;
  result.durationMs = Date.now() - run.started;
  // After a signal, whatever failed (an interrupted statement, an aborted request) failed
  // because of it: the run is interrupted, and the CLI says so (exit 130 / 143).
  const failure = interruption(err, ctx.signal);
  const status = failure instanceof InterruptedError ? 'interrupted' : 'failed';
  const line = failure instanceof EtlError ? failure.message : 'unexpected error';
  try {
    const stopped = run.plan.find((s) => result.stages[s.name]?.failed);
    if (stopped?.countsIfStopped) Object.assign(result.stages[stopped.name]!, await stopped.countsIfStopped(parts));
    ctx.onRecorded?.(runCounts(result), await runFacts(run.wh, result));
    await run.runLog.finish(result.runId, status, runCounts(result), runSummaryJson(result), line, result.stages);
  } catch {
    // The warehouse itself may be what failed; the CLI still reports the original error.
  }
  await reportSummary(run, status, ctx.secrets ? ctx.secrets.scrub(line) : line);
  return failure;
}

/** `err`, or the signal's {@link InterruptedError} (with `err` as its cause) once the signal fired. */
function interruption(err: unknown, signal: AbortSignal | undefined): unknown {
  if (err instanceof InterruptedError || !signal?.aborted) return err;
  const reason: unknown = signal.reason;
  return new InterruptedError(reason instanceof InterruptedError ? reason.signal : 'SIGTERM', { cause: err });
}
