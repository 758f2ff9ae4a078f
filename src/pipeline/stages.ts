/**
 * The stages of the pipeline as data: one table ({@link STAGES}) says, per stage, which
 * commands run it, on what condition, what it needs, and the function that runs it. Every
 * stage function has one signature, `(ctx: StageContext) => Promise<StageOutcome>`; `runJob`
 * (src/pipeline/runJob.ts) walks the stages a command plans, times and records each once
 * (docs/architecture.md "src/pipeline: the stages as data").
 *
 * @module
 */
import type { Config, Need } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { StageProgress, StageSummary } from '../log/progress.js';
import type { SecretRegistry } from '../log/secrets.js';
import { extractEvents, type ExtractResult } from '../extract/extractEvents.js';
import { snapshotSites, type SnapshotSitesResult } from '../extract/snapshotSites.js';
import { exportParquet, type Manifest } from '../export/exportParquet.js';
import { runTransform, type TransformResult } from '../transform/runTransform.js';
import type { ReportResult } from '../report/writeReport.js';
import type { HttpClient } from '../upstream/http.js';
import { TokenProvider } from '../upstream/auth.js';
import { EventsClient } from '../upstream/events.js';
import { SitesClient } from '../upstream/sites.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { failpoint } from '../failpoints.js';
import { pipelineSchema, publishToLake, type PublishResult } from '../publish/lake.js';
import { readerModes } from '../fs/readerFiles.js';

/** Stages a job can run, in pipeline order. */
export type StageName = 'extract' | 'sites' | 'transform' | 'export' | 'report' | 'publish';

/** The commands that run stages (docs/contracts.md "Commands"). */
export type PipelineCommand = 'run' | 'extract' | 'sites' | 'transform' | 'export' | 'report' | 'publish';

/** What each stage returns, by stage name (one field per stage that ran). */
export interface StageResults {
  extract?: ExtractResult;
  sites?: SnapshotSitesResult;
  transform?: TransformResult;
  export?: Manifest;
  /** The HTML report written (docs/report.md). */
  report?: ReportResult;
  /** What the publish into the lake did (`--lake`; docs/lakehouse.md). */
  publish?: PublishResult;
}

/** A stage's counts, as the run summary and `etl.runs.stages` record them beside its wall time. */
export type StageCounts = Record<string, StageSummary[string]>;

/** What a stage returns: its result (one field of {@link StageResults}) and its counts. */
export interface StageOutcome {
  results: StageResults;
  counts: StageCounts;
}

/** The parts of a run its stages share. */
export interface RunParts {
  config: Config;
  logger: Logger;
  signal?: AbortSignal;
  secrets?: SecretRegistry;
  wh: Warehouse;
  runId: string;
  /** The run's HTTP client; set when a planned stage has `http` (see {@link StageDef}). */
  http?: HttpClient;
  /** Pages the extract's batches committed so far (counted when the extract stops early). */
  tally: { pages: number };
  /** Modules loaded ahead of their stage (see {@link StageDef.warmUp}). */
  warm: { report?: Promise<ReportModule> };
}

/** What a stage is given: the run's parts, and its own progress reporter. */
export interface StageContext extends RunParts {
  progress: StageProgress;
}

/** A row of the stage table. */
export interface StageDef {
  name: StageName;
  /** The commands whose job includes this stage. */
  commands: readonly PipelineCommand[];
  /** In these commands, the stage runs only when the option is set (its own command requires it). */
  onlyWith?: { option: 'micrositeId' | 'lake'; commands: readonly PipelineCommand[]; skipped?: string };
  /** The options the stage requires (src/config/config.ts `Need`), when it runs. */
  needs?: Need;
  /** True when the stage talks to the upstream API (the run then builds its HTTP client). */
  http?: boolean;
  /** True when the stage changes the warehouse's data (the run then refreshes the published copy). */
  writes?: boolean;
  run: (ctx: StageContext) => Promise<StageOutcome>;
  /** Counts of a stage that stopped early (failed or interrupted), added to its record. */
  countsIfStopped?: (run: RunParts) => Promise<StageCounts>;
  /** Start loading what the stage needs, once the HTTP stages are done (see `runJob`). */
  warmUp?: (run: RunParts) => void;
}

