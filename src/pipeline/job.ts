/**
 * The shapes of a job: what it is given ({@link JobContext}) and what it returns
 * ({@link JobResult}), apart from src/pipeline/runJob.ts so that src/pipeline/finish.ts can
 * name them without importing the module that imports it.
 *
 * @module
 */
import type { Config } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { Progress, RunSummary, StageSummary } from '../log/progress.js';
import type { SecretRegistry } from '../log/secrets.js';
import type { HttpClient } from '../upstream/http.js';
import type { RunCounts } from '../warehouse/RunLog.js';
import type { WarehouseSeries } from '../metrics/warehouseSeries.js';
import type { StageName, StageResults } from './stages.js';

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

/** What a job did: the result of each stage that ran, and the record of each stage that started. */
export interface JobResult extends StageResults {
  runId: string;
  command: string;
  /** The read-only copy published for analysts after a successful run that changed data (not `export` alone). */
  publishedCopy?: string;
  /** Wall time of the run, ms. */
  durationMs: number;
  /** Per stage that started: its wall time (ms), `failed`, and its counts (also `etl.runs.stages`). */
  stages: Partial<Record<StageName, StageSummary>>;
  /** The summary reported at the end (docs/contracts.md "Progress and the run summary"). */
  summary?: RunSummary;
}
