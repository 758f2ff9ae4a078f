/**
 * A future-dated event (a mistyped year: 2062) filled the site-activity marts with a zero row
 * for every week and month up to it (1,877 weekly rows for 2062 seen from 2026): their dense
 * range ends at as_of_at's period, and the typo is one row of its own period
 * (docs/models.md "mart_site_activity").
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runTransform } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { attempt, created, type Ev, insertRawEventsSql, type RawEventRow } from './fixture.js';

const CA = 'v1.contactAttempt.created' as const;

/** Trial T9, sites X1 and X2; the latest domain time, q1's attempt of Monday 18 March 2024, is as_of_at. */
const EVENTS: Ev[] = [
  created('a01', 'T9', 'q1', 'X1', '2024-03-04T09:00:00Z', '2024-03-04T09:00:00Z'),
  attempt('a02', CA, 'T9', 'q1', 'X1', 'C1a', '2024-03-05', '2024-03-05T10:00:00Z', ['noAnswer']),
  attempt('a03', CA, 'T9', 'q1', 'X1', 'C1b', '2024-03-18', '2024-03-18T10:00:00Z', ['noAnswer']),
  created('a04', 'T9', 'q2', 'X2', '2024-02-20T09:00:00Z', '2024-02-20T09:00:00Z'),
];

function rows(events: readonly Ev[]): RawEventRow[] {
  return events.map((e, i) => ({ ...e, stream_id: 'stream-t9', stream_position: i + 1, extracted_at: '2024-03-19T00:00:00.000Z' }));
}

/** q1's attempt typed as 2062 (sent in 2024), and a referral at a new site X3 typed as 2062. */
const TYPOS: Ev[] = [
  {
    ...attempt('f01', CA, 'T9', 'q1', 'X1', 'C1c', '2062-03-20', '2062-03-20T10:00:00Z', ['noAnswer']),
    published_time: '2024-03-18T12:00:00Z',
  },
  created(
    'f02',
    'T9',
    'q8',
    'X3',
    '2062-03-05T10:00:00Z',
    '2062-03-05T10:00:00Z',
    'potentialCandidate',
    'v1.patient.created',
    {},
    '2024-03-18T12:00:00Z',
  ),
];

const WEEKLY = `select site_id, activity_week::varchar as period, referrals_received::int as ref, contact_attempts::int as ca, is_complete_week as complete
                from main.mart_site_activity order by all`;
const MONTHLY = `select site_id, activity_month::varchar as period, referrals_received::int as ref, contact_attempts::int as ca, is_complete_month as complete
                 from main.mart_site_activity_monthly order by all`;

describe('future-dated events in the site-activity marts (a 2062 typo added 1,877 weekly rows)', () => {
  let clean: Warehouse;
  let typo: Warehouse;
  beforeAll(async () => {
    clean = await Warehouse.open(':memory:', { threads: 1 });
    typo = await Warehouse.open(':memory:', { threads: 1 });
    for (const [wh, events] of [
      [clean, EVENTS],
      [typo, [...EVENTS, ...TYPOS]],
    ] as const) {
      await wh.migrate();
      await wh.run(insertRawEventsSql(rows(events)));
      await runTransform(wh);
    }
  });
  afterAll(async () => {
    await clean?.close();
    await typo?.close();
  });

  test('as_of_at ignores them, and dq_future_dated_events lists both', async () => {
    const asOf = `select as_of_at::varchar as t from main.int_data_as_of`;
    expect(await typo.all(asOf)).toEqual(await clean.all(asOf));
    expect(await typo.one<{ n: number }>('select count(*)::int as n from main.dq_future_dated_events')).toEqual({ n: 2 });
  });

  for (const [name, sql, x1, x3] of [
    ['weekly', WEEKLY, '2062-03-20', '2062-02-27'],
    ['monthly', MONTHLY, '2062-03-01', '2062-03-01'],
  ] as const) {
    test(`${name}: dense up to as_of_at's period as before, then one row per period with activity`, async () => {
      const before = await clean.all<{ period: string }>(sql);
      const after = await typo.all<{ site_id: string; period: string }>(sql);
      expect(before.at(-1)).toMatchObject({ site_id: 'X2', period: name === 'weekly' ? '2024-03-18' : '2024-03-01', complete: false });
      expect(after.filter((r) => r.period < '2025')).toEqual(before);
      expect(after.filter((r) => r.period >= '2025')).toEqual([
        { site_id: 'X1', period: x1, ref: 0, ca: 1, complete: false },
        { site_id: 'X3', period: x3, ref: 1, ca: 0, complete: false },
      ]);
    });
  }

  test('the counts stay additive: every contact attempt and referral is in a row', async () => {
    const want = await typo.one<{ ca: number; ref: number }>(
      `select (select count(*) from main.fct_contact_attempts)::int as ca, (select count(referral_at) from main.fct_patient_funnel)::int as ref`,
    );
    expect(want).toEqual({ ca: 3, ref: 3 });
    for (const model of ['mart_site_activity', 'mart_site_activity_monthly']) {
      const r = await typo.one<{ ca: number; ref: number }>(
        `select sum(contact_attempts)::int as ca, sum(referrals_received)::int as ref from main.${model}`,
      );
      expect(r, model).toEqual(want);
    }
  });

  test('an incremental transform that brings the typos equals a --full-refresh', async () => {
    const wh = await Warehouse.open(':memory:', { threads: 1 });
    try {
      await wh.migrate();
      const all = rows([...EVENTS, ...TYPOS]);
      await wh.run(insertRawEventsSql(all.slice(0, EVENTS.length)));
      await runTransform(wh);
      await wh.run(insertRawEventsSql(all.slice(EVENTS.length)));
      await runTransform(wh);
      const incremental = { weekly: await wh.all(WEEKLY), monthly: await wh.all(MONTHLY) };
      await runTransform(wh, { fullRefresh: true });
      expect({ weekly: await wh.all(WEEKLY), monthly: await wh.all(MONTHLY) }).toEqual(incremental);
      expect(incremental).toEqual({ weekly: await typo.all(WEEKLY), monthly: await typo.all(MONTHLY) });
    } finally {
      await wh.close();
    }
  });
});
