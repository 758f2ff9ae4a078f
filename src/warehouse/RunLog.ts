/**
 * The run log `etl.runs`: one row per command run, with counts and the error line.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { SecretRegistry } from '../log/secrets.js';
import type { Warehouse } from './Warehouse.js';

/** State of a run; `abandoned`: the process ended without recording an outcome (killed, or the warehouse failed, e.g. out of space, as it recorded it). */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'interrupted' | 'abandoned';

/** Counters recorded on a run. */
export interface RunCounts {
  eventsLoaded?: number;
  pagesFetched?: number;
  sitesLoaded?: number;
  modelsBuilt?: number;
  filesExported?: number;
}

/** A new run id: `YYYYMMDDTHHMMSSZ-xxxxxx` (UTC time + 6 hex), sortable by start time. */
export function newRunId(now: Date = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * Writes `etl.runs`. The error line and the summary are scrubbed of the run's secret values
 * before they are stored (docs/security.md): a row reaches `status` and the published copy.
 */
export class RunLog {
  /**
   * @param wh the open warehouse
   * @param secrets the run's secret values (optional: without it, text is stored as given)
   */
  constructor(
    private readonly wh: Warehouse,
    private readonly secrets?: SecretRegistry,
  ) {}

  /**
   * Record the start of a run. Runs still marked `running` belong to processes that died
   * (this process holds the only write lock): they become `abandoned`.
   */
  async start(runId: string, command: string, environment: string | null): Promise<void> {
    await this.wh.run(
      `update etl.runs set status = 'abandoned', error = 'the process ended without recording an outcome (killed, or the warehouse failed as it recorded it: see that run''s stderr)'
       where status = 'running'`,
    );
    await this.wh.run("insert into etl.runs (run_id, command, environment, started_at, status) values (?, ?, ?, now(), 'running')", [
      runId,
      command,
      environment,
    ]);
  }

  /**
   * Record the end of a run.
   * @param error the one-line error (free of payloads by construction; registered secret values are removed here), if it failed
   * @param stages per stage that started: `{ durationMs, failed?, …counts }` (column `stages`, migration 005)
   * @param catalog the attached database whose `etl.runs` is written (the published copy's; default the warehouse)
   */
  async finish(
    runId: string,
    status: RunStatus,
    counts: RunCounts,
    summary: unknown,
    error?: string,
    stages?: unknown,
    catalog?: string,
  ): Promise<void> {
    await this.wh.run(
      `update ${catalog === undefined ? '' : `${catalog}.`}etl.runs set finished_at = now(), status = ?, events_loaded = ?, pages_fetched = ?, sites_loaded = ?,
         models_built = ?, files_exported = ?, summary = ?::json, error = ?, stages = ?::json
       where run_id = ?`,
      [
        status,
        counts.eventsLoaded ?? 0,
        counts.pagesFetched ?? 0,
        counts.sitesLoaded ?? 0,
        counts.modelsBuilt ?? 0,
        counts.filesExported ?? 0,
        this.scrub(JSON.stringify(summary ?? {})),
        error === undefined ? null : this.scrub(error),
        JSON.stringify(stages ?? {}),
        runId,
      ],
    );
  }

  private scrub(text: string): string {
    return this.secrets ? this.secrets.scrub(text) : text;
  }
}
