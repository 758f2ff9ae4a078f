/**
 * What the report shows, read from the marts and `dq_` models (docs/report.md). Every number
 * is a mart's number: a row as stored, or the mart's additive counts summed over sites or
 * weeks the way docs/models.md says to aggregate them (`sum(numerator) / sum(denominator)`;
 * medians and P90 are per row and shown per row). Nothing here reads `raw`, `stg_` or `int_`.
 *
 * Text values (trial ids, site ids and names, statuses, event types) come from upstream
 * events or the operator's CSV: they are returned as they are and escaped by the renderer.
 * The worklist carries `patient_key`, never `referral_subject_id` (docs/security.md "The report").
 *
 * @module
 */
import { loadModelCatalog, type ModelCatalog } from '../catalog/catalog.js';
import { ReportError } from '../errors.js';
import type { Warehouse } from '../warehouse/Warehouse.js';

/** The main-path stages of the funnel, in order, with the `mart_recruitment_funnel` column of each. */
export const FUNNEL_STAGES = [
  { stage: 'referred', column: 'referrals', label: 'Referred' },
  { stage: 'pre_screening', column: 'reached_pre_screening', label: 'Pre-screening' },
  { stage: 'visit_scheduled', column: 'reached_visit_scheduled', label: 'Visit scheduled' },
  { stage: 'screening', column: 'reached_screening', label: 'Screening' },
  { stage: 'enrolled', column: 'reached_enrolled', label: 'Enrolled' },
] as const;

/** One stage of a trial's funnel: patients with a created event that ever reached it. */
export interface FunnelStage {
  stage: (typeof FUNNEL_STAGES)[number]['stage'];
  label: string;
  count: number;
}

/** A trial's funnel and the contact counts beside it (sums of `mart_recruitment_funnel`). */
export interface TrialFunnel {
  stages: FunnelStage[];
  acknowledged: number;
  contactAttempted: number;
  reached: number;
  openInProgress: number;
}

/** One week of one site (`mart_site_activity`). */
export interface SiteWeek {
  siteId: string;
  siteName: string | null;
  /** Monday of the ISO week, `YYYY-MM-DD`. */
  week: string;
  referralsReceived: number;
  enrolments: number;
  isCompleteWeek: boolean;
}

/** One site's totals over every week of `mart_site_activity`. */
export interface SiteTotals {
  siteId: string;
  siteName: string | null;
  weeks: number;
  referralsReceived: number;
  referralsAcknowledged: number;
  firstContactAttempts: number;
  patientsReached: number;
  screenings: number;
  enrolments: number;
  /** Enrolments in the last four complete weeks. */
  enrolmentsLast4Weeks: number;
  /** The site's enrolment rate per 30 days (`mart_site_enrolment_forecast`); null when it has no referral. */
  rate: SiteRate | null;
}

/** A site's posterior enrolment rate, patients per 30 days (`mart_site_enrolment_forecast`). */
export interface SiteRate {
  p10: number;
  p50: number;
  p90: number;
  /** The site's p90 is below the trial's typical site rate (`is_rate_below_trial`). */
  isBelowTrial: boolean;
}

/** A trial's enrolment forecast (`mart_enrolment_forecast`, docs/models.md "Enrolment forecast"). */
export interface TrialForecast {
  /** Patients of the trial enrolled by `as_of_at`, orphans included. */
  enrolledToDate: number;
  siteCount: number;
  /** Percentiles 10, 50, 90 of the enrolments of the next 91 days. */
  next91d: [number, number, number];
  target: number | null;
  /** `YYYY-MM-DD` or null. */
  targetDate: string | null;
  /** Percentiles 10, 50, 90 of the date the target is reached (`YYYY-MM-DD`; null beyond 100 years); null without a target. */
  reachedOn: [string | null, string | null, string | null] | null;
  probabilityByTargetDate: number | null;
  /** `as_of_at`'s date, `YYYY-MM-DD`: where every forecast starts. */
  asOfDate: string;
}

