/**
 * The exact rows the models must build from fixture.ts, as the queries below return them
 * (timestamps cast to varchar in SQL, so the session time zone of the reader cannot matter).
 *
 * @module
 */

/** Query → expected rows. Keys of each row are the query's columns. */
export interface Expectation {
  sql: string;
  rows: Record<string, unknown>[];
}

const F = false;
const T = true;

export const STATUS_HISTORY: Expectation = {
  sql: `select trial_id, referral_subject_id, spell_number, patient_status, stage, implied_rank,
          valid_from::varchar as valid_from, valid_to::varchar as valid_to, is_current, is_regression,
          is_backfilled, status_event_count::int as n
        from main.fct_patient_status_history order by trial_id, referral_subject_id, spell_number`,
  rows: [
    { trial_id: 'T1', referral_subject_id: 'p1', spell_number: 1, patient_status: 'potentialCandidate', stage: 'referred', implied_rank: 1, valid_from: '2024-01-01 10:00:00', valid_to: '2024-01-10 00:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p1', spell_number: 2, patient_status: 'enrolled', stage: 'enrolled', implied_rank: 5, valid_from: '2024-01-10 00:00:00', valid_to: null, is_current: T, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 1, patient_status: 'potentialCandidate', stage: 'referred', implied_rank: 1, valid_from: '2024-01-02 08:00:00', valid_to: '2024-01-03 09:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    // repeated preScreening: one spell of two events
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 2, patient_status: 'preScreening', stage: 'pre_screening', implied_rank: 2, valid_from: '2024-01-03 09:00:00', valid_to: '2024-01-05 10:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 2 },
    // the late status slots into its place and is not current
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 3, patient_status: 'firstVisitScheduled', stage: 'visit_scheduled', implied_rank: 3, valid_from: '2024-01-05 10:00:00', valid_to: '2024-01-06 10:00:00', is_current: F, is_regression: F, is_backfilled: T, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 4, patient_status: 'inScreening', stage: 'screening', implied_rank: 4, valid_from: '2024-01-06 10:00:00', valid_to: '2024-01-08 10:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 5, patient_status: 'screenFailure', stage: 'screen_failed', implied_rank: 4, valid_from: '2024-01-08 10:00:00', valid_to: '2024-01-09 10:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    // reinstated screen failure: leaves a terminal status → regression
    { trial_id: 'T1', referral_subject_id: 'p2', spell_number: 6, patient_status: 'inScreening', stage: 'screening', implied_rank: 4, valid_from: '2024-01-09 10:00:00', valid_to: null, is_current: T, is_regression: T, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p3', spell_number: 1, patient_status: 'potentialCandidate', stage: 'referred', implied_rank: 1, valid_from: '2024-01-03 11:00:00', valid_to: '2024-01-05 10:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p3', spell_number: 2, patient_status: 'inScreening', stage: 'screening', implied_rank: 4, valid_from: '2024-01-05 10:00:00', valid_to: '2024-01-06 12:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    // below the high-water mark → regression
    { trial_id: 'T1', referral_subject_id: 'p3', spell_number: 3, patient_status: 'preScreening', stage: 'pre_screening', implied_rank: 2, valid_from: '2024-01-06 12:00:00', valid_to: '2024-01-07 12:00:00', is_current: F, is_regression: T, is_backfilled: F, n: 1 },
    // unknown value: unmapped, no rank, never a regression
    { trial_id: 'T1', referral_subject_id: 'p3', spell_number: 4, patient_status: 'someNewStatus', stage: 'unmapped', implied_rank: null, valid_from: '2024-01-07 12:00:00', valid_to: null, is_current: T, is_regression: F, is_backfilled: F, n: 1 },
    // orphan: its status still has a history
    { trial_id: 'T1', referral_subject_id: 'p4', spell_number: 1, patient_status: 'preScreening', stage: 'pre_screening', implied_rank: 2, valid_from: '2024-01-06 09:00:00', valid_to: null, is_current: T, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T1', referral_subject_id: 'p6', spell_number: 1, patient_status: 'potentialCandidate', stage: 'referred', implied_rank: 1, valid_from: '2024-01-04 12:00:00', valid_to: '2024-01-05 10:00:00', is_current: F, is_regression: F, is_backfilled: F, n: 1 },
    // +02:00 offset read as 10:00 UTC
    { trial_id: 'T1', referral_subject_id: 'p6', spell_number: 2, patient_status: 'archive', stage: 'archived', implied_rank: null, valid_from: '2024-01-05 10:00:00', valid_to: null, is_current: T, is_regression: F, is_backfilled: F, n: 1 },
    { trial_id: 'T2', referral_subject_id: 'p5', spell_number: 1, patient_status: 'potentialCandidate', stage: 'referred', implied_rank: 1, valid_from: '2024-01-08 09:00:00', valid_to: null, is_current: T, is_regression: F, is_backfilled: F, n: 1 },
  ],
};

export const CONTACT_ATTEMPTS: Expectation = {
  sql: `select contact_attempt_id, trial_id, referral_subject_id, site_id, attempt_number::int as attempt_number,
          contact_attempt_date::varchar as contact_attempt_date, days_since_referral::int as days_since_referral,
          contact_attempt_outcomes, unmapped_outcomes, is_reached, event_count::int as event_count, event_types
        from main.fct_contact_attempts order by contact_attempt_id`,
  rows: [
    { contact_attempt_id: 'A1', trial_id: 'T1', referral_subject_id: 'p1', site_id: 'S1', attempt_number: 1, contact_attempt_date: '2024-01-02', days_since_referral: 1, contact_attempt_outcomes: ['noAnswer'], unmapped_outcomes: [], is_reached: F, event_count: 1, event_types: ['v1.contactAttempt.created'] },
    // two events under both spellings: one attempt, outcomes merged in order of appearance
    { contact_attempt_id: 'A2', trial_id: 'T1', referral_subject_id: 'p1', site_id: 'S1', attempt_number: 2, contact_attempt_date: '2024-01-03', days_since_referral: 2, contact_attempt_outcomes: ['appointmentScheduled', 'requestedCallBack'], unmapped_outcomes: [], is_reached: T, event_count: 2, event_types: ['v1.contactAttempt.created', 'v1.patient.contactAttempt.created'] },
    // only an unmapped outcome: reached unknown
    { contact_attempt_id: 'A3', trial_id: 'T1', referral_subject_id: 'p3', site_id: 'S2', attempt_number: 1, contact_attempt_date: '2024-01-04', days_since_referral: 1, contact_attempt_outcomes: ['callDropped'], unmapped_outcomes: ['callDropped'], is_reached: null, event_count: 1, event_types: ['v1.contactAttempt.created'] },
    { contact_attempt_id: 'A5a', trial_id: 'T2', referral_subject_id: 'p5', site_id: 'S9', attempt_number: 1, contact_attempt_date: '2024-01-08', days_since_referral: 0, contact_attempt_outcomes: ['noAnswer'], unmapped_outcomes: [], is_reached: F, event_count: 1, event_types: ['v1.contactAttempt.created'] },
    // delivered on two streams: one event
    { contact_attempt_id: 'A5b', trial_id: 'T2', referral_subject_id: 'p5', site_id: 'S9', attempt_number: 2, contact_attempt_date: '2024-01-10', days_since_referral: 2, contact_attempt_outcomes: ['leftVoicemail'], unmapped_outcomes: [], is_reached: F, event_count: 1, event_types: ['v1.contactAttempt.created'] },
    // no outcome at all: reached unknown
    { contact_attempt_id: 'A5c', trial_id: 'T2', referral_subject_id: 'p5', site_id: 'S9', attempt_number: 3, contact_attempt_date: '2024-01-22', days_since_referral: 14, contact_attempt_outcomes: [], unmapped_outcomes: [], is_reached: null, event_count: 1, event_types: ['v1.contactAttempt.created'] },
  ],
};

export const CONTACT_ATTEMPT_OUTCOMES: Expectation = {
  sql: `select contact_attempt_id, contact_attempt_outcome, outcome_order::int as outcome_order, is_mapped, outcome_group, is_reached
        from main.fct_contact_attempt_outcomes order by contact_attempt_id, outcome_order`,
  rows: [
    { contact_attempt_id: 'A1', contact_attempt_outcome: 'noAnswer', outcome_order: 1, is_mapped: T, outcome_group: 'no_answer', is_reached: F },
    { contact_attempt_id: 'A2', contact_attempt_outcome: 'appointmentScheduled', outcome_order: 1, is_mapped: T, outcome_group: 'reached_scheduled', is_reached: T },
    { contact_attempt_id: 'A2', contact_attempt_outcome: 'requestedCallBack', outcome_order: 2, is_mapped: T, outcome_group: 'callback_requested', is_reached: F },
    { contact_attempt_id: 'A3', contact_attempt_outcome: 'callDropped', outcome_order: 1, is_mapped: F, outcome_group: 'unmapped', is_reached: null },
    { contact_attempt_id: 'A5a', contact_attempt_outcome: 'noAnswer', outcome_order: 1, is_mapped: T, outcome_group: 'no_answer', is_reached: F },
    { contact_attempt_id: 'A5b', contact_attempt_outcome: 'leftVoicemail', outcome_order: 1, is_mapped: T, outcome_group: 'no_answer', is_reached: F },
  ],
};

export const FUNNEL_MILESTONES: Expectation = {
  sql: `select trial_id, referral_subject_id, site_id, has_created_event, is_orphan,
          created_event_count::int as created_event_count, referral_at::varchar as referral_at,
          referral_week::varchar as referral_week, acknowledged_at::varchar as acknowledged_at,
          hours_to_acknowledgement, contact_attempt_count::int as attempts,
          first_contact_attempt_date::varchar as first_attempt, days_to_first_contact_attempt::int as days_to_first_attempt,
          attempts_until_reached::int as attempts_until_reached, is_reached, is_unreachable_after_3_attempts as unreachable
        from main.fct_patient_funnel order by trial_id, referral_subject_id`,
  rows: [
    { trial_id: 'T1', referral_subject_id: 'p1', site_id: 'S1', has_created_event: T, is_orphan: F, created_event_count: 2, referral_at: '2024-01-01 09:00:00', referral_week: '2024-01-01', acknowledged_at: '2024-01-01 20:00:00', hours_to_acknowledgement: 11, attempts: 2, first_attempt: '2024-01-02', days_to_first_attempt: 1, attempts_until_reached: 2, is_reached: T, unreachable: F },
    { trial_id: 'T1', referral_subject_id: 'p2', site_id: 'S1', has_created_event: T, is_orphan: F, created_event_count: 2, referral_at: '2024-01-02 07:30:00', referral_week: '2024-01-01', acknowledged_at: null, hours_to_acknowledgement: null, attempts: 0, first_attempt: null, days_to_first_attempt: null, attempts_until_reached: null, is_reached: T, unreachable: F },
    { trial_id: 'T1', referral_subject_id: 'p3', site_id: 'S2', has_created_event: T, is_orphan: F, created_event_count: 1, referral_at: '2024-01-03 11:00:00', referral_week: '2024-01-01', acknowledged_at: null, hours_to_acknowledgement: null, attempts: 1, first_attempt: '2024-01-04', days_to_first_attempt: 1, attempts_until_reached: null, is_reached: T, unreachable: F },
    { trial_id: 'T1', referral_subject_id: 'p4', site_id: 'S1', has_created_event: F, is_orphan: T, created_event_count: 0, referral_at: null, referral_week: null, acknowledged_at: '2024-01-05 08:00:00', hours_to_acknowledgement: null, attempts: 0, first_attempt: null, days_to_first_attempt: null, attempts_until_reached: null, is_reached: T, unreachable: F },
    { trial_id: 'T1', referral_subject_id: 'p6', site_id: 'S1', has_created_event: T, is_orphan: F, created_event_count: 1, referral_at: '2024-01-04 12:00:00', referral_week: '2024-01-01', acknowledged_at: null, hours_to_acknowledgement: null, attempts: 0, first_attempt: null, days_to_first_attempt: null, attempts_until_reached: null, is_reached: null, unreachable: F },
    { trial_id: 'T2', referral_subject_id: 'p5', site_id: 'S9', has_created_event: T, is_orphan: F, created_event_count: 1, referral_at: '2024-01-08 08:00:00', referral_week: '2024-01-08', acknowledged_at: null, hours_to_acknowledgement: null, attempts: 3, first_attempt: '2024-01-08', days_to_first_attempt: 0, attempts_until_reached: null, is_reached: F, unreachable: T },
  ],
};

export const FUNNEL_STAGES: Expectation = {
  sql: `select referral_subject_id, reached_referred, reached_pre_screening, reached_visit_scheduled, reached_screening,
          reached_enrolled, high_water_rank::int as hwm, pre_screening_at::varchar as pre_screening_at,
          visit_scheduled_at::varchar as visit_scheduled_at, screening_at::varchar as screening_at, enrolled_at::varchar as enrolled_at,
          ever_pre_screen_failed, ever_screen_failed, ever_dropped, ever_archived,
          current_status, current_stage, current_status_since::varchar as current_status_since,
          days_in_current_status::int as days_in_current_status, final_disposition
        from main.fct_patient_funnel order by trial_id, referral_subject_id`,
  rows: [
    // a jump potentialCandidate → enrolled has passed every stage before (implied ranks)
    { referral_subject_id: 'p1', reached_referred: T, reached_pre_screening: T, reached_visit_scheduled: T, reached_screening: T, reached_enrolled: T, hwm: 5, pre_screening_at: '2024-01-10 00:00:00', visit_scheduled_at: '2024-01-10 00:00:00', screening_at: '2024-01-10 00:00:00', enrolled_at: '2024-01-10 00:00:00', ever_pre_screen_failed: F, ever_screen_failed: F, ever_dropped: F, ever_archived: F, current_status: 'enrolled', current_stage: 'enrolled', current_status_since: '2024-01-10 00:00:00', days_in_current_status: 12, final_disposition: 'enrolled' },
    { referral_subject_id: 'p2', reached_referred: T, reached_pre_screening: T, reached_visit_scheduled: T, reached_screening: T, reached_enrolled: F, hwm: 4, pre_screening_at: '2024-01-03 09:00:00', visit_scheduled_at: '2024-01-05 10:00:00', screening_at: '2024-01-06 10:00:00', enrolled_at: null, ever_pre_screen_failed: F, ever_screen_failed: T, ever_dropped: F, ever_archived: F, current_status: 'inScreening', current_stage: 'screening', current_status_since: '2024-01-09 10:00:00', days_in_current_status: 13, final_disposition: 'in_progress' },
    // the unknown status is current but moves no high-water mark; disposition from the last known status
    { referral_subject_id: 'p3', reached_referred: T, reached_pre_screening: T, reached_visit_scheduled: T, reached_screening: T, reached_enrolled: F, hwm: 4, pre_screening_at: '2024-01-05 10:00:00', visit_scheduled_at: '2024-01-05 10:00:00', screening_at: '2024-01-05 10:00:00', enrolled_at: null, ever_pre_screen_failed: F, ever_screen_failed: F, ever_dropped: F, ever_archived: F, current_status: 'someNewStatus', current_stage: 'unmapped', current_status_since: '2024-01-07 12:00:00', days_in_current_status: 15, final_disposition: 'in_progress' },
    { referral_subject_id: 'p4', reached_referred: T, reached_pre_screening: T, reached_visit_scheduled: F, reached_screening: F, reached_enrolled: F, hwm: 2, pre_screening_at: '2024-01-06 09:00:00', visit_scheduled_at: null, screening_at: null, enrolled_at: null, ever_pre_screen_failed: F, ever_screen_failed: F, ever_dropped: F, ever_archived: F, current_status: 'preScreening', current_stage: 'pre_screening', current_status_since: '2024-01-06 09:00:00', days_in_current_status: 16, final_disposition: 'in_progress' },
    { referral_subject_id: 'p6', reached_referred: T, reached_pre_screening: F, reached_visit_scheduled: F, reached_screening: F, reached_enrolled: F, hwm: 1, pre_screening_at: null, visit_scheduled_at: null, screening_at: null, enrolled_at: null, ever_pre_screen_failed: F, ever_screen_failed: F, ever_dropped: F, ever_archived: T, current_status: 'archive', current_stage: 'archived', current_status_since: '2024-01-05 10:00:00', days_in_current_status: 17, final_disposition: 'archived' },
    { referral_subject_id: 'p5', reached_referred: T, reached_pre_screening: F, reached_visit_scheduled: F, reached_screening: F, reached_enrolled: F, hwm: 1, pre_screening_at: null, visit_scheduled_at: null, screening_at: null, enrolled_at: null, ever_pre_screen_failed: F, ever_screen_failed: F, ever_dropped: F, ever_archived: F, current_status: 'potentialCandidate', current_stage: 'referred', current_status_since: '2024-01-08 09:00:00', days_in_current_status: 14, final_disposition: 'in_progress' },
  ],
};

export const FUNNEL_FLAGS: Expectation = {
  sql: `select referral_subject_id, is_multi_site, site_count::int as site_count, site_ids, has_regression,
          has_unmapped_status, has_backfilled_events, created_event_types, as_of_at::varchar as as_of_at
        from main.fct_patient_funnel order by trial_id, referral_subject_id`,
  rows: [
    { referral_subject_id: 'p1', is_multi_site: F, site_count: 1, site_ids: ['S1'], has_regression: F, has_unmapped_status: F, has_backfilled_events: F, created_event_types: ['v1.patient.created', 'v2.patient.created'], as_of_at: '2024-01-22 00:00:00' },
    { referral_subject_id: 'p2', is_multi_site: F, site_count: 1, site_ids: ['S1'], has_regression: T, has_unmapped_status: F, has_backfilled_events: T, created_event_types: ['v1.patient.created', 'v2.patient.created'], as_of_at: '2024-01-22 00:00:00' },
    { referral_subject_id: 'p3', is_multi_site: F, site_count: 1, site_ids: ['S2'], has_regression: T, has_unmapped_status: T, has_backfilled_events: F, created_event_types: ['v1.patient.created'], as_of_at: '2024-01-22 00:00:00' },
    { referral_subject_id: 'p4', is_multi_site: T, site_count: 2, site_ids: ['S1', 'S2'], has_regression: F, has_unmapped_status: F, has_backfilled_events: F, created_event_types: [], as_of_at: '2024-01-22 00:00:00' },
    { referral_subject_id: 'p6', is_multi_site: T, site_count: 2, site_ids: ['S1', 'S2'], has_regression: F, has_unmapped_status: F, has_backfilled_events: F, created_event_types: ['v1.patient.created'], as_of_at: '2024-01-22 00:00:00' },
    { referral_subject_id: 'p5', is_multi_site: F, site_count: 1, site_ids: ['S9'], has_regression: F, has_unmapped_status: F, has_backfilled_events: F, created_event_types: ['v1.patient.created'], as_of_at: '2024-01-22 00:00:00' },
  ],
};

export const MART: Expectation = {
  sql: `select trial_id, site_id, referral_week::varchar as referral_week, referrals::int as referrals,
          acknowledged::int as acknowledged, reached_pre_screening::int as pre, reached_visit_scheduled::int as vis,
          reached_screening::int as scr, reached_enrolled::int as enr, screen_failed::int as sf, archived::int as arch,
          never_attempted::int as never_attempted, contact_attempts::int as attempts, attempted_by_day_1::int as by_day_1,
          attempted_by_day_1_denominator::int as by_day_1_den, unreachable_after_3_attempts::int as unreachable,
          median_hours_to_acknowledgement as med_ack, enrolled_within_60d::int as enr60,
          enrolled_within_60d_denominator::int as enr60_den, acknowledged_within_24h::int as ack24,
          acknowledged_within_24h_denominator::int as ack24_den
        from main.mart_recruitment_funnel order by trial_id, site_id, referral_week`,
  rows: [
    { trial_id: 'T1', site_id: 'S1', referral_week: '2024-01-01', referrals: 3, acknowledged: 1, pre: 2, vis: 2, scr: 2, enr: 1, sf: 1, arch: 1, never_attempted: 2, attempts: 2, by_day_1: 1, by_day_1_den: 3, unreachable: 0, med_ack: 11, enr60: null, enr60_den: null, ack24: 1, ack24_den: 3 },
    { trial_id: 'T1', site_id: 'S2', referral_week: '2024-01-01', referrals: 1, acknowledged: 0, pre: 1, vis: 1, scr: 1, enr: 0, sf: 0, arch: 0, never_attempted: 0, attempts: 1, by_day_1: 1, by_day_1_den: 1, unreachable: 0, med_ack: null, enr60: null, enr60_den: null, ack24: 0, ack24_den: 1 },
    // the week of 2024-01-08 ends on the 15th: day 1 is complete on the 16th (as of the 22nd)
    { trial_id: 'T2', site_id: 'S9', referral_week: '2024-01-08', referrals: 1, acknowledged: 0, pre: 0, vis: 0, scr: 0, enr: 0, sf: 0, arch: 0, never_attempted: 0, attempts: 3, by_day_1: 1, by_day_1_den: 1, unreachable: 1, med_ack: null, enr60: null, enr60_den: null, ack24: 0, ack24_den: 1 },
  ],
};

export const DQ_SUMMARY: Expectation = {
  sql: `select check_name, issue_count::int as issue_count from main.dq_summary order by check_name`,
  rows: [
    { check_name: 'dq_future_dated_events', issue_count: 0 },
    { check_name: 'dq_invalid_events', issue_count: 1 },
    // e27 (status published 15 days late) and the two v2 backfills
    { check_name: 'dq_late_events', issue_count: 3 },
    { check_name: 'dq_multi_site_patients', issue_count: 2 },
    { check_name: 'dq_orphan_events', issue_count: 2 },
    { check_name: 'dq_quarantined_events', issue_count: 0 },
    { check_name: 'dq_unknown_event_types', issue_count: 1 },
    { check_name: 'dq_unmapped_outcomes', issue_count: 1 },
    // no --site-names: every event site (T1/S1, T1/S2, T2/S9) is listed
    { check_name: 'dq_unmapped_sites', issue_count: 3 },
    { check_name: 'dq_unmapped_statuses', issue_count: 1 },
  ],
};

export const SITES: Expectation = {
  sql: `select website_site_id, website_display_name, sponsor_site_id, phone_number, has_valid_geo, is_current,
          first_seen_at::varchar as first_seen_at, last_seen_at::varchar as last_seen_at,
          attribute_version_count::int as versions
        from main.dim_study_website_sites order by website_site_id`,
  rows: [
    { website_site_id: 'W-A', website_display_name: 'Site A', sponsor_site_id: 'SP-1', phone_number: '555-9999', has_valid_geo: T, is_current: T, first_seen_at: '2024-01-01 00:00:00', last_seen_at: '2024-01-03 00:00:00', versions: 2 },
    { website_site_id: 'W-B', website_display_name: 'Site B', sponsor_site_id: 'SP-2', phone_number: '555-0002', has_valid_geo: T, is_current: F, first_seen_at: '2024-01-01 00:00:00', last_seen_at: '2024-01-01 00:00:00', versions: 1 },
    // 95° latitude: out of range
    { website_site_id: 'W-C', website_display_name: 'Site C', sponsor_site_id: null, phone_number: null, has_valid_geo: F, is_current: T, first_seen_at: '2024-01-02 00:00:00', last_seen_at: '2024-01-03 00:00:00', versions: 2 },
  ],
};

export const SITE_HISTORY: Expectation = {
  sql: `select website_site_id, version_number::int as version_number, phone_number, latitude, has_valid_geo,
          valid_from::varchar as valid_from, valid_to::varchar as valid_to
        from main.dim_study_website_sites_history order by website_site_id, version_number`,
  rows: [
    { website_site_id: 'W-A', version_number: 1, phone_number: '555-0001', latitude: 42.36, has_valid_geo: T, valid_from: '2024-01-01 00:00:00', valid_to: '2024-01-03 00:00:00' },
    { website_site_id: 'W-A', version_number: 2, phone_number: '555-9999', latitude: 42.36, has_valid_geo: T, valid_from: '2024-01-03 00:00:00', valid_to: null },
    { website_site_id: 'W-B', version_number: 1, phone_number: '555-0002', latitude: 39.74, has_valid_geo: T, valid_from: '2024-01-01 00:00:00', valid_to: null },
    // (0, 0) is not a place
    { website_site_id: 'W-C', version_number: 1, phone_number: null, latitude: 0, has_valid_geo: F, valid_from: '2024-01-02 00:00:00', valid_to: '2024-01-03 00:00:00' },
    { website_site_id: 'W-C', version_number: 2, phone_number: null, latitude: 95, has_valid_geo: F, valid_from: '2024-01-03 00:00:00', valid_to: null },
  ],
};

export const SITE_ACTIVITY: Expectation = {
  sql: `select trial_id, site_id, activity_week::varchar as week, referrals_received::int as ref, referrals_acknowledged::int as ack,
          first_contact_attempts::int as fca, contact_attempts::int as ca, patients_reached::int as reached,
          pre_screenings::int as pre, visits_scheduled::int as vis, screenings::int as scr, enrolments::int as enr,
          pre_screen_failures::int as psf, screen_failures::int as sf, is_complete_week as complete
        from main.mart_site_activity order by trial_id, site_id, activity_week`,
  rows: [
    // p1, p2, p6 referred; p1 and the orphan p4 (attributed to S1, its first event) acknowledged; p2 reached by its
    // preScreening status, p4 by its own; p1 by attempt A2
    { trial_id: 'T1', site_id: 'S1', week: '2024-01-01', ref: 3, ack: 2, fca: 1, ca: 2, reached: 3, pre: 2, vis: 1, scr: 1, enr: 0, psf: 0, sf: 0, complete: T },
    // p1's jump to enrolled on the 10th dates every stage it implies in that week; p2's screen failure
    { trial_id: 'T1', site_id: 'S1', week: '2024-01-08', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 1, vis: 1, scr: 1, enr: 1, psf: 0, sf: 1, complete: T },
    { trial_id: 'T1', site_id: 'S1', week: '2024-01-15', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: T },
    // as_of_at is Monday 2024-01-22 00:00: its week has only begun
    { trial_id: 'T1', site_id: 'S1', week: '2024-01-22', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: F },
    { trial_id: 'T1', site_id: 'S2', week: '2024-01-01', ref: 1, ack: 0, fca: 1, ca: 1, reached: 1, pre: 1, vis: 1, scr: 1, enr: 0, psf: 0, sf: 0, complete: T },
    { trial_id: 'T1', site_id: 'S2', week: '2024-01-08', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: T },
    { trial_id: 'T1', site_id: 'S2', week: '2024-01-15', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: T },
    { trial_id: 'T1', site_id: 'S2', week: '2024-01-22', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: F },
    { trial_id: 'T2', site_id: 'S9', week: '2024-01-08', ref: 1, ack: 0, fca: 1, ca: 2, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: T },
    { trial_id: 'T2', site_id: 'S9', week: '2024-01-15', ref: 0, ack: 0, fca: 0, ca: 0, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: T },
    // the third attempt, counted in its own week
    { trial_id: 'T2', site_id: 'S9', week: '2024-01-22', ref: 0, ack: 0, fca: 0, ca: 1, reached: 0, pre: 0, vis: 0, scr: 0, enr: 0, psf: 0, sf: 0, complete: F },
  ],
};

export const SITE_ACTIVITY_MONTHLY: Expectation = {
  sql: `select trial_id, site_id, activity_month::varchar as month, activity_month_end::varchar as month_end,
          referrals_received::int as ref, contact_attempts::int as ca, enrolments::int as enr, screen_failures::int as sf,
          is_complete_month as complete
        from main.mart_site_activity_monthly order by trial_id, site_id, activity_month`,
  rows: [
    { trial_id: 'T1', site_id: 'S1', month: '2024-01-01', month_end: '2024-01-31', ref: 3, ca: 2, enr: 1, sf: 1, complete: F },
    { trial_id: 'T1', site_id: 'S2', month: '2024-01-01', month_end: '2024-01-31', ref: 1, ca: 1, enr: 0, sf: 0, complete: F },
    { trial_id: 'T2', site_id: 'S9', month: '2024-01-01', month_end: '2024-01-31', ref: 1, ca: 3, enr: 0, sf: 0, complete: F },
  ],
};

export const OPEN_REFERRALS: Expectation = {
  sql: `select trial_id, site_id, referral_subject_id, worklist_rank::int as rank, worklist_step as step,
          referred_at::varchar as referred_at, age_days::int as age_days, is_acknowledged, contact_attempt_count::int as attempts,
          last_contact_attempt_date::varchar as last_attempt, last_contact_attempt_at::varchar as last_attempt_at,
          days_since_last_attempt::int as since_last, current_status, as_of_at::varchar as as_of_at
        from main.mart_open_referrals order by trial_id, site_id, worklist_rank`,
  rows: [
    // p1 enrolled and p6 archived are off the list; the orphan p4 has no referral
    { trial_id: 'T1', site_id: 'S1', referral_subject_id: 'p2', rank: 1, step: 'acknowledge', referred_at: '2024-01-02 07:30:00', age_days: 20, is_acknowledged: F, attempts: 0, last_attempt: null, last_attempt_at: null, since_last: null, current_status: 'inScreening', as_of_at: '2024-01-22 00:00:00' },
    // an unknown current status: open, by its latest known status (preScreening)
    { trial_id: 'T1', site_id: 'S2', referral_subject_id: 'p3', rank: 1, step: 'acknowledge', referred_at: '2024-01-03 11:00:00', age_days: 19, is_acknowledged: F, attempts: 1, last_attempt: '2024-01-04', last_attempt_at: '2024-01-04 16:00:00', since_last: 18, current_status: 'someNewStatus', as_of_at: '2024-01-22 00:00:00' },
    { trial_id: 'T2', site_id: 'S9', referral_subject_id: 'p5', rank: 1, step: 'acknowledge', referred_at: '2024-01-08 08:00:00', age_days: 14, is_acknowledged: F, attempts: 3, last_attempt: '2024-01-22', last_attempt_at: '2024-01-22 09:00:00', since_last: 0, current_status: 'potentialCandidate', as_of_at: '2024-01-22 00:00:00' },
  ],
};

/** Every expectation, by name. */
export const EXPECTATIONS: Record<string, Expectation> = {
  fct_patient_status_history: STATUS_HISTORY,
  fct_contact_attempts: CONTACT_ATTEMPTS,
  fct_contact_attempt_outcomes: CONTACT_ATTEMPT_OUTCOMES,
  fct_patient_funnel_milestones: FUNNEL_MILESTONES,
  fct_patient_funnel_stages: FUNNEL_STAGES,
  fct_patient_funnel_flags: FUNNEL_FLAGS,
  mart_recruitment_funnel: MART,
  mart_site_activity: SITE_ACTIVITY,
  mart_site_activity_monthly: SITE_ACTIVITY_MONTHLY,
  mart_open_referrals: OPEN_REFERRALS,
  dq_summary: DQ_SUMMARY,
  dim_study_website_sites: SITES,
  dim_study_website_sites_history: SITE_HISTORY,
};
