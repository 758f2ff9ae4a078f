/**
 * Appends one snapshot of a study-website site list to `raw.site_snapshots`
 * (DESIGN.md "Warehouse contract"): one row per site per `sites` run, the spec §2.3
 * fields in snake_case, the record as sent in `record`.
 *
 * @module
 */
import type { Warehouse } from './Warehouse.js';

/**
 * Insert the site records of one microsite × trial. Call inside a transaction.
 * DuckDB extracts the fields from the JSON (a JSON null stays NULL; latitude and
 * longitude become DOUBLE, NULL when not numeric).
 *
 * @param records the parsed site records, as sent
 * @returns rows inserted
 */
export async function appendSiteSnapshot(
  wh: Warehouse,
  runId: string,
  micrositeId: string,
  trialId: string,
  records: readonly unknown[],
): Promise<number> {
  if (records.length === 0) return 0;
  await wh.run(
    `insert into raw.site_snapshots
     select ?::varchar, now(), ?::varchar, ?::varchar,
            r->>'siteId', r->>'displayName', r->>'siteName', r->>'sponsorSiteId', r->>'street',
            r->>'address1', r->>'address2', r->>'city', r->>'state', r->>'postalCode', r->>'country',
            r->>'phoneNumber', try_cast(r->>'latitude' as double), try_cast(r->>'longitude' as double), r
     from (select unnest(?::json::json[]) as r)`,
    [runId, micrositeId, trialId, JSON.stringify(records)],
  );
  return records.length;
}