/** One site's last months (`mart_site_activity_monthly`): referrals and enrolments per month. */
export interface SiteMonths {
  siteId: string;
  siteName: string | null;
  /** Per month of {@link TrialReport.months}, in the same order; zeros where the site had no row yet. */
  months: { referralsReceived: number; enrolments: number }[];
}

/** A numerator over a denominator; both null when the mart withholds them (right-censored). */
export interface Share {
  numerator: number | null;
  denominator: number | null;
}

/** Time to acknowledgement and to first contact for one trial. */
export interface TrialTiming {
  /** Acknowledged within 24, 48, 72 h, over the cohorts whose window is complete. */
  acknowledgedWithin: { hours: number; share: Share }[];
  /** First contact attempt by day 0–3, over the cohorts whose window is complete. */
  attemptedByDay: { day: number; share: Share }[];
  /** Per site × referral week: the mart's median and P90 (rows with referrals that have a value). */
  cohorts: {
    siteId: string;
    siteName: string | null;
    week: string;
    medianHoursToAck: number | null;
    p90HoursToAck: number | null;
    medianDaysToFirstAttempt: number | null;
    p90DaysToFirstAttempt: number | null;
  }[];
}

/** One referral week of a trial, summed over sites, with its right-censored measures. */
export interface CohortWeek {
  week: string;
  cohortAgeDays: number;
  referrals: number;
  acknowledgedWithin72h: Share;
  attemptedByDay3: Share;
  screeningWithin30d: Share;
  enrolledWithin60d: Share;
  /** True when at least one windowed measure is withheld: the cohort's window is not complete. */
  isCensored: boolean;
}

/** One row of the worklist (`mart_open_referrals`). */
export interface WorklistRow {
  rank: number;
  patientKey: string;
  step: string;
  referralDate: string;
  ageDays: number;
  isAcknowledged: boolean;
  contactAttemptCount: number;
  daysSinceLastAttempt: number | null;
  currentStatus: string | null;
  /** The stage of the current status (`current_stage`: the funnel's stages, off-path outcomes, or `unmapped`). */
  currentStage: string | null;
}

/** One site's part of the worklist: its open count and its oldest rows. */
export interface WorklistSite {
  siteId: string;
  siteName: string | null;
  openCount: number;
  rows: WorklistRow[];
}

/** Everything the report shows for one trial. */
export interface TrialReport {
  trialId: string;
  funnel: TrialFunnel;
  siteWeeks: SiteWeek[];
  siteTotals: SiteTotals[];
  /** The trial's last {@link MONTHS} months of `mart_site_activity_monthly` (`YYYY-MM-DD`, oldest first), and whether each is complete. */
  months: { month: string; isComplete: boolean }[];
  siteMonths: SiteMonths[];
  timing: TrialTiming;
  cohorts: CohortWeek[];
  worklist: WorklistSite[];
  /** Null when the trial has no referral (or the warehouse predates the forecast models). */
  forecast: TrialForecast | null;
  /** Counts of this trial's rows in the `dq_` models that carry a trial. */
  dq: Record<string, number>;
}

/** The data-quality panel: `dq_summary` and the values behind the checks of unknown values. */
export interface DataQuality {
  summary: { check: string; description: string; issueCount: number; detailRows: number }[];
  unknownEventTypes: { value: string; count: number }[];
  unmappedStatuses: { value: string; count: number }[];
  unmappedOutcomes: { value: string; count: number }[];
  quarantined: { streamId: string; streamPosition: number; reason: string }[];
}

/** The whole report's data. */
export interface ReportData {
  /** `as_of_at` of the marts (ISO 8601 UTC), null when there is no referral yet. */
  asOfAt: string | null;
  trials: TrialReport[];
  dataQuality: DataQuality;
  /** `--report-worklist-rows`: rows per site in the worklist. */
  worklistRows: number;
}

/** The marts the report reads; each must exist (a transform has run). */
export const REPORT_MARTS = ['mart_recruitment_funnel', 'mart_site_activity', 'mart_site_activity_monthly', 'mart_open_referrals'] as const;

