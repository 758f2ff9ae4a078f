/**
 * What `recruit-etl status` shows: streams with their cursor age, the last runs, row counts.
 *
 * @module
 */
import type { Warehouse } from './Warehouse.js';

/** One stream line of the status. */
export interface StreamStatus {
  streamId: string;
  name: string;
  status: string;
  environment: string;
  events: number;
  /** Events of the stream stored in their quarantined form (`docs/ingest.md` "Quarantine"). */
  quarantined: number;
  hasNextPage: boolean | null;
  /** Seconds since the cursor was last stored (null: never polled). */
  cursorAgeSeconds: number | null;
  lastPolledAt: string | null;
  /** The last stream position the models were built from (docs/incremental.md); null: never transformed. */
  transformedPosition: number | null;
}

/** One run line of the status. */
export interface RunStatusLine {
  runId: string;
  command: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
  eventsLoaded: number;
  error: string | null;
}

/** The whole status. */
export interface WarehouseStatus {
  path: string;
  /** Why the status shows something other than the live file, if it does. */
  note?: string;
  streams: StreamStatus[];
  runs: RunStatusLine[];
  rows: Record<string, number>;
  /** Per trial: patients and how many ever reached each funnel stage (when the models exist). */
  funnel?: Record<string, string | number | null>[];
}

/**
 * The funnel per trial from `fct_patient_funnel`: patient count, then one column per
 * boolean `reached_<stage>` column the model has, in the model's column order.
 */
async function readFunnel(wh: Warehouse): Promise<Record<string, string | number | null>[] | undefined> {
  if (!(await tableExists(wh, 'main', 'fct_patient_funnel'))) return undefined;
  const cols = await wh.all<{ column_name: string }>(
    `select column_name from information_schema.columns
     where table_schema = 'main' and table_name = 'fct_patient_funnel' and data_type = 'BOOLEAN'
       and column_name like 'reached\_%' escape '\\' order by ordinal_position`,
  );
  const sums = cols.map((c) => `count(*) filter (where "${c.column_name}")::integer as "${c.column_name.replace(/^reached_/, '')}"`);
  const rows = await wh.all<Record<string, string | number | null>>(
    `select trial_id as trial, count(*)::integer as patients${sums.length ? `, ${sums.join(', ')}` : ''}
     from main.fct_patient_funnel group by trial_id order by trial_id`,
  );
  return rows;
}

async function tableExists(wh: Warehouse, schema: string, table: string): Promise<boolean> {
  const r = await wh.one<{ n: bigint }>(
    'select count(*) as n from information_schema.tables where table_schema = ? and table_name = ?',
    [schema, table],
  );
  return (r?.n ?? 0n) > 0n;
}

/**
 * Read the status (no writes).
 * @param runs how many recent runs to list (default 10)
 */
export async function readStatus(wh: Warehouse, runs = 10): Promise<WarehouseStatus> {
  const status: WarehouseStatus = { path: wh.path, streams: [], runs: [], rows: {} };
  if (!(await tableExists(wh, 'etl', 'streams'))) return status;
  const streams = await wh.all<{
    stream_id: string; name: string; status: string; environment: string; event_count: bigint;
    has_next_page: boolean | null; age: number | null; last_polled_at: string | null; quarantined: bigint | null;
    transformed: bigint | null;
  }>(
    `select stream_id, name, status, environment, event_count, has_next_page,
            ${(await tableExists(wh, 'etl', 'transform_watermarks')) ? '(select max(w.stream_position) from etl.transform_watermarks w where w.stream_id = s.stream_id)' : 'null'} as transformed,
            ${(await tableExists(wh, 'raw', 'quarantined_events')) ? '(select count(*) from raw.quarantined_events q where q.stream_id = s.stream_id)' : '0'} as quarantined,
            epoch(now() - last_polled_at)::double as age, strftime(last_polled_at, '%Y-%m-%dT%H:%M:%SZ') as last_polled_at
     from etl.streams s order by status, created_at desc`,
  );
  status.streams = streams.map((s) => ({
    streamId: s.stream_id,
    name: s.name,
    status: s.status,
    environment: s.environment,
    events: Number(s.event_count),
    quarantined: Number(s.quarantined ?? 0),
    hasNextPage: s.has_next_page,
    cursorAgeSeconds: s.age === null ? null : Math.round(s.age),
    lastPolledAt: s.last_polled_at,
    transformedPosition: s.transformed === null ? null : Number(s.transformed),
  }));
  const runRows = await wh.all<{
    run_id: string; command: string; status: string; started_at: string; finished_at: string | null; events_loaded: bigint; error: string | null;
  }>(
    `select run_id, command, status, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') as started_at,
            strftime(finished_at, '%Y-%m-%dT%H:%M:%SZ') as finished_at, events_loaded, error
     from etl.runs order by started_at desc limit ?`,
    [runs],
  );
  status.runs = runRows.map((r) => ({
    runId: r.run_id,
    command: r.command,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    eventsLoaded: Number(r.events_loaded),
    error: r.error,
  }));
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
