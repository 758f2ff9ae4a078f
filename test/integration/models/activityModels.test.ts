/**
 * The recruitment teams' views on hand-made events: mart_site_activity (each activity in the
 * week and month of its own UTC date, dense to as_of_at), mart_open_referrals (which patients
 * are open, worklist order), the unreachable rule (docs/domain.md "Unreachable") and the
 * operator's site names (docs/models.md "Site names").
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { runTransform } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { ack, attempt, created, type Ev, insertRawEventsSql, type RawEventRow, status } from './fixture.js';

const CA = 'v1.contactAttempt.created' as const;

/**
 * Trial T9, sites X1 and X2; the latest domain time is q6's attempt on 2024-03-20, so
 * as_of_at = 2024-03-20 00:00 (a Wednesday, in the ISO week of Monday 2024-03-18).
 */
export const ACTIVITY_EVENTS: Ev[] = [
  // q1: referred on Sunday 3 March in New York, Monday 4 March in UTC; three unanswered
  // attempts spanning 13 days: still trying, not unreachable
  created('a01', 'T9', 'q1', 'X1', '2024-03-03T23:30:00-05:00', '2024-03-03T23:31:00-05:00'),
  attempt('a02', CA, 'T9', 'q1', 'X1', 'C1a', '2024-03-05', '2024-03-05T10:00:00Z', ['noAnswer']),
  attempt('a03', CA, 'T9', 'q1', 'X1', 'C1b', '2024-03-07', '2024-03-07T10:00:00Z', ['leftVoicemail']),
  attempt('a04', CA, 'T9', 'q1', 'X1', 'C1c', '2024-03-18', '2024-03-18T10:00:00Z', ['noAnswer']),
  // q2: acknowledged; three unanswered attempts spanning exactly 14 days: unreachable
  created('a05', 'T9', 'q2', 'X1', '2024-02-28T10:00:00Z', '2024-02-28T10:05:00Z'),
  ack('a06', 'T9', 'q2', 'X1', '2024-02-29T09:00:00Z'),
  attempt('a07', CA, 'T9', 'q2', 'X1', 'C2a', '2024-02-28', '2024-02-28T15:00:00Z', ['noAnswer']),
  attempt('a08', CA, 'T9', 'q2', 'X1', 'C2b', '2024-03-01', '2024-03-01T15:00:00Z', ['noAnswer']),
  attempt('a09', CA, 'T9', 'q2', 'X1', 'C2c', '2024-03-13', '2024-03-13T15:00:00Z', ['wrongNumber']),
  // q3: enrolled on Friday 1 March: the ISO week of Monday 26 February, the month of March
  created('a10', 'T9', 'q3', 'X1', '2024-02-27T08:00:00Z', '2024-02-27T08:00:00Z'),
  ack('a11', 'T9', 'q3', 'X1', '2024-02-27T12:00:00Z'),
  status('a12', 'T9', 'q3', 'X1', 'enrolled', '2024-03-01T16:00:00Z'),
  // q4: its only status is unknown: kept open for a person to look at
  created('a13', 'T9', 'q4', 'X1', '2024-03-01T12:00:00Z', '2024-03-01T12:00:00Z', 'someFutureStatus'),
  // q5: screen failure at X2: closed
  created('a14', 'T9', 'q5', 'X2', '2024-03-02T09:00:00Z', '2024-03-02T09:00:00Z'),
  status('a15', 'T9', 'q5', 'X2', 'screenFailure', '2024-03-10T09:00:00Z'),
  // q6: acknowledged, three attempts over 18 days, the second reaches: not unreachable
  created('a16', 'T9', 'q6', 'X1', '2024-03-02T00:00:00Z', '2024-03-02T00:00:00Z'),
  ack('a17', 'T9', 'q6', 'X1', '2024-03-02T08:00:00Z'),
  attempt('a18', CA, 'T9', 'q6', 'X1', 'C6a', '2024-03-02', '2024-03-02T10:00:00Z', ['noAnswer']),
  attempt('a19', CA, 'T9', 'q6', 'X1', 'C6b', '2024-03-04', '2024-03-04T10:00:00Z', ['appointmentScheduled']),
  attempt('a20', CA, 'T9', 'q6', 'X1', 'C6c', '2024-03-20', '2024-03-20T10:00:00Z', ['noAnswer']),
];