/**
 * The models the report reads: {@link REPORT_MARTS} and every `dq_` model of the catalog (the
 * data-quality panel has a column per check; docs/report.md).
 */
export function reportModels(catalog: ModelCatalog = loadModelCatalog()): string[] {
  return [...REPORT_MARTS, ...catalog.models.filter((m) => m.layer === 'dq').map((m) => m.name)];
}

/** Months of the monthly pace table. */
export const MONTHS = 3;

/** How many of the unknown values of each check the panel lists. */
const DQ_VALUES = 20;

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const share = (n: unknown, d: unknown): Share => ({ numerator: numOrNull(n), denominator: numOrNull(d) });

/**
 * Read the report's data from the warehouse's marts and `dq_` models.
 *
 * @param worklistRows rows per site of the worklist (`worklist_rank <= worklistRows`)
 * @throws {ReportError} a model the report reads is missing (no transform yet; exit 7)
 * @throws {WarehouseError} a query failed
 */
export async function readReportData(wh: Warehouse, worklistRows: number): Promise<ReportData> {
  const present = new Set(
    (await wh.all<{ name: string }>("select table_name as name from information_schema.tables where table_schema = 'main'")).map(
      (r) => r.name,
    ),
  );
  const models = reportModels();
  const missing = models.filter((m) => !present.has(m));
  if (missing.length > 0) {
    throw new ReportError(`cannot write the report: the warehouse has no ${missing.join(', ')}`, {
      hint: 'run `recruit-etl transform` (or `run`) first',
    });
  }

  const asOf = await wh.one<{ as_of: string | null }>(
    `select strftime(max(as_of_at), '%Y-%m-%dT%H:%M:%SZ') as as_of from (
       select as_of_at from main.mart_recruitment_funnel union all select as_of_at from main.mart_site_activity)`,
  );
  const worklists = await readWorklists(wh, worklistRows);
  const trialIds = (
    await wh.all<{ trial_id: string }>(
      `select trial_id from main.mart_recruitment_funnel union select trial_id from main.mart_site_activity
       union select unnest(from_json(?, '["VARCHAR"]')) order by trial_id`,
      [JSON.stringify([...worklists.keys()])],
    )
  ).map((r) => r.trial_id);

  const forecasts =
    present.has('mart_enrolment_forecast') && present.has('mart_site_enrolment_forecast') ? await readForecasts(wh) : new Map();
  const perTrialDq = await dqPerTrial(wh, models);
  const trials: TrialReport[] = [];
  for (const trialId of trialIds) {
    const trial = await readTrial(wh, trialId, worklists.get(trialId) ?? [], perTrialDq);
    const f = forecasts.get(trialId);
    trial.forecast = f?.forecast ?? null;
    for (const site of trial.siteTotals) site.rate = f?.rates.get(site.siteId) ?? null;
    trials.push(trial);
  }
  return { asOfAt: asOf?.as_of ?? null, trials, dataQuality: await readDataQuality(wh), worklistRows };
}

/**
 * Every trial's worklist, from one query of `mart_open_referrals` (a view, computed at each
 * read: docs/models.md "mart_open_referrals"): per site its open count and its oldest
 * `worklistRows` rows (at least 1: `--report-worklist-rows`), sites in order.
 */
