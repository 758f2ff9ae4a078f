/**
 * What `recruit-etl status` shows: freshness, streams with their cursors, the last runs with
 * their durations and counts, data-quality counts, row counts and the funnel per trial.
 * `status --json` prints {@link WarehouseStatus} as is: a stable interface
 * (docs/contracts.md "status --json"); fields are added, never renamed or removed, without
 * a new {@link STATUS_VERSION}.
 *
 * @module
 */
import type { CatalogModel } from '../catalog/catalog.js';
import { newerWarehouseMessage, type Warehouse } from './Warehouse.js';

/** Version of the `status --json` document (docs/contracts.md "status --json"). */
export const STATUS_VERSION = 1;

/** One stream line of the status. */
export interface StreamStatus {
  streamId: string;
  name: string;
  /** `active` or `retired`. */
  status: string;
  environment: string;
  /** The API origin the stream reads (`https://api.example.org`): streams that differ only by a mistyped `--base-url` differ here. */
  origin: string;
  /** Rows on the stream (its last stream position). */
  events: number;
  /** Events of the stream stored in their quarantined form (`docs/ingest.md` "Quarantine"). */
  quarantined: number;
  /** The server's `hasNextPage` on the last page stored (null: never polled). */
  hasNextPage: boolean | null;
  /**
   * `caught up`: the last page stored said there was no next page; `behind`: it said there
   * was (a run stopped before the end); `never polled`.
   */
  cursorState: 'caught up' | 'behind' | 'never polled';
  /** Seconds since the cursor was last stored (null: never polled). */
  cursorAgeSeconds: number | null;
  lastPolledAt: string | null;
  /** The last stream position the models were built from (docs/incremental.md); null: never transformed. */
  transformedPosition: number | null;
}

/** Per stage that started: wall time in ms, `failed`, and its counts (`etl.runs.stages`). */
export type RunStages = Record<string, { durationMs: number; failed?: boolean; [count: string]: unknown }>;

/** One run line of the status. */
export interface RunStatusLine {
  runId: string;
  command: string;
  /** `running`, `succeeded`, `failed`, `interrupted` or `abandoned`. */
  status: string;
  startedAt: string;
  finishedAt: string | null;
  /** Wall time of the run in seconds (null while running or abandoned). */
  durationSeconds: number | null;
  eventsLoaded: number;
  pagesFetched: number;
  sitesLoaded: number;
  modelsBuilt: number;
  filesExported: number;
  /** Per-stage durations and counts (null for runs recorded before they were kept). */
  stages: RunStages | null;
  error: string | null;
}

/** How fresh the warehouse is. Timestamps are ISO 8601 UTC; ages in seconds. */
export interface Freshness {
  /** The last run that succeeded (any pipeline command). */
  lastSuccessfulRun: { runId: string; command: string; finishedAt: string; ageSeconds: number } | null;
  /** The last succeeded `run` or `extract`: when the warehouse last caught up with the upstream. */
  lastSuccessfulExtract: { runId: string; command: string; finishedAt: string; ageSeconds: number } | null;
  /** The newest `publishedTime` among the stored events (informational: the upstream's clock). */
  newestEventPublishedAt: string | null;
  /** Seconds since an active stream's cursor was last stored (the oldest of them). */
  cursorAgeSeconds: number | null;
}

/** One trial of the funnel: counts summed from `mart_recruitment_funnel` (docs/models.md). */
export interface FunnelRow {
  trial: string;
  referrals: number;
  pre_screening: number;
  visit_scheduled: number;
  screening: number;
  enrolled: number;
}

/**
 * One model of the catalog (src/catalog/catalog.ts) and whether the warehouse holds it: a
 * model missing here was added by a newer build and no transform has run since.
 */