/**
 * DuckDB settings while the extract stage runs, set once around it (`docs/ingest.md`
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
 * every 16 MB of WAL (`docs/ingest.md` "Settings").
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
async function checkpointAfter<T>(wh: Warehouse, work: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (err) {
    await wh.checkpoint().catch(() => undefined);
    throw err;
  }
  await wh.checkpoint();
  return result;
}

/** The events client of the run: OAuth 2.0 client credentials over the run's HTTP client. */
function eventsClient(ctx: StageContext): EventsClient {
  const { config, logger } = ctx;
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
    http: ctx.http!,
    logger,
    secrets: ctx.secrets,
  });
  return new EventsClient({ baseUrl: config.baseUrl!, http: ctx.http!, tokens, logger });
}

/** `extract`: page every configured stream into raw.events (docs/ingest.md). */
async function extractStage(ctx: StageContext): Promise<StageOutcome> {
  const { config, wh } = ctx;
  const client = eventsClient(ctx);
  const r = await wh.withSettings(EXTRACT_SETTINGS, () =>
    checkpointAfter(wh, () =>
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
        runId: ctx.runId,
        logger: ctx.logger,
        progress: ctx.progress,
        onCommitted: (pages) => {
          ctx.tally.pages += pages;
        },
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      }),
    ),
  );
  const counts = {
    pages: r.pages,
    events: r.eventsLoaded,
    duplicatesSkipped: r.duplicatesSkipped,
    quarantined: r.quarantined,
    position: r.streamEventCount,
  };
  return { results: { extract: r }, counts };
}

/** An extract that stopped early returned no result: count what its batches committed (they commit one by one). */
async function extractCommitted(ctx: RunParts): Promise<StageCounts> {
  const row = await ctx.wh.one<{ n: bigint | number }>('select count(*) as n from raw.events where run_id = ?', [ctx.runId]);
  return { events: Number(row?.n ?? 0), pages: ctx.tally.pages };
}

