/**
 * Warehouses built for tests that read the marts: raw events inserted straight into
 * `raw.events` (one stream) and transformed by the job's own runner.
 */
import { startMockApi, type GroundTruth, type MockApiOptions } from '../../packages/mock-api/src/index.js';
import { runTransform } from '../../src/transform/runTransform.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { insertRawEventsSql, type Ev, type RawEventRow } from '../integration/models/fixture.js';

/** A simulator's ground truth as raw.events rows of one stream, `sim`, in stream order. */
export function truthRows(truth: GroundTruth): RawEventRow[] {
  return truth.events.map((e, i) => ({
    stream_id: 'sim',
    stream_position: i + 1,
    event_id: e.id,
    event_type: e.eventType,
    published_time: e.publishedTime,
    message: (e.envelope['message'] ?? null) as Record<string, unknown> | null,
    typeKey: e.typeKey,
    extracted_at: '2026-06-01T00:00:00.000Z',
  }));
}

/** The simulator's generated stream as raw.events rows of one stream (no HTTP). */
export async function simulatorRows(options: MockApiOptions = {}): Promise<RawEventRow[]> {
  const api = await startMockApi({ port: 0, ...options });
  try {
    return truthRows(api.truth);
  } finally {
    await api.close();
  }
}

/** Fixture events as rows of one stream. */
export function fixtureRows(events: readonly Ev[], extractedAt = '2024-03-21T00:00:00.000Z'): RawEventRow[] {
  return events.map((e, i) => ({ ...e, stream_id: 'stream-fixture', stream_position: i + 1, extracted_at: extractedAt }));
}

/**
 * A warehouse at `path` (a file, or `:memory:`) holding `rows`, transformed.
 * @param siteNames an operator CSV of site names (`--site-names`)
 */
export async function builtWarehouse(path: string, rows: readonly RawEventRow[], siteNames?: string): Promise<Warehouse> {
  const wh = await Warehouse.open(path, { threads: 2 });
  await wh.migrate();
  for (let i = 0; i < rows.length; i += 500) await wh.run(insertRawEventsSql(rows.slice(i, i + 500)));
  await runTransform(wh, siteNames === undefined ? {} : { siteNames });
  return wh;
}