export interface ModelStatus {
  name: string;
  /** `stg`, `int`, `fct`, `dim`, `mart` or `dq`; null for a name without a known prefix. */
  layer: string | null;
  /** `table`, `view` or `incremental`. */
  materialized: string;
  /** Exported as Parquet and published to the lake (docs/exports.md). */
  exported: boolean;
  /** The relation exists in schema `main`. */
  built: boolean;
  /** Rows of a built model (a view's computed at read); null when not built. */
  rows: number | null;
}

/** The whole status (`status --json`). */
export interface WarehouseStatus {
  /** {@link STATUS_VERSION}. */
  version: number;
  /** The file read. */
  path: string;
  /** `live`: the warehouse itself; `published copy`: the read-only copy, while a run holds the live file. */
  source: 'live' | 'published copy';
  /** Why the status shows something other than the live file, if it does. */
  note?: string;
  /**
   * Present when a newer build migrated the warehouse (a schema version this build does not
   * know): what wrote it. `status` still reads it (read-only); every writing command refuses it.
   */
  warning?: string;
  freshness: Freshness;
  streams: StreamStatus[];
  runs: RunStatusLine[];
  /** `dq_summary` as last built: issue count per check (null: no models yet). */
  dataQuality: Record<string, number> | null;
  rows: Record<string, number>;
  /** Every model of this build's catalog, in its file order, and whether it is built. */
  models: ModelStatus[];
  /**
   * Per trial, patients with a created event and how many ever reached each stage: the sums
   * of `mart_recruitment_funnel` (absent until the models exist). Orphans (events of a
   * patient with no created event) are not in it; `dataQuality.dq_orphan_events` counts them.
   */
  funnel?: FunnelRow[];
}

/** Whether `schema.table` exists (a warehouse of any age: tables are added by migrations and models). */
export async function tableExists(wh: Warehouse, schema: string, table: string): Promise<boolean> {
  const r = await wh.one<{ n: bigint }>('select count(*) as n from information_schema.tables where table_schema = ? and table_name = ?', [
    schema,
    table,
  ]);
  return (r?.n ?? 0n) > 0n;
}

/**
 * SQL expression of the quarantined events of the `etl.streams s` row in a query (docs/ingest.md
 * "Quarantine"): `0` when `raw.quarantined_events` does not exist yet.
 */
export async function quarantinedCountSql(wh: Warehouse): Promise<string> {
  return (await tableExists(wh, 'raw', 'quarantined_events'))
    ? '(select count(*) from raw.quarantined_events q where q.stream_id = s.stream_id)'
    : '0';
}

/** Issue count per data-quality check from `main.dq_summary`; null until the models made it. */
export async function readDataQuality(wh: Warehouse): Promise<Record<string, number> | null> {
  if (!(await tableExists(wh, 'main', 'dq_summary'))) return null;
  const dq = await wh.all<{ check_name: string; issue_count: bigint | number }>(
    'select check_name, issue_count from main.dq_summary order by check_name',
  );
  return Object.fromEntries(dq.map((d) => [d.check_name, Number(d.issue_count)]));
}

async function columnExists(wh: Warehouse, schema: string, table: string, column: string): Promise<boolean> {
  const r = await wh.one<{ n: bigint }>(
    'select count(*) as n from information_schema.columns where table_schema = ? and table_name = ? and column_name = ?',
    [schema, table, column],
  );
  return (r?.n ?? 0n) > 0n;
}

const ISO = "'%Y-%m-%dT%H:%M:%SZ'";

/** The funnel per trial: the mart's own counts, summed over sites and weeks (additive by design). */
async function readFunnel(wh: Warehouse): Promise<FunnelRow[] | undefined> {
  if (!(await tableExists(wh, 'main', 'mart_recruitment_funnel'))) return undefined;
  const rows = await wh.all<Record<string, string | bigint | number>>(
    `select trial_id as trial, sum(referrals)::bigint as referrals, sum(reached_pre_screening)::bigint as pre_screening,
            sum(reached_visit_scheduled)::bigint as visit_scheduled, sum(reached_screening)::bigint as screening,
            sum(reached_enrolled)::bigint as enrolled
     from main.mart_recruitment_funnel group by trial_id order by trial_id`,
  );
  return rows.map((r) => ({
    trial: String(r['trial']),
    referrals: Number(r['referrals']),
    pre_screening: Number(r['pre_screening']),
    visit_scheduled: Number(r['visit_scheduled']),
    screening: Number(r['screening']),
    enrolled: Number(r['enrolled']),
  }));
}

