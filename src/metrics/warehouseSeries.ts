/**
 * What the metrics file reports about the warehouse (docs/contracts.md "Metrics"): freshness,
 * events and quarantined events per stream, data-quality findings per check. Read by the job
 * while it holds the warehouse open, just before it records its outcome; read-only, a few
 * small queries (no row counts of the large tables: `etl.streams` keeps each stream's count).
 *
 * @module
 */
import type { Warehouse } from '../warehouse/Warehouse.js';
import { quarantinedCountSql, readDataQuality, tableExists } from '../warehouse/readStatus.js';

/** One stream, as the metrics file reports it. */
export interface StreamSeries {
  streamId: string;
  /** `active` (extracted by the runs) or `retired`. */
  active: boolean;
  /** Events stored on the stream (its last stream position). */
  events: number;
  /** Events of the stream stored in their quarantined form (docs/ingest.md "Quarantine"). */
  quarantined: number;
  /** Unix time, seconds, its cursor was last stored (null: never polled). */
  lastPolledSeconds: number | null;
}

/** The warehouse's series. Timestamps are Unix time in seconds. */
export interface WarehouseSeries {
  /** When these values were read. */
  readAt: Date;
  /** End of the last run recorded `succeeded`, any pipeline command. */
  lastSuccessfulRunSeconds: number | null;
  /** End of the last `run` or `extract` recorded `succeeded` (the warehouse caught up with the upstream). */
  lastSuccessfulExtractSeconds: number | null;
  /** The newest `published_time` among the stored events (the upstream's clock). */
  newestEventPublishedSeconds: number | null;
  streams: StreamSeries[];
  /** `main.dq_summary`: findings per check (null: no models built yet). */
  dataQuality: Record<string, number> | null;
}

const num = (v: number | bigint | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * Read the warehouse's series (works on a warehouse of any age: missing tables give empty
 * values).
 * @throws the DuckDB error of a warehouse that cannot be read
 */
export async function readWarehouseSeries(wh: Warehouse): Promise<WarehouseSeries> {
  const out: WarehouseSeries = {
    readAt: new Date(),
    lastSuccessfulRunSeconds: null,
    lastSuccessfulExtractSeconds: null,
    newestEventPublishedSeconds: null,
    streams: [],
    dataQuality: null,
  };
  if (!(await tableExists(wh, 'etl', 'streams'))) return out;
  const quarantined = await quarantinedCountSql(wh);
  const streams = await wh.all<{
    stream_id: string;
    status: string;
    event_count: bigint;
    quarantined: bigint | number;
    polled: number | null;
  }>(
    `select stream_id, status, event_count, ${quarantined} as quarantined, epoch(last_polled_at)::double as polled
     from etl.streams s order by stream_id`,
  );
  out.streams = streams.map((s) => ({
    streamId: s.stream_id,
    active: s.status === 'active',
    events: Number(s.event_count),
    quarantined: Number(s.quarantined ?? 0),
    lastPolledSeconds: num(s.polled),
  }));
  const runs = await wh.one<{ any_run: number | null; extract: number | null }>(
    `select epoch(max(finished_at))::double as any_run,
            epoch(max(finished_at) filter (where command in ('run', 'extract')))::double as extract
     from etl.runs where status = 'succeeded'`,
  );
  out.lastSuccessfulRunSeconds = num(runs?.any_run);
  out.lastSuccessfulExtractSeconds = num(runs?.extract);
  const newest = await wh.one<{ t: number | null }>('select epoch(max(published_time))::double as t from raw.events');
  out.newestEventPublishedSeconds = num(newest?.t);
  out.dataQuality = await readDataQuality(wh);
  return out;
}
