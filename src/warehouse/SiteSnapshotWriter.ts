/**
 * Appends one snapshot of a study-website site list to `raw.site_snapshots`
 * (docs/contracts.md "Warehouse tables"): one row per site per `sites` run, the docs/upstream.md "Site list"
 * fields in snake_case, the record as sent in `record`.
 *
 * @module
 */
import { UpstreamContractError, WarehouseError } from '../errors.js';
import { dataErrorClass, type Warehouse } from './Warehouse.js';
import { jsonText } from '../events/jsonText.js';

/**
 * Insert the site records of one microsite × trial. Call inside a transaction.
 * DuckDB extracts the fields from the JSON (a JSON null stays NULL; latitude and
 * longitude become DOUBLE, NULL when not numeric).
 *
 * The records must have passed `validateSites` (src/upstream/sites.ts), which refuses the
 * text DuckDB's JSON type refuses (lone surrogates). Should DuckDB still refuse the records'
 * content, the error never quotes it (DuckDB's own message quotes the input): a conversion
 * or invalid-input error is the upstream's (exit 6), anything else stays a warehouse
 * failure (exit 7) named by DuckDB's error class only (docs/security.md).
 *
 * @param records the parsed site records, as sent
 * @returns rows inserted
 * @throws {UpstreamContractError} DuckDB refused the records' content
 * @throws {WarehouseError} {@link LockError} the warehouse failed
 */
export async function appendSiteSnapshot(
  wh: Warehouse,
  runId: string,
  micrositeId: string,
  trialId: string,
  records: readonly unknown[],
): Promise<number> {
  if (records.length === 0) return 0;
  try {
    await insert(wh, runId, micrositeId, trialId, records);
  } catch (err) {
    throw withoutInput(err, `site list of microsite ${micrositeId} / trial ${trialId}`);
  }
  return records.length;
}

async function insert(wh: Warehouse, runId: string, micrositeId: string, trialId: string, records: readonly unknown[]): Promise<void> {
  await wh.run(
    `insert into raw.site_snapshots
     select ?::varchar, now(), ?::varchar, ?::varchar,
            r->>'siteId', r->>'displayName', r->>'siteName', r->>'sponsorSiteId', r->>'street',
            r->>'address1', r->>'address2', r->>'city', r->>'state', r->>'postalCode', r->>'country',
            r->>'phoneNumber', try_cast(r->>'latitude' as double), try_cast(r->>'longitude' as double), r
     from (select unnest(?::json::json[]) as r)`,
    // jsonText, not JSON.stringify: a record may nest deeper than a recursive walk's stack.
    [runId, micrositeId, trialId, jsonText(records)],
  );
}

/**
 * A failure of the insert as an error that quotes none of the input: lock, fatal and disk
 * errors (whose messages name no data) pass through; any other DuckDB message is replaced.
 */
function withoutInput(err: unknown, list: string): unknown {
  if (!(err instanceof WarehouseError) || !err.message.startsWith('DuckDB failed while')) return err;
  const kind = /: ([A-Z][A-Za-z ]* Error):/.exec(err.message)?.[1] ?? 'DuckDB error';
  // For this fixed statement, only the records' content can cause an error of the data.
  if (dataErrorClass(kind) !== undefined) {
    return new UpstreamContractError(`DuckDB refused the ${list} (${kind}); nothing of this site snapshot is stored`, {
      hint: 'the site list holds text the warehouse cannot store; report it to the site list owner',
    });
  }
  return new WarehouseError(`DuckDB failed while storing the ${list} (${kind})`);
}