/** `sites`: snapshot the study-website site lists into raw.site_snapshots. */
async function sitesStage(ctx: StageContext): Promise<StageOutcome> {
  const { config, logger } = ctx;
  const client = new SitesClient({ baseUrl: config.baseUrl!, origin: config.origin!, http: ctx.http!, logger });
  const r = await snapshotSites({
    wh: ctx.wh,
    client,
    micrositeId: config.micrositeId!,
    trialIds: config.trialId,
    runId: ctx.runId,
    logger,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  return { results: { sites: r }, counts: { sites: r.sites } };
}

/** `transform`: build the models of sql/models (docs/incremental.md). */
async function transformStage(ctx: StageContext): Promise<StageOutcome> {
  const { config } = ctx;
  failpoint('transform.before');
  const inputs = {
    ...(config.siteNames !== undefined ? { siteNames: config.siteNames } : {}),
    ...(config.trialTargets !== undefined ? { trialTargets: config.trialTargets } : {}),
  };
  const r = await ctx.wh.interruptible(ctx.signal, () =>
    runTransform(ctx.wh, { logger: ctx.logger, progress: ctx.progress, fullRefresh: config.fullRefresh, ...inputs }),
  );
  return { results: { transform: r }, counts: { models: r.models.length, seeds: r.seeds.length } };
}

/** `export`: the marts, dimensions and dq_ results as Parquet with manifest.json. */
async function exportStage(ctx: StageContext): Promise<StageOutcome> {
  const { config, wh } = ctx;
  const r = await wh.interruptible(ctx.signal, () =>
    exportParquet({
      wh,
      exportDir: config.exportDir,
      runId: ctx.runId,
      logger: ctx.logger,
      progress: ctx.progress,
      modes: readerModes(config.fileMode),
    }),
  );
  return { results: { export: r }, counts: { files: r.files.length } };
}

type ReportModule = typeof import('../report/writeReport.js');

/**
 * The report stage's module with its charting libraries (about 170 ms of the JavaScript thread
 * and some MiB of heap), loaded once per run: ahead of the stage while DuckDB transforms, not
 * during the extract, whose peak memory they would raise.
 */
function reportModule(ctx: RunParts): Promise<ReportModule> {
  if (!ctx.warm.report) {
    ctx.warm.report = import('../report/writeReport.js');
    ctx.warm.report.catch(() => undefined);
  }
  return ctx.warm.report;
}

/** `report`: <export-dir>/report.html from the marts (docs/report.md). */
async function reportStage(ctx: StageContext): Promise<StageOutcome> {
  const { config } = ctx;
  const { writeReport } = await reportModule(ctx);
  const r = await writeReport({
    wh: ctx.wh,
    exportDir: config.exportDir,
    worklistRows: config.reportWorklistRows,
    runId: ctx.runId,
    logger: ctx.logger,
    progress: ctx.progress,
    modes: readerModes(config.fileMode),
  });
  return { results: { report: r }, counts: { trials: r.trials, bytes: r.bytes } };
}

/** `publish`: the new raw events and the changed models into the lake (docs/lakehouse.md). */
async function publishStage(ctx: StageContext): Promise<StageOutcome> {
  const { config, wh } = ctx;
  const r = await wh.interruptible(ctx.signal, () =>
    publishToLake({
      wh,
      lake: config.lake!,
      ...(config.lakeDataPath !== undefined ? { dataPath: config.lakeDataPath } : {}),
      schema: pipelineSchema(config.lakeSchema, config.environment),
      environment: config.environment,
      pipelineMoved: config.lakePipelineMoved,
      runId: ctx.runId,
      logger: ctx.logger,
      progress: ctx.progress,
    }),
  );
  const counts = { events: r.events, models: r.models.length, merged: r.merged.length, snapshot: r.snapshotId };
  return { results: { publish: r }, counts };
}

/**
 * The stages in pipeline order (docs/contracts.md "Commands"): `run` runs them all, sites
 * only with `--microsite-id` and publish only with `--lake`; each other command its own.
 */
export const STAGES: readonly StageDef[] = [
  {
    name: 'extract',
    commands: ['run', 'extract'],
    needs: 'events',
    http: true,
    writes: true,
    run: extractStage,
    countsIfStopped: extractCommitted,
  },
  {
    name: 'sites',
    commands: ['run', 'sites'],
    onlyWith: { option: 'micrositeId', commands: ['run'], skipped: 'sites skipped: no --microsite-id configured' },
    needs: 'sites',
    http: true,
    writes: true,
    run: sitesStage,
  },
  { name: 'transform', commands: ['run', 'transform'], writes: true, run: transformStage },
  { name: 'export', commands: ['run', 'export'], run: exportStage },
  { name: 'report', commands: ['run', 'report'], run: reportStage, warmUp: (ctx) => void reportModule(ctx) },
  { name: 'publish', commands: ['run', 'publish'], onlyWith: { option: 'lake', commands: ['run'] }, needs: 'lake', run: publishStage },
];

/** The names of the stages `command` runs, before their conditions. */
export function stagesOf(command: PipelineCommand): StageName[] {
  return STAGES.filter((s) => s.commands.includes(command)).map((s) => s.name);
}

/** The options the stages' conditions read, as gathered or as resolved. */
type ConditionOptions = Readonly<Partial<Record<NonNullable<StageDef['onlyWith']>['option'], unknown>>>;

/** True when `def` runs in `command` given the options. */
function holds(def: StageDef, command: string, options: ConditionOptions): boolean {
  const cond = def.onlyWith;
  return cond === undefined || !cond.commands.includes(command as PipelineCommand) || options[cond.option] !== undefined;
}

/**
 * The option groups `command` requires, given the options as gathered (before validation):
 * `run` needs the sites options once a microsite id is set.
 */
export function commandNeeds(command: PipelineCommand, raw: Readonly<Record<string, unknown>>): Need[] {
  const needs = STAGES.filter((s) => s.commands.includes(command) && holds(s, command, raw)).flatMap((s) => (s.needs ? [s.needs] : []));
  return [...new Set(needs)];
}

/**
 * The rows of `names` that run in `command` under `config`, in pipeline order; a stage whose
 * condition does not hold is skipped (and logged when its row says so).
 */
export function planStages(command: string, names: readonly StageName[], config: Config, logger: Logger): StageDef[] {
  return STAGES.filter((s) => {
    if (!names.includes(s.name)) return false;
    if (holds(s, command, config)) return true;
    if (s.onlyWith?.skipped) logger.info({}, s.onlyWith.skipped);
    return false;
  });
}