async function lastSucceeded(wh: Warehouse, commands: readonly string[] | null): Promise<Freshness['lastSuccessfulRun']> {
  const filter = commands ? `and command in (${commands.map((c) => `'${c}'`).join(', ')})` : '';
  const r = await wh.one<{ run_id: string; command: string; finished_at: string; age: number }>(
    `select run_id, command, strftime(finished_at, ${ISO}) as finished_at, epoch(now() - finished_at)::double as age
     from etl.runs where status = 'succeeded' ${filter} order by finished_at desc limit 1`,
  );
  return r ? { runId: r.run_id, command: r.command, finishedAt: r.finished_at, ageSeconds: Math.max(0, Math.round(r.age)) } : null;
}

/** Every stream with its counts and cursor state (quarantine and watermark columns when their tables exist). */
async function readStreams(wh: Warehouse): Promise<StreamStatus[]> {
  const quarantined = await quarantinedCountSql(wh);
  const streams = await wh.all<{
    stream_id: string;
    name: string;
    status: string;
    environment: string;
    api_origin: string;
    event_count: bigint;
    has_next_page: boolean | null;
    age: number | null;
    last_polled_at: string | null;
    quarantined: bigint | null;
    transformed: bigint | null;
  }>(
    `select stream_id, name, status, environment, api_origin, event_count, has_next_page, ${quarantined} as quarantined,
            ${(await tableExists(wh, 'etl', 'transform_watermarks')) ? '(select max(w.stream_position) from etl.transform_watermarks w where w.stream_id = s.stream_id)' : 'null'} as transformed,
            epoch(now() - last_polled_at)::double as age, strftime(last_polled_at, ${ISO}) as last_polled_at
     from etl.streams s order by status, created_at desc`,
  );
  return streams.map((s) => ({
    streamId: s.stream_id,
    name: s.name,
    status: s.status,
    environment: s.environment,
    origin: s.api_origin,
    events: Number(s.event_count),
    quarantined: Number(s.quarantined ?? 0),
    hasNextPage: s.has_next_page,
    cursorState: s.last_polled_at === null ? 'never polled' : s.has_next_page ? 'behind' : 'caught up',
    cursorAgeSeconds: s.age === null ? null : Math.max(0, Math.round(s.age)),
    lastPolledAt: s.last_polled_at,
    transformedPosition: s.transformed === null ? null : Number(s.transformed),
  }));
}

/** The last `runs` runs, newest first (`stages` when the column exists). */
async function readRuns(wh: Warehouse, runs: number): Promise<RunStatusLine[]> {
  const hasStages = await columnExists(wh, 'etl', 'runs', 'stages');
  const runRows = await wh.all<{
    run_id: string;
    command: string;
    status: string;
    started_at: string;
    finished_at: string | null;
    duration: number | null;
    events_loaded: bigint;
    pages_fetched: bigint;
    sites_loaded: bigint;
    models_built: bigint;
    files_exported: bigint;
    stages: string | null;
    error: string | null;
  }>(
    `select run_id, command, status, strftime(started_at, ${ISO}) as started_at, strftime(finished_at, ${ISO}) as finished_at,
            case when status <> 'abandoned' then epoch(finished_at - started_at)::double end as duration,
            events_loaded, pages_fetched, sites_loaded, models_built, files_exported,
            ${hasStages ? 'stages::varchar' : 'null'} as stages, error
     from etl.runs order by started_at desc limit ?`,
    [runs],
  );
  return runRows.map((r) => ({
    runId: r.run_id,
    command: r.command,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    durationSeconds: r.duration === null ? null : Math.round(r.duration * 10) / 10,
    eventsLoaded: Number(r.events_loaded),
    pagesFetched: Number(r.pages_fetched),
    sitesLoaded: Number(r.sites_loaded),
    modelsBuilt: Number(r.models_built),
    filesExported: Number(r.files_exported),
    stages: r.stages === null ? null : (JSON.parse(r.stages) as RunStages),
    error: r.error,
  }));
}

