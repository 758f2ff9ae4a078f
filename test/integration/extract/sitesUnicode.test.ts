/**
 * A site list whose record holds a lone surrogate escape (valid for JSON.parse, refused by
 * DuckDB's JSON type) is a contract break (exit 6) naming microsite, trial and record, and
 * nothing of the snapshot is stored. Real DuckDB file, stub site list.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { UpstreamContractError } from '../../../src/errors.js';
import { snapshotSites } from '../../../src/extract/snapshotSites.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { SitesClient } from '../../../src/upstream/sites.js';
import { appendSiteSnapshot } from '../../../src/warehouse/SiteSnapshotWriter.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { fakeSleep, sendJson, startStub } from '../upstream/stub.js';
import { tempDir } from '../../helpers/tmp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function openWarehouse(): Promise<Warehouse> {
  const tmp = tempDir('recruit-etl-sites-');
  const wh = await Warehouse.open(join(tmp.dir, 'w.duckdb'));
  cleanups.push(
    () => tmp.cleanup(),
    () => wh.close(),
  );
  await wh.migrate();
  return wh;
}

async function siteRows(wh: Warehouse): Promise<number> {
  const [row] = await wh.all<{ n: bigint }>('select count(*) as n from raw.site_snapshots');
  return Number(row!.n);
}

describe('site list with invalid Unicode', () => {
  it('a lone surrogate in trial t2 → exit 6 naming microsite, trial and record; nothing of the snapshot stored', async () => {
    const wh = await openWarehouse();
    const api = await startStub((req, res) =>
      req.url!.endsWith('/t1')
        ? sendJson(res, 200, [{ siteId: 's-1', city: 'Town' }])
        : sendJson(res, 200, '[{"siteId":"s-2"},{"siteId":"s-3","address":{"lines":["CANARY-ADDRESS \\ud800"]}}]'),
    );
    const http = new HttpClient({ sleep: fakeSleep().sleep });
    cleanups.push(
      () => api.close(),
      () => http.close(),
    );
    const client = new SitesClient({ baseUrl: api.origin, origin: 'https://study.example.org', http });
    // An earlier, good snapshot stays as it was.
    await snapshotSites({ wh, client, micrositeId: 'm1', trialIds: ['t1'], runId: 'r0' });
    expect(await siteRows(wh)).toBe(1);

    const err = await snapshotSites({ wh, client, micrositeId: 'm1', trialIds: ['t1', 't2'], runId: 'r1' }).catch(
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as UpstreamContractError).exitCode).toBe(6);
    expect((err as Error).message).toContain(
      'site list of microsite m1 / trial t2: record 2 holds a string that is not well-formed Unicode',
    );
    expect((err as Error).message).not.toContain('CANARY');
    expect(await siteRows(wh)).toBe(1);
  });

  it('records that reach the writer unchecked: DuckDB refusal is exit 6 and quotes nothing', async () => {
    const wh = await openWarehouse();
    let err: Error | undefined;
    try {
      await wh.transaction(() => appendSiteSnapshot(wh, 'r1', 'm1', 't9', [{ siteId: 's-1', city: 'CANARY-CITY \ud800' }]));
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err!.message).toContain('site list of microsite m1 / trial t9');
    expect(err!.message).not.toContain('CANARY');
    expect(err!.message).not.toContain('ud800');
    expect((err as Error & { cause?: unknown }).cause).toBeUndefined();
    expect(await siteRows(wh)).toBe(0);
  });
});

describe('site list nested deep', () => {
  it('a record nested 20,000 deep is stored as sent (exit 1 before: JSON.stringify ran out of stack)', async () => {
    const wh = await openWarehouse();
    const deep = '{"x":'.repeat(20_000) + '1' + '}'.repeat(20_000);
    const api = await startStub((_req, res) => sendJson(res, 200, `[{"siteId":"s-1","extra":${deep}}]`));
    const http = new HttpClient({ sleep: fakeSleep().sleep });
    cleanups.push(
      () => api.close(),
      () => http.close(),
    );
    const client = new SitesClient({ baseUrl: api.origin, origin: 'https://study.example.org', http });
    await snapshotSites({ wh, client, micrositeId: 'm1', trialIds: ['t1'], runId: 'r1' });
    const [row] = await wh.all<{ site_id: string; same: boolean }>(
      `select site_id, json_extract(record, '$.extra') = ?::json as same from raw.site_snapshots`,
      [deep],
    );
    expect(row).toEqual({ site_id: 's-1', same: true });
  });
});