/** The events as raw.events rows of one stream. */
export function activityRows(events: readonly Ev[] = ACTIVITY_EVENTS): RawEventRow[] {
  return events.map((e, i) => ({ ...e, stream_id: 'stream-t9', stream_position: i + 1, extracted_at: '2024-03-21T00:00:00.000Z' }));
}

for (const zone of ['UTC', 'America/New_York']) {
  describe(`recruitment views on hand-made events, session TimeZone ${zone}`, () => {
    let wh: Warehouse;

    beforeAll(async () => {
      wh = await Warehouse.open(':memory:', { threads: 2 });
      await wh.migrate();
      await wh.run(insertRawEventsSql(activityRows()));
      await wh.run(`set TimeZone = '${zone}'`);
      await runTransform(wh);
    });
    afterAll(async () => {
      await wh?.close();
    });

    test('unreachable: ≥ 3 attempts spanning ≥ 14 days and not reached', async () => {
      const rows = await wh.all(
        `select referral_subject_id as s, contact_attempt_count::int as n, contact_attempt_span_days::int as span,
           is_unreachable_after_3_attempts as unreachable
         from main.fct_patient_funnel where contact_attempt_count > 0 order by s`,
      );
      expect(rows).toEqual([
        { s: 'q1', n: 3, span: 13, unreachable: false },
        { s: 'q2', n: 3, span: 14, unreachable: true },
        { s: 'q6', n: 3, span: 18, unreachable: false },
      ]);
      const [mart] = await wh.all<{ u: number }>(`select sum(unreachable_after_3_attempts)::int as u from main.mart_recruitment_funnel`);
      expect(mart).toEqual({ u: 1 });
    });

    test('open referrals: in-progress and unknown-status patients, oldest first per site', async () => {
      const rows = await wh.all(
        `select site_id, worklist_rank::int as r, referral_subject_id as s, worklist_step as step, age_days::int as age,
           contact_attempt_count::int as n, last_contact_attempt_date::varchar as last_date,
           days_since_last_attempt::int as since, current_status, is_unreachable_after_3_attempts as unreachable
         from main.mart_open_referrals order by site_id, worklist_rank`,
      );
      expect(rows).toEqual([
        {
          site_id: 'X1',
          r: 1,
          s: 'q2',
          step: 'reach',
          age: 21,
          n: 3,
          last_date: '2024-03-13',
          since: 7,
          current_status: 'potentialCandidate',
          unreachable: true,
        },
        {
          site_id: 'X1',
          r: 2,
          s: 'q4',
          step: 'acknowledge',
          age: 19,
          n: 0,
          last_date: null,
          since: null,
          current_status: 'someFutureStatus',
          unreachable: false,
        },
        {
          site_id: 'X1',
          r: 3,
          s: 'q6',
          step: 'progress',
          age: 18,
          n: 3,
          last_date: '2024-03-20',
          since: 0,
          current_status: 'potentialCandidate',
          unreachable: false,
        },
        {
          site_id: 'X1',
          r: 4,
          s: 'q1',
          step: 'acknowledge',
          age: 16,
          n: 3,
          last_date: '2024-03-18',
          since: 2,
          current_status: 'potentialCandidate',
          unreachable: false,
        },
      ]);
    });

    test('site activity: each activity in the ISO week of its own UTC date, every week to as_of_at', async () => {
      const rows = await wh.all(
        `select site_id, activity_week::varchar as week, referrals_received::int as ref, referrals_acknowledged::int as ack,
           first_contact_attempts::int as fca, contact_attempts::int as ca, patients_reached::int as reached,
           enrolments::int as enr, screenings::int as scr, screen_failures::int as sf, is_complete_week as complete
         from main.mart_site_activity order by site_id, activity_week`,
      );
      expect(rows).toEqual([
        // Monday 26 February – Sunday 3 March: q3, q2, q4 (Friday) and q6 (Saturday) referred, q3, q2 and q6
        // acknowledged, q2 and q6 first attempted (attempts C2a, C2b, C6a), q3 enrolled on Friday (its status
        // implies contact: reached)
        { site_id: 'X1', week: '2024-02-26', ref: 4, ack: 3, fca: 2, ca: 3, reached: 1, enr: 1, scr: 1, sf: 0, complete: true },
        // q1, referred on Sunday evening in New York, is Monday in UTC; q6 reached by its attempt of the 4th
        { site_id: 'X1', week: '2024-03-04', ref: 1, ack: 0, fca: 1, ca: 3, reached: 1, enr: 0, scr: 0, sf: 0, complete: true },
        { site_id: 'X1', week: '2024-03-11', ref: 0, ack: 0, fca: 0, ca: 1, reached: 0, enr: 0, scr: 0, sf: 0, complete: true },
        { site_id: 'X1', week: '2024-03-18', ref: 0, ack: 0, fca: 0, ca: 2, reached: 0, enr: 0, scr: 0, sf: 0, complete: false },
        { site_id: 'X2', week: '2024-02-26', ref: 1, ack: 0, fca: 0, ca: 0, reached: 0, enr: 0, scr: 0, sf: 0, complete: true },
        // a screen failure implies screening and contact, in its own week
        { site_id: 'X2', week: '2024-03-04', ref: 0, ack: 0, fca: 0, ca: 0, reached: 1, enr: 0, scr: 1, sf: 1, complete: true },
        { site_id: 'X2', week: '2024-03-11', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, enr: 0, scr: 0, sf: 0, complete: true },
        { site_id: 'X2', week: '2024-03-18', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, enr: 0, scr: 0, sf: 0, complete: false },
      ]);
    });

    test('monthly rollup counts each activity in its own month (not summed from ISO weeks)', async () => {
      const rows = await wh.all(
        `select site_id, activity_month::varchar as month, referrals_received::int as ref, enrolments::int as enr,
           contact_attempts::int as ca, is_complete_month as complete
         from main.mart_site_activity_monthly order by site_id, activity_month`,
      );
      expect(rows).toEqual([
        { site_id: 'X1', month: '2024-02-01', ref: 2, enr: 0, ca: 1, complete: true },
        { site_id: 'X1', month: '2024-03-01', ref: 3, enr: 1, ca: 8, complete: false },
        { site_id: 'X2', month: '2024-03-01', ref: 1, enr: 0, ca: 0, complete: false },
      ]);
    });
  });
}