async function readWorklists(wh: Warehouse, worklistRows: number): Promise<Map<string, WorklistSite[]>> {
  const rows = await wh.all<Record<string, unknown>>(
    `select trial_id, site_id, site_name, count(*) over (partition by trial_id, site_id) as open_count,
       worklist_rank, patient_key, worklist_step, strftime(referral_date, '%Y-%m-%d') as referral_date, age_days,
       is_acknowledged, contact_attempt_count, days_since_last_attempt, current_status, current_stage
     from main.mart_open_referrals
     qualify worklist_rank <= ?
     order by trial_id, site_id, worklist_rank`,
    [worklistRows],
  );
  const out = new Map<string, WorklistSite[]>();
  let site: WorklistSite | undefined;
  for (const [k, r] of rows.entries()) {
    const trialId = String(r['trial_id']);
    // Rows come by trial, then site (a null site_id is a site of its own).
    if (k === 0 || rows[k - 1]!['trial_id'] !== r['trial_id'] || rows[k - 1]!['site_id'] !== r['site_id']) {
      site = {
        siteId: r['site_id'] as string,
        siteName: (r['site_name'] as string | null) ?? null,
        openCount: num(r['open_count']),
        rows: [],
      };
      const sites = out.get(trialId) ?? [];
      sites.push(site);
      out.set(trialId, sites);
    }
    site!.rows.push({
      rank: num(r['worklist_rank']),
      patientKey: String(r['patient_key']),
      step: String(r['worklist_step']),
      referralDate: String(r['referral_date']),
      ageDays: num(r['age_days']),
      isAcknowledged: r['is_acknowledged'] === true,
      contactAttemptCount: num(r['contact_attempt_count']),
      daysSinceLastAttempt: numOrNull(r['days_since_last_attempt']),
      currentStatus: (r['current_status'] as string | null) ?? null,
      currentStage: (r['current_stage'] as string | null) ?? null,
    });
  }
  return out;
}

/** One trial's part of the report (its forecast is set by the caller). */
async function readTrial(wh: Warehouse, trialId: string, worklist: WorklistSite[], perTrialDq: readonly string[]): Promise<TrialReport> {
  const funnel = await readTrialFunnel(wh, trialId);
  const siteWeeks = await readSiteWeeks(wh, trialId);
  const siteTotals = await readSiteTotals(wh, trialId);
  const { months, siteMonths } = await readSiteMonths(wh, trialId);
  const timing = await readTiming(wh, trialId);
  const cohorts = await readCohorts(wh, trialId);
  const dq = await readTrialDq(wh, trialId, perTrialDq);
  return { trialId, funnel, siteWeeks, siteTotals, months, siteMonths, timing, cohorts, worklist, forecast: null, dq };
}

/** The trial's funnel and contact counts: sums of `mart_recruitment_funnel`. */
async function readTrialFunnel(wh: Warehouse, trialId: string): Promise<TrialFunnel> {
  const f = await wh.one<Record<string, unknown>>(
    `select ${FUNNEL_STAGES.map((s) => `sum(${s.column}) as ${s.column}`).join(', ')},
       sum(acknowledged) as acknowledged, sum(contact_attempted) as contact_attempted, sum(reached) as reached,
       sum(open_in_progress) as open_in_progress
     from main.mart_recruitment_funnel where trial_id = ?`,
    [trialId],
  );
  return {
    stages: FUNNEL_STAGES.map((s) => ({ stage: s.stage, label: s.label, count: num(f?.[s.column]) })),
    acknowledged: num(f?.['acknowledged']),
    contactAttempted: num(f?.['contact_attempted']),
    reached: num(f?.['reached']),
    openInProgress: num(f?.['open_in_progress']),
  };
}

/** The trial's weeks per site (`mart_site_activity`). */
async function readSiteWeeks(wh: Warehouse, trialId: string): Promise<SiteWeek[]> {
  return (
    await wh.all<Record<string, unknown>>(
      `select site_id, site_name, strftime(activity_week, '%Y-%m-%d') as week, referrals_received, enrolments, is_complete_week
       from main.mart_site_activity where trial_id = ? order by site_id, activity_week`,
      [trialId],
    )
  ).map((r) => ({
    siteId: String(r['site_id']),
    siteName: (r['site_name'] as string | null) ?? null,
    week: String(r['week']),
    referralsReceived: num(r['referrals_received']),
    enrolments: num(r['enrolments']),
    isCompleteWeek: r['is_complete_week'] === true,
  }));
}