/**
 * Which of `models` schema `main` holds, and the rows of each (a view's computed now; null
 * when it cannot be computed, e.g. a view over a table a newer build dropped).
 */
async function readModels(wh: Warehouse, models: readonly CatalogModel[]): Promise<ModelStatus[]> {
  const present = new Set(
    (await wh.all<{ name: string }>("select table_name as name from information_schema.tables where table_schema = 'main'")).map(
      (r) => r.name,
    ),
  );
  const out: ModelStatus[] = [];
  for (const m of models) {
    const built = present.has(m.name);
    let rows: number | null = null;
    if (built) {
      try {
        rows = Number((await wh.one<{ n: bigint }>(`select count(*) as n from main."${m.name.replaceAll('"', '""')}"`))?.n ?? 0n);
      } catch {
        rows = null;
      }
    }
    out.push({ name: m.name, layer: m.layer ?? null, materialized: m.materialized, exported: m.exported, built, rows });
  }
  return out;
}

/**
 * Read the status (no writes). Works on a warehouse of any age: parts whose tables or
 * columns do not exist yet are empty or null.
 *
 * @param models the catalog's models ({@link ModelStatus}); none by default
 * @param runs how many recent runs to list (default 10)
 */
export async function readStatus(wh: Warehouse, models: readonly CatalogModel[] = [], runs = 10): Promise<WarehouseStatus> {
  const status: WarehouseStatus = {
    version: STATUS_VERSION,
    path: wh.path,
    source: 'live',
    freshness: { lastSuccessfulRun: null, lastSuccessfulExtract: null, newestEventPublishedAt: null, cursorAgeSeconds: null },
    streams: [],
    runs: [],
    dataQuality: null,
    rows: {},
    models: [],
  };
  const unknown = await wh.unknownMigrations();
  if (unknown.length > 0) status.warning = `${newerWarehouseMessage(wh.path, unknown)}; read-only: every writing command refuses it`;
  status.models = await readModels(wh, models);
  if (!(await tableExists(wh, 'etl', 'streams'))) return status;
  status.streams = await readStreams(wh);
  const ages = status.streams.filter((s) => s.status === 'active' && s.cursorAgeSeconds !== null).map((s) => s.cursorAgeSeconds!);
  status.freshness.cursorAgeSeconds = ages.length ? Math.max(...ages) : null;
  status.freshness.lastSuccessfulRun = await lastSucceeded(wh, null);
  status.freshness.lastSuccessfulExtract = await lastSucceeded(wh, ['run', 'extract']);
  const newest = await wh.one<{ t: string | null }>(`select strftime(max(published_time), ${ISO}) as t from raw.events`);
  status.freshness.newestEventPublishedAt = newest?.t ?? null;

  status.runs = await readRuns(wh, runs);

  status.dataQuality = await readDataQuality(wh);

  const tables = await wh.all<{ table_schema: string; table_name: string }>(
    `select table_schema, table_name from information_schema.tables
     where table_schema in ('raw', 'main') and table_type = 'BASE TABLE' order by 1, 2`,
  );
  for (const t of tables) {
    const r = await wh.one<{ n: bigint }>(`select count(*) as n from "${t.table_schema}"."${t.table_name}"`);
    status.rows[`${t.table_schema}.${t.table_name}`] = Number(r?.n ?? 0n);
  }
  const funnel = await readFunnel(wh);
  if (funnel) status.funnel = funnel;
  return status;
}
