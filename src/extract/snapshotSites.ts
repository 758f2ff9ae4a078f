/**
 * The sites stage: snapshot the study-website site list of every configured trial into
 * `raw.site_snapshots`, one transaction for the whole snapshot (docs/upstream.md "Site list").
 *
 * @module
 */
import { type Logger, silentLogger } from '../log/logger.js';
import type { SitesClient } from '../upstream/sites.js';
import { appendSiteSnapshot } from '../warehouse/SiteSnapshotWriter.js';
import type { Warehouse } from '../warehouse/Warehouse.js';

/** Options of {@link snapshotSites}. */
export interface SnapshotSitesOptions {
  wh: Warehouse;
  client: SitesClient;
  micrositeId: string;
  trialIds: readonly string[];
  runId: string;
  logger?: Logger;
  signal?: AbortSignal;
}

/** Sites stored per trial. */
export interface SnapshotSitesResult {
  sites: number;
  perTrial: Record<string, number>;
}

/**
 * Fetch every trial's site list, then store them all in one transaction (a failed fetch
 * stores nothing of this snapshot).
 *
 * @throws {AuthError} the origin is refused (exit 3); {@link ConfigError} unknown microsite or trial (exit 2);
 *   {@link UpstreamUnavailableError} (exit 4); {@link UpstreamContractError} (exit 6); {@link WarehouseError} (exit 7)
 */
export async function snapshotSites(opts: SnapshotSitesOptions): Promise<SnapshotSitesResult> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'sites' });
  const fetched: { trialId: string; records: unknown[] }[] = [];
  for (const trialId of opts.trialIds) {
    const { records } = await opts.client.fetchSites(opts.micrositeId, trialId, opts.signal);
    fetched.push({ trialId, records });
  }
  const perTrial: Record<string, number> = {};
  await opts.wh.transaction(async () => {
    for (const { trialId, records } of fetched) {
      perTrial[trialId] = await appendSiteSnapshot(opts.wh, opts.runId, opts.micrositeId, trialId, records);
    }
  });
  const sites = Object.values(perTrial).reduce((a, b) => a + b, 0);
  logger.info({ trials: opts.trialIds.length, sites }, 'site lists snapshotted');
  return { sites, perTrial };
}