/** Each site's totals over its weeks, and its enrolments of the last 4 complete weeks (`mart_site_activity`). */
async function readSiteTotals(wh: Warehouse, trialId: string): Promise<SiteTotals[]> {
  return (
    await wh.all<Record<string, unknown>>(
      `with complete as (
         select *, dense_rank() over (partition by trial_id order by activity_week desc) as recent
         from main.mart_site_activity where trial_id = ? and is_complete_week
       ), last4 as (
         select site_id, sum(enrolments) as enrolments from complete where recent <= 4 group by site_id
       )
       select a.site_id, any_value(a.site_name) as site_name, count(*) as weeks,
         sum(a.referrals_received) as referrals_received, sum(a.referrals_acknowledged) as referrals_acknowledged,
         sum(a.first_contact_attempts) as first_contact_attempts, sum(a.patients_reached) as patients_reached,
         sum(a.screenings) as screenings, sum(a.enrolments) as enrolments,
         coalesce(any_value(last4.enrolments), 0) as enrolments_last4
       from main.mart_site_activity a left join last4 using (site_id)
       where a.trial_id = ? group by a.site_id order by a.site_id`,
      [trialId, trialId],
    )
  ).map((r) => ({
    siteId: String(r['site_id']),
    siteName: (r['site_name'] as string | null) ?? null,
    weeks: num(r['weeks']),
    referralsReceived: num(r['referrals_received']),
    referralsAcknowledged: num(r['referrals_acknowledged']),
    firstContactAttempts: num(r['first_contact_attempts']),
    patientsReached: num(r['patients_reached']),
    screenings: num(r['screenings']),
    enrolments: num(r['enrolments']),
    enrolmentsLast4Weeks: num(r['enrolments_last4']),
    rate: null,
  }));
}

/** The trial's last {@link MONTHS} months and each site's figures in them (`mart_site_activity_monthly`). */
async function readSiteMonths(wh: Warehouse, trialId: string): Promise<Pick<TrialReport, 'months' | 'siteMonths'>> {
  const monthRows = await wh.all<Record<string, unknown>>(
    `with months as (
       select distinct activity_month, is_complete_month from main.mart_site_activity_monthly where trial_id = ?
       order by activity_month desc limit ${MONTHS}
     )
     select strftime(m.activity_month, '%Y-%m-%d') as month, m.is_complete_month, a.site_id, a.site_name, a.referrals_received, a.enrolments
     from months m join main.mart_site_activity_monthly a on a.activity_month = m.activity_month and a.trial_id = ?
     order by a.site_id, m.activity_month`,
    [trialId, trialId],
  );
  const months = [...new Map(monthRows.map((r) => [String(r['month']), r['is_complete_month'] === true])).entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([month, isComplete]) => ({ month, isComplete }));
  const bySite = new Map<string, SiteMonths>();
  for (const r of monthRows) {
    const siteId = String(r['site_id']);
    const site = bySite.get(siteId) ?? {
      siteId,
      siteName: (r['site_name'] as string | null) ?? null,
      months: months.map(() => ({ referralsReceived: 0, enrolments: 0 })),
    };
    site.months[months.findIndex((m) => m.month === r['month'])] = {
      referralsReceived: num(r['referrals_received']),
      enrolments: num(r['enrolments']),
    };
    bySite.set(siteId, site);
  }
  return { months, siteMonths: [...bySite.values()] };
}