describe("site names from the operator's CSV (--site-names)", () => {
  const tmp = tempDir('recruit-etl-sitenames-');
  let wh: Warehouse;

  beforeAll(async () => {
    wh = await Warehouse.open(':memory:', { threads: 2 });
    await wh.migrate();
    await wh.run(insertRawEventsSql(activityRows()));
  });
  afterAll(async () => {
    await wh?.close();
    tmp.cleanup();
  });

  test("a trial's row wins over an every-trial row; marts show the name; unmapped sites are listed in dq", async () => {
    const file = join(tmp.dir, 'names.csv');
    // columns in another order, an extra column, a quoted comma; X3 appears in no event
    writeFileSync(
      file,
      [
        'trial_id,site_id,site_name,sponsor_site_id,notes',
        ',X1,Northside Clinic,SP-100,every trial',
        'T9,X1,"Northside, trial T9",SP-T9-1,',
        ',X3,Unused Site,,',
        '',
      ].join('\n'),
    );
    const result = await runTransform(wh, { siteNames: file });
    expect(result.dq.find((d) => d.check === 'dq_unmapped_sites')).toEqual({ check: 'dq_unmapped_sites', count: 1 });
    expect(
      await wh.all(`select trial_id, site_id, patient_count::int as patients, event_count::int as events from main.dq_unmapped_sites`),
    ).toEqual([{ trial_id: 'T9', site_id: 'X2', patients: 1, events: 2 }]);
    for (const mart of ['mart_site_activity', 'mart_site_activity_monthly', 'mart_recruitment_funnel', 'mart_open_referrals']) {
      const names = await wh.all(
        `select distinct site_id, site_name, mapped_sponsor_site_id as sponsor from main.${mart} order by site_id`,
      );
      const want = [
        { site_id: 'X1', site_name: 'Northside, trial T9', sponsor: 'SP-T9-1' },
        { site_id: 'X2', site_name: null, sponsor: null },
      ];
      // no X2 referral is open
      expect(names, mart).toEqual(mart === 'mart_open_referrals' ? want.slice(0, 1) : want);
    }
  });

  test("an unreadable operator's file is exit 2 (ConfigError) and leaves the previous models", async () => {
    const before = await wh.all(`select count(*)::int as n from main.mart_site_activity where site_name is not null`);
    const file = join(tmp.dir, 'broken.csv');
    writeFileSync(file, 'site_id,trial_id,site_name,sponsor_site_id\nX1,,"Unterminated,\n');
    const err = await runTransform(wh, { siteNames: file }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(new RegExp(`^--site-names ${file}: cannot be loaded as seed_site_names: `));
    expect(await wh.all(`select count(*)::int as n from main.mart_site_activity where site_name is not null`)).toEqual(before);
  });
});
