/**
 * The models against a hand-written fixture with every docs/domain.md edge case: exact rows,
 * whatever the session time zone of the builder and of the reader.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runTransform, type TransformResult } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { EXPECTATIONS } from './expected.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, attempt, created, insertRawEventsSql, status, type Ev } from './fixture.js';
import { fixtureRows } from '../../helpers/warehouses.js';

/** Open an in-memory warehouse holding the fixture. */
export async function fixtureWarehouse(): Promise<Warehouse> {
  const wh = await Warehouse.open(':memory:', { threads: 2 });
  await wh.migrate();
  await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
  await wh.run(SITE_SNAPSHOTS_SQL);
  return wh;
}

for (const zone of ['UTC', 'America/Los_Angeles', 'Asia/Kolkata']) {
  describe(`models on the fixture, session TimeZone ${zone}`, () => {
    let wh: Warehouse;
    let result: TransformResult;

    beforeAll(async () => {
      wh = await fixtureWarehouse();
      await wh.run(`set TimeZone = '${zone}'`);
      result = await runTransform(wh);
    });
    afterAll(async () => {
      await wh?.close();
    });

    for (const [name, exp] of Object.entries(EXPECTATIONS)) {
      test(`${name}: exact rows`, async () => {
        await wh.run(`set TimeZone = '${zone}'`);
        expect(await wh.all(exp.sql)).toEqual(exp.rows);
      });
    }

    test('dq counts reach the run summary', () => {
      expect(Object.fromEntries(result.dq.map((d) => [d.check, d.count]))).toEqual(
        Object.fromEntries(EXPECTATIONS['dq_summary']!.rows.map((r) => [r['check_name'], r['issue_count']])),
      );
    });

    test('no model column is a TIMESTAMP WITH TIME ZONE (readers in any zone see the same values)', async () => {
      const rows = await wh.all<{ t: string; c: string }>(
        `select table_name as t, column_name as c from information_schema.columns
         where table_schema = 'main' and data_type ilike '%with time zone%'`,
      );
      expect(rows).toEqual([]);
    });
  });
}

describe('models: invariants on the fixture', () => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await fixtureWarehouse();
    await runTransform(wh);
  });
  afterAll(async () => {
    await wh?.close();
  });

  test('one funnel row per (trial, subject) seen in any valid event; a v1+v2 patient is one row', async () => {
    const [row] = await wh.all<{ n: bigint; d: bigint }>(
      `select count(*) as n, count(distinct (trial_id, referral_subject_id)) as d from main.fct_patient_funnel`,
    );
    expect(row).toEqual({ n: 6n, d: 6n });
  });

  test('staging has every delivery; int_events_deduplicated keeps one row per event id (duplicate delivery across streams) and no unknown type', async () => {
    const deliveries = await wh.all<{ stream_id: string }>(
      `select stream_id from main.stg_events where event_id = 'e25' order by stream_id`,
    );
    expect(deliveries).toEqual([{ stream_id: 'stream-a' }, { stream_id: 'stream-b' }]);
    const rows = await wh.all<{ event_id: string; stream_id: string; delivery_count: bigint }>(
      `select event_id, stream_id, delivery_count from main.int_events_deduplicated where event_id = 'e25'`,
    );
    expect(rows).toEqual([{ event_id: 'e25', stream_id: 'stream-a', delivery_count: 2n }]);
    const unknown = await wh.all(
      `select * from main.int_events_deduplicated where event_type = 'v1.patient.subjectIdUpdated' and is_known_type`,
    );
    expect(unknown).toEqual([]);
  });

  test('a rebuild gives the same tables (reproducible: no now())', async () => {
    const snapshot = async (): Promise<unknown[]> =>
      wh.all(`select * exclude (as_of_at) from main.fct_patient_funnel order by patient_key`);
    const before = await snapshot();
    await runTransform(wh);
    expect(await snapshot()).toEqual(before);
  });

  test('no model joins website site ids to event site ids (docs/upstream.md "Services and identifiers")', async () => {
    const { readFileSync } = await import('node:fs');
    const { listModelFiles } = await import('../../../src/transform/runTransform.js');
    const { MODELS_DIR } = await import('../../../src/paths.js');
    // website_site_id = x.site_id, or x.site_id = website_site_id (another namespace)
    const joinsNamespaces = (text: string): boolean =>
      /website_site_id\s*=\s*(?:\w+\.)?site_id\b/.test(text) ||
      /(?<![\w.])(?:\w+\.)?(?<!website_)site_id\s*=\s*(?:\w+\.)?website_site_id/.test(text);
    const files = listModelFiles(MODELS_DIR);
    // Not vacuous: every layer's files are read, some of them name website_site_id, and the check sees such a join.
    for (const layer of ['staging', 'intermediate', 'marts', 'dq'])
      expect(
        files.some((f) => f.includes(`/${layer}/`)),
        layer,
      ).toBe(true);
    expect(files.filter((f) => readFileSync(f, 'utf8').includes('website_site_id')).length).toBeGreaterThan(0);
    expect(joinsNamespaces('join s on s.website_site_id = e.site_id')).toBe(true);
    expect(joinsNamespaces('join s on e.site_id = s.website_site_id')).toBe(true);
    for (const file of files) expect(joinsNamespaces(readFileSync(file, 'utf8')), file).toBe(false);
  });
});

describe('times no model can compute with (every transform failed, for good, on one such event before)', () => {
  // Each parses as a date or a timestamp, then overflowed or was refused in a later model.
  const HOSTILE = ['300000-01-01', '294247-01-09T00:00:00Z', 'infinity', '-infinity', '-290000-01-01T00:00:00'];
  let wh: Warehouse;
  beforeAll(async () => {
    const published = '2026-01-05T08:00:00.000Z';
    const events: Ev[] = HOSTILE.flatMap((t, i) => [
      created(`hc${i}`, 'T9', `h${i}`, 'S1', t, t, 'potentialCandidate', 'v1.patient.created', {}, published),
      status(`hs${i}`, 'T9', `h${i}`, 'S1', 'preScreening', t, published),
      attempt(`ha${i}`, 'v1.contactAttempt.created', 'T9', `h${i}`, 'S1', `HA${i}`, t, '2026-01-05T07:00:00.000Z', ['reached']),
    ]);
    const rows = fixtureRows(events).map((r, i) => ({ ...r, stream_id: 'hostile', stream_position: i + 1 }));
    wh = await fixtureWarehouse();
    await wh.run(insertRawEventsSql(rows));
    await runTransform(wh);
  });
  afterAll(async () => {
    await wh?.close();
  });

  test('are no usable time (outside 1900–2199): every model builds and reads, and the events are invalid', async () => {
    const tables = await wh.all<{ name: string }>("select table_name as name from information_schema.tables where table_schema = 'main'");
    for (const { name } of tables) await wh.all(`select * from main."${name}"`);
    const invalid = await wh.all<{ event_id: string }>(
      "select event_id from main.dq_invalid_events where event_id like 'h%' order by event_id",
    );
    expect(invalid.map((r) => r.event_id)).toEqual(HOSTILE.flatMap((_, i) => [`ha${i}`, `hc${i}`, `hs${i}`]).sort());
  });
});