/** The windowed shares and the per-site timing cohorts (`mart_recruitment_funnel`). */
async function readTiming(wh: Warehouse, trialId: string): Promise<TrialTiming> {
  // Windowed shares: sum() skips the rows the mart withholds (right-censored cohorts).
  const t = await wh.one<Record<string, unknown>>(
    `select ${[24, 48, 72].map((h) => `sum(acknowledged_within_${h}h) as a${h}, sum(acknowledged_within_${h}h_denominator) as a${h}d`).join(', ')},
       ${[0, 1, 2, 3].map((d) => `sum(attempted_by_day_${d}) as b${d}, sum(attempted_by_day_${d}_denominator) as b${d}d`).join(', ')}
     from main.mart_recruitment_funnel where trial_id = ?`,
    [trialId],
  );
  const timingCohorts = (
    await wh.all<Record<string, unknown>>(
      `select site_id, site_name, strftime(referral_week, '%Y-%m-%d') as week,
         median_hours_to_acknowledgement, p90_hours_to_acknowledgement,
         median_days_to_first_contact_attempt, p90_days_to_first_contact_attempt
       from main.mart_recruitment_funnel where trial_id = ? order by site_id, referral_week`,
      [trialId],
    )
  ).map((r) => ({
    siteId: String(r['site_id']),
    siteName: (r['site_name'] as string | null) ?? null,
    week: String(r['week']),
    medianHoursToAck: numOrNull(r['median_hours_to_acknowledgement']),
    p90HoursToAck: numOrNull(r['p90_hours_to_acknowledgement']),
    medianDaysToFirstAttempt: numOrNull(r['median_days_to_first_contact_attempt']),
    p90DaysToFirstAttempt: numOrNull(r['p90_days_to_first_contact_attempt']),
  }));
  return {
    acknowledgedWithin: [24, 48, 72].map((h) => ({ hours: h, share: share(t?.[`a${h}`], t?.[`a${h}d`]) })),
    attemptedByDay: [0, 1, 2, 3].map((d) => ({ day: d, share: share(t?.[`b${d}`], t?.[`b${d}d`]) })),
    cohorts: timingCohorts,
  };
}

/** The trial's referral-week cohorts (`mart_recruitment_funnel`). */
async function readCohorts(wh: Warehouse, trialId: string): Promise<CohortWeek[]> {
  return (
    await wh.all<Record<string, unknown>>(
      `select strftime(referral_week, '%Y-%m-%d') as week, max(cohort_age_days) as cohort_age_days, sum(referrals) as referrals,
         sum(acknowledged_within_72h) as a72, sum(acknowledged_within_72h_denominator) as a72d,
         sum(attempted_by_day_3) as b3, sum(attempted_by_day_3_denominator) as b3d,
         sum(screening_within_30d) as s30, sum(screening_within_30d_denominator) as s30d,
         sum(enrolled_within_60d) as e60, sum(enrolled_within_60d_denominator) as e60d,
         bool_or(acknowledged_within_72h_denominator is null or attempted_by_day_3_denominator is null
           or screening_within_30d_denominator is null or enrolled_within_60d_denominator is null) as censored
       from main.mart_recruitment_funnel where trial_id = ? group by referral_week order by referral_week`,
      [trialId],
    )
  ).map((r) => ({
    week: String(r['week']),
    cohortAgeDays: num(r['cohort_age_days']),
    referrals: num(r['referrals']),
    acknowledgedWithin72h: share(r['a72'], r['a72d']),
    attemptedByDay3: share(r['b3'], r['b3d']),
    screeningWithin30d: share(r['s30'], r['s30d']),
    enrolledWithin60d: share(r['e60'], r['e60d']),
    isCensored: r['censored'] === true,
  }));
}

/** The `dq_` models among `models` whose rows carry a `trial_id`: the checks counted per trial. */
async function dqPerTrial(wh: Warehouse, models: readonly string[]): Promise<string[]> {
  const rows = await wh.all<{ name: string }>(
    `select table_name as name from information_schema.columns
     where table_schema = 'main' and column_name = 'trial_id' and starts_with(table_name, 'dq_') order by table_name`,
  );
  return rows.map((r) => r.name).filter((n) => models.includes(n));
}

/** Counts of the trial's rows in the `dq_` models of `perTrial`. */
async function readTrialDq(wh: Warehouse, trialId: string, perTrial: readonly string[]): Promise<Record<string, number>> {
  if (perTrial.length === 0) return {};
  const dqRows = await wh.all<{ check_name: string; n: bigint }>(
    perTrial.map((m) => `select '${m}' as check_name, count(*) as n from main.${m} where trial_id = $1`).join(' union all '),
    [trialId],
  );
  return Object.fromEntries(dqRows.map((r) => [r.check_name, Number(r.n)]));
}

const dateOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/**
 * Every trial's forecast and its sites' rate intervals, from `mart_enrolment_forecast` and
 * `mart_site_enrolment_forecast` (docs/models.md "Enrolment forecast").
 */
async function readForecasts(wh: Warehouse): Promise<Map<string, { forecast: TrialForecast; rates: Map<string, SiteRate> }>> {
  const out = new Map<string, { forecast: TrialForecast; rates: Map<string, SiteRate> }>();
  const day = (c: string): string => `strftime(${c}, '%Y-%m-%d') as ${c}`;
  for (const r of await wh.all<Record<string, unknown>>(
    `select trial_id, enrolled_to_date, site_count, enrolments_next_91d_p10, enrolments_next_91d_p50, enrolments_next_91d_p90,
       enrolment_target, ${day('target_date')}, ${day('target_reached_on_p10')}, ${day('target_reached_on_p50')}, ${day('target_reached_on_p90')},
       probability_target_met_by_target_date, strftime(as_of_at, '%Y-%m-%d') as as_of_date
     from main.mart_enrolment_forecast order by trial_id`,
  )) {
    const target = numOrNull(r['enrolment_target']);
    out.set(String(r['trial_id']), {
      rates: new Map(),
      forecast: {
        enrolledToDate: num(r['enrolled_to_date']),
        siteCount: num(r['site_count']),
        next91d: [num(r['enrolments_next_91d_p10']), num(r['enrolments_next_91d_p50']), num(r['enrolments_next_91d_p90'])],
        target,
        targetDate: dateOrNull(r['target_date']),
        reachedOn:
          target === null
            ? null
            : [dateOrNull(r['target_reached_on_p10']), dateOrNull(r['target_reached_on_p50']), dateOrNull(r['target_reached_on_p90'])],
        probabilityByTargetDate: numOrNull(r['probability_target_met_by_target_date']),
        asOfDate: String(r['as_of_date']),
      },
    });
  }
  for (const r of await wh.all<Record<string, unknown>>(
    `select trial_id, site_id, enrolment_rate_per_30d_p10, enrolment_rate_per_30d_p50, enrolment_rate_per_30d_p90, is_rate_below_trial
     from main.mart_site_enrolment_forecast`,
  )) {
    out.get(String(r['trial_id']))?.rates.set(String(r['site_id']), {
      p10: num(r['enrolment_rate_per_30d_p10']),
      p50: num(r['enrolment_rate_per_30d_p50']),
      p90: num(r['enrolment_rate_per_30d_p90']),
      isBelowTrial: r['is_rate_below_trial'] === true,
    });
  }
  return out;
}

async function readDataQuality(wh: Warehouse): Promise<DataQuality> {
  const summary = (
    await wh.all<Record<string, unknown>>(
      'select check_name, description, issue_count, detail_rows from main.dq_summary order by check_name',
    )
  ).map((r) => ({
    check: String(r['check_name']),
    description: String(r['description']),
    issueCount: num(r['issue_count']),
    detailRows: num(r['detail_rows']),
  }));
  const values = async (sql: string) =>
    (await wh.all<{ value: string | null; n: bigint }>(sql)).map((r) => ({ value: r.value ?? '(none)', count: Number(r.n) }));
  return {
    summary,
    unknownEventTypes: await values(
      `select event_type as value, event_count as n from main.dq_unknown_event_types order by n desc, value limit ${DQ_VALUES}`,
    ),
    unmappedStatuses: await values(
      `select patient_status as value, event_count as n from main.dq_unmapped_statuses order by n desc, value limit ${DQ_VALUES}`,
    ),
    unmappedOutcomes: await values(
      `select contact_attempt_outcome as value, contact_attempt_count as n from main.dq_unmapped_outcomes order by n desc, value limit ${DQ_VALUES}`,
    ),
    quarantined: (
      await wh.all<{ stream_id: string; stream_position: bigint; reason: string | null }>(
        `select stream_id, stream_position, reason from main.dq_quarantined_events order by stream_id, stream_position limit ${DQ_VALUES}`,
      )
    ).map((r) => ({ streamId: r.stream_id, streamPosition: Number(r.stream_position), reason: r.reason ?? '' })),
  };
}
