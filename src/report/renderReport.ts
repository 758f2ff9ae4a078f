/**
 * The report as one self-contained HTML page (docs/report.md): inline CSS, inline SVG charts,
 * no script, no external resource, and a Content-Security-Policy that forbids loading any
 * (`default-src 'none'`). Sections per trial: funnel, enrolment forecast, weekly activity per site, time to
 * acknowledgement and first contact, cohorts (right-censored ones marked), worklist; then the
 * data-quality panel.
 *
 * @module
 */
import { forecastSpec, funnelSpec, medianP90Spec, renderSvg, sharesSpec, weeklySpec, type ChartRow, type ForecastChart } from './charts.js';
import { html, SafeHtml, trustedSvg, type HtmlValue } from './html.js';
import {
  FUNNEL_STAGES,
  type DataQuality,
  type ReportData,
  type Share,
  type SiteTotals,
  type TrialForecast,
  type TrialReport,
} from './reportData.js';

/** The page's Content-Security-Policy: nothing may be loaded; inline styles and data: images only. */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/**
 * Sites drawn as their own line in a chart; the others are summed into one "other sites"
 * line: ten series at most, the ten colours of the scheme.
 */
export const CHART_SITES = 9;

/** What the page says about how it was made. */
export interface ReportMeta {
  /** When the report was written (ISO 8601 UTC). */
  generatedAt: string;
  /** The run that wrote it, if any. */
  runId?: string;
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2630;background:#f6f7f9}
header{background:#1f3b57;color:#fff;padding:16px 28px}header h1{margin:0 0 4px;font-size:22px}header p{margin:0;opacity:.85}
main{padding:8px 28px 40px;max-width:1280px}nav{margin:12px 0}nav a{margin-right:14px;color:#1f3b57}
section.trial,section.dq{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:8px 20px 20px;margin:18px 0}
h2{font-size:19px;margin:12px 0}h3{font-size:15px;margin:22px 0 8px;border-bottom:1px solid #e4e8ee;padding-bottom:3px}h4{font-size:13px;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{padding:3px 10px;border-bottom:1px solid #eceff3;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.date,table.cohorts td:first-child,table.worklist td:nth-child(4){white-space:nowrap}th{background:#f1f3f6;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}.chart svg{max-width:100%;height:auto}
.censored{color:#8a5a00;background:#fff6e0}.tag{display:inline-block;font-size:11px;padding:0 6px;border-radius:8px;background:#fff0c7;color:#7a4f00}
.stale{margin:10px 0 0;padding:8px 12px;background:#fff0c7;color:#5c3b00;border-radius:4px;font-size:15px}.note{color:#5c3b00}
.muted{color:#667085}.warn{color:#a1260d;font-weight:600}code{font-size:12px}
.step-acknowledge{color:#a1260d}.step-first_contact{color:#b35c00}
`;

const fmt = (n: number): string => n.toLocaleString('en-US');

/** Labels of the stages a current status maps to: the funnel's, then the off-path outcomes (docs/models.md "Seeds"). */
const STAGE_LABELS: Record<string, string> = {
  ...Object.fromEntries(FUNNEL_STAGES.map((s) => [s.stage, s.label])),
  pre_screen_failed: 'Pre-screen failed',
  screen_failed: 'Screen failed',
  dropped: 'Dropped',
  archived: 'Archived',
  unmapped: 'Unknown status',
};

/** The report is this many days newer than its data, or more: the header warns (docs/report.md). */
export const STALE_DATA_DAYS = 3;
const pct = (n: number, d: number): string => (d > 0 ? `${((100 * n) / d).toFixed(1)}%` : '–');

/** A site's display name, else its id. */
function siteLabel(s: { siteId: string; siteName: string | null }): string {
  return s.siteName ?? s.siteId;
}

/** A share cell: `83.3% (5 / 6)`, or the mark of a right-censored cohort. */
function shareCell(s: Share): SafeHtml {
  if (s.numerator === null || s.denominator === null)
    return html`<td class="n censored" data-censored="true" title="window not complete as of the data">window open</td>`;
  return html`<td class="n">${pct(s.numerator, s.denominator)} <span class="muted">(${fmt(s.numerator)} / ${fmt(s.denominator)})</span></td>`;
}

async function chart(spec: Parameters<typeof renderSvg>[0], name: string): Promise<SafeHtml> {
  return html`<div class="chart" data-chart="${name}">${trustedSvg(await renderSvg(spec))}</div>`;
}

/** The sites drawn as their own series: the most referrals first; null when all are. */
function chartedSites(totals: SiteTotals[]): Set<string> | null {
  if (totals.length <= CHART_SITES) return null;
  const top = [...totals]
    .sort((a, b) => b.referralsReceived - a.referralsReceived || a.siteId.localeCompare(b.siteId))
    .slice(0, CHART_SITES);
  return new Set(top.map((s) => s.siteId));
}

function funnelSection(t: TrialReport): Promise<SafeHtml> {
  const referred = t.funnel.stages[0]?.count ?? 0;
  const rows = t.funnel.stages.map(
    (s, i) => html`<tr data-funnel-stage="${s.stage}">
      <td>${s.label}</td><td class="n" data-value="${s.count}">${fmt(s.count)}</td>
      <td class="n">${i === 0 ? '–' : pct(s.count, t.funnel.stages[i - 1]!.count)}</td>
      <td class="n">${i === 0 ? '–' : pct(s.count, referred)}</td></tr>`,
  );
  return chart(funnelSpec(t.funnel.stages.map((s) => ({ label: s.label, count: s.count }))), 'funnel').then(
    (svg) => html`<h3>Funnel</h3>
    <p class="muted">Patients with a created event that ever reached each stage (mart_recruitment_funnel, all sites and referral weeks).</p>
    <div class="charts"><table class="funnel">
      <thead><tr><th>stage</th><th class="n">patients</th><th class="n">from previous stage</th><th class="n">from referral</th></tr></thead>
      <tbody>${rows}</tbody></table>${svg}</div>
    <p>Acknowledged <b>${fmt(t.funnel.acknowledged)}</b> · contact attempted <b>${fmt(t.funnel.contactAttempted)}</b> ·
      reached <b>${fmt(t.funnel.reached)}</b> · still in progress <b>${fmt(t.funnel.openInProgress)}</b></p>`,
  );
}

const DAY_MS = 86_400_000;
const dayNumber = (d: string): number => Date.parse(`${d}T00:00:00Z`) / DAY_MS;
const dayText = (n: number): string => new Date(Math.round(n) * DAY_MS).toISOString().slice(0, 10);

/** y of the polyline `points` (sorted by x) at `x`, extended along its last segment. */
function along(points: [number, number][], x: number): number {
  const found = points.findIndex(([px]) => px >= x);
  const i = found === -1 ? points.length - 1 : Math.max(found, 1);
  const [x0, y0] = points[i - 1]!;
  const [x1, y1] = points[i]!;
  return x1 === x0 ? y1 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}

/**
 * The chart's data: the past from the weekly enrolments of mart_site_activity, and a band
 * through the mart's percentiles. The 90th percentile of the count at a time and the 10th
 * percentile of the date a count is reached lie on one curve (P(N(t) ≥ k) = P(T_k ≤ t)), so
 * the band's upper edge joins today, the 91-day p90 and the target at its p10 date; the lower
 * edge the 91-day p10 and the p90 date; the median line likewise (docs/report.md "Forecast").
 */
export function forecastChartData(t: TrialReport, f: TrialForecast): ForecastChart {
  const today = dayNumber(f.asOfDate);
  const weekly = new Map<string, number>();
  for (const w of t.siteWeeks) weekly.set(w.week, (weekly.get(w.week) ?? 0) + w.enrolments);
  let enrolled = 0;
  const history = [...weekly.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .filter(([week]) => dayNumber(week) + 7 <= today)
    .map(([week, n]) => ({ date: dayText(dayNumber(week) + 7), enrolled: (enrolled += n) }));
  history.push({ date: f.asOfDate, enrolled: f.enrolledToDate });
  const edge = (count91: number, reached: string | null | undefined): [number, number][] => {
    const pts: [number, number][] = [
      [today, f.enrolledToDate],
      [today + 91, f.enrolledToDate + count91],
    ];
    if (f.target !== null && reached) pts.push([dayNumber(reached), f.target]);
    return pts.sort((a, b) => a[0] - b[0]);
  };
  const [low, mid, high] = [
    edge(f.next91d[0], f.reachedOn?.[2]),
    edge(f.next91d[1], f.reachedOn?.[1]),
    edge(f.next91d[2], f.reachedOn?.[0]),
  ];
  const xs = [...new Set([...low, ...mid, ...high].map(([x]) => x))].sort((a, b) => a - b);
  const band = xs.map((x) => ({ date: dayText(x), low: along(low, x), median: along(mid, x), high: along(high, x) }));
  return { history, band, target: f.target, targetDate: f.targetDate };
}

async function forecastSection(t: TrialReport): Promise<SafeHtml> {
  const f = t.forecast;
  if (f === null) return html``;
  const reached = f.reachedOn;
  const svg = await chart(forecastSpec(forecastChartData(t, f)), 'forecast');
  const probability = f.probabilityByTargetDate === null ? '–' : `${Math.round(100 * f.probabilityByTargetDate)}%`;
  return html`<h3>Enrolment forecast</h3>
    <p class="muted">How to read it: of trials forecast like this, about 8 in 10 land inside the 10–90 % band. It assumes the ${fmt(f.siteCount)} sites
    active today (with a referral) keep their rates, and no site opens or closes (mart_enrolment_forecast; Poisson-gamma model, docs/models.md).
    Enrolled to date counts every enrolled patient of the trial, those without a created event included, as the site table does.</p>
    <div class="charts"><table class="forecast" data-forecast="${t.trialId}"><tbody>
      <tr><th>enrolled to date</th><td class="n" data-col="enrolled_to_date">${fmt(f.enrolledToDate)}</td></tr>
      <tr><th>target</th><td class="n" data-col="enrolment_target">${f.target === null ? 'none given' : fmt(f.target)}${f.targetDate === null ? '' : html` by <span class="date">${f.targetDate}</span>`}</td></tr>
      <tr><th>enrolments, next 91 days</th><td class="n" data-col="next_91d">${fmt(f.next91d[1])} <span class="muted">(${fmt(f.next91d[0])}–${fmt(f.next91d[2])})</span></td></tr>
      ${
        reached === null
          ? ''
          : html`<tr><th>target reached on</th><td class="n" data-col="target_reached_on"><span class="date">${reached[1] ?? 'beyond 100 years'}</span>
        <span class="muted">(<span class="date">${reached[0] ?? '–'}</span> – <span class="date">${reached[2] ?? 'beyond 100 years'}</span>)</span></td></tr>`
      }
      ${f.probabilityByTargetDate === null ? '' : html`<tr><th>chance of the target by its date</th><td class="n" data-col="probability">${probability}</td></tr>`}
    </tbody></table>${svg}</div>`;
}

async function activitySection(t: TrialReport): Promise<SafeHtml> {
  const charted = chartedSites(t.siteTotals);
  const byKey = new Map<string, ChartRow>();
  for (const w of t.siteWeeks) {
    const series = charted === null || charted.has(w.siteId) ? siteLabel(w) : 'other sites';
    const key = `${series}\u0000${w.week}`;
    const row = byKey.get(key) ?? {
      series,
      week: w.week,
      referrals: 0,
      enrolments: 0,
      partial: w.isCompleteWeek ? 'complete' : 'partial (as of)',
    };
    row['referrals'] = (row['referrals'] as number) + w.referralsReceived;
    row['enrolments'] = (row['enrolments'] as number) + w.enrolments;
    byKey.set(key, row);
  }
  const rows = [...byKey.values()];
  const charts =
    rows.length === 0
      ? []
      : await Promise.all(
          [weeklySpec(rows, 'referrals', 'Referrals received per week'), weeklySpec(rows, 'enrolments', 'Enrolments per week')].map(
            (s, i) => chart(s, i === 0 ? 'weekly-referrals' : 'weekly-enrolments'),
          ),
        );
  const table = t.siteTotals.map(
    (
      s,
    ) => html`<tr data-site="${s.siteId}"><td>${siteLabel(s)}${s.siteName !== null ? html` <span class="muted"><code>${s.siteId}</code></span>` : ''}</td>
      <td class="n">${fmt(s.weeks)}</td><td class="n" data-col="referrals_received">${fmt(s.referralsReceived)}</td><td class="n">${fmt(s.referralsAcknowledged)}</td>
      <td class="n">${fmt(s.firstContactAttempts)}</td><td class="n">${fmt(s.patientsReached)}</td><td class="n">${fmt(s.screenings)}</td>
      <td class="n" data-col="enrolments">${fmt(s.enrolments)}</td>
      <td class="n${s.enrolmentsLast4Weeks === 0 ? ' warn' : ''}">${fmt(s.enrolmentsLast4Weeks)}</td>
      ${rateCell(s)}</tr>`,
  );
  const months = t.months.map(
    (m) =>
      html`<th class="n" colspan="2" data-month="${m.month}">${m.month.slice(0, 7)}${m.isComplete ? '' : html` <span class="tag">partial</span>`}</th>`,
  );
  const monthly = t.siteMonths.map(
    (s) =>
      html`<tr data-site="${s.siteId}"><td>${siteLabel(s)}</td>${s.months.map(
        (m) =>
          html`<td class="n" data-col="referrals_received">${fmt(m.referralsReceived)}</td><td class="n" data-col="enrolments">${fmt(m.enrolments)}</td>`,
      )}</tr>`,
  );
  const monthlyTable =
    t.months.length === 0
      ? ''
      : html`<h4>Monthly pace</h4>
    <p class="muted">Referrals received and enrolments per calendar month, the last ${t.months.length} months (mart_site_activity_monthly); the month of the as-of time is partial.</p>
    <table class="monthly"><thead><tr><th rowspan="2">site</th>${months}</tr>
    <tr>${t.months.map(() => html`<th class="n">referrals</th><th class="n">enrolments</th>`)}</tr></thead><tbody>${monthly}</tbody></table>`;
  return html`<h3>Weekly activity per site</h3>
    <p class="muted">Each activity in the ISO week of its own date (mart_site_activity). The week of the data's as-of time is partial (triangle).
    ${charted !== null ? `Charts draw the ${CHART_SITES} sites with the most referrals; the rest are summed as "other sites" (the table lists every site).` : ''}</p>
    <div class="charts">${charts}</div>
    <table class="sites"><thead><tr><th>site</th><th class="n">weeks</th><th class="n">referrals received</th><th class="n">acknowledged</th>
      <th class="n">first contact attempts</th><th class="n">reached</th><th class="n">screenings</th><th class="n">enrolments</th>
      <th class="n">enrolments, last 4 complete weeks</th><th class="n">enrolment rate per 30 days (10–90 %)</th></tr></thead><tbody>${table}</tbody></table>
    ${enrolledNote(t)}
    ${monthlyTable}`;
}

/**
 * Why the site table's enrolments may not sum to the funnel's Enrolled: the site table counts
 * every patient's activity, orphans (no created event yet) at the site of their first event;
 * the funnel counts referred patients only (docs/report.md "One story").
 */
function enrolledNote(t: TrialReport): SafeHtml | '' {
  const sites = t.siteTotals.reduce((n, s) => n + s.enrolments, 0);
  const funnel = t.funnel.stages.find((s) => s.stage === 'enrolled')?.count ?? 0;
  if (sites === funnel) return '';
  const orphans = t.dq['dq_orphan_events'] ?? 0;
  return html`<p class="note" data-note="enrolled-mismatch">The sites' enrolments sum to <b>${fmt(sites)}</b>, the funnel's Enrolled is <b>${fmt(funnel)}</b>:
    this table counts every enrolled patient at its site, including patients whose created event has not arrived yet (orphans: ${fmt(orphans)} orphan
    event(s) in this trial, see dq_orphan_events); the funnel counts referred patients only.</p>`;
}

/** A site's enrolment rate per 30 days: median (p10–p90), in red when surely below the trial's typical site. */
function rateCell(s: SiteTotals): SafeHtml {
  if (s.rate === null) return html`<td class="n muted">–</td>`;
  const r = s.rate;
  return html`<td class="n${r.isBelowTrial ? ' warn' : ''}" data-col="rate"${r.isBelowTrial ? html` title="surely slower than the trial's typical site"` : ''}>${r.p50.toFixed(1)}
    <span class="muted">(${r.p10.toFixed(1)}–${r.p90.toFixed(1)})</span></td>`;
}

async function timingSection(t: TrialReport): Promise<SafeHtml> {
  const ack = t.timing.acknowledgedWithin;
  const att = t.timing.attemptedByDay;
  const shareRows = <T>(xs: { share: Share }[], label: (x: T) => string) =>
    (xs as (T & { share: Share })[])
      .filter((x) => x.share.numerator !== null && x.share.denominator !== null && x.share.denominator > 0)
      .map((x) => ({ label: label(x), share: x.share.numerator! / x.share.denominator! }));
  const ackRows = shareRows<{ hours: number }>(ack, (x) => `within ${x.hours} h`);
  const attRows = shareRows<{ day: number }>(att, (x) => `by day ${x.day}`);
  const charted = chartedSites(t.siteTotals);
  const cohorts = t.timing.cohorts.filter((c) => charted === null || charted.has(c.siteId));
  const ackPoints = cohorts
    .filter((c) => c.medianHoursToAck !== null)
    .map((c) => ({ series: siteLabel(c), week: c.week, median: c.medianHoursToAck, p90: c.p90HoursToAck }));
  const attPoints = cohorts
    .filter((c) => c.medianDaysToFirstAttempt !== null)
    .map((c) => ({ series: siteLabel(c), week: c.week, median: c.medianDaysToFirstAttempt, p90: c.p90DaysToFirstAttempt }));
  const charts = await Promise.all([
    ackRows.length > 0 ? chart(sharesSpec(ackRows, 'Acknowledged within'), 'ack-shares') : null,
    attRows.length > 0 ? chart(sharesSpec(attRows, 'First contact attempt'), 'attempt-shares') : null,
    ackPoints.length > 0
      ? chart(
          medianP90Spec(ackPoints, 'hours', 'Hours to acknowledgement: median (point) to P90, per site and referral week'),
          'ack-median',
        )
      : null,
    attPoints.length > 0
      ? chart(
          medianP90Spec(attPoints, 'days', 'Days to first contact attempt: median (point) to P90, per site and referral week'),
          'attempt-median',
        )
      : null,
  ]);
  return html`<h3>Time to acknowledgement and to first contact</h3>
    <p class="muted">Shares over the referral weeks whose window is complete (mart_recruitment_funnel's windowed measures, summed as numerator / denominator);
    medians and P90 are the mart's per site and referral week.</p>
    <table class="timing"><thead><tr><th>measure</th><th class="n">share (patients / referrals)</th></tr></thead><tbody>
    ${ack.map((a) => html`<tr data-measure="acknowledged_within_${a.hours}h"><td>acknowledged within ${a.hours} h</td>${shareCell(a.share)}</tr>`)}
    ${att.map((a) => html`<tr data-measure="attempted_by_day_${a.day}"><td>first contact attempt by day ${a.day}</td>${shareCell(a.share)}</tr>`)}
    </tbody></table>
    <div class="charts">${charts}</div>`;
}

function cohortSection(t: TrialReport): SafeHtml {
  const rows = t.cohorts.map(
    (c) => html`<tr data-week="${c.week}"${c.isCensored ? html` class="censored" data-censored="true"` : ''}>
      <td>${c.week}${c.isCensored ? html` <span class="tag">window not complete</span>` : ''}</td><td class="n">${fmt(c.cohortAgeDays)}</td><td class="n">${fmt(c.referrals)}</td>
      ${shareCell(c.acknowledgedWithin72h)}${shareCell(c.attemptedByDay3)}${shareCell(c.screeningWithin30d)}${shareCell(c.enrolledWithin60d)}</tr>`,
  );
  const open = t.cohorts.filter((c) => c.isCensored).length;
  return html`<h3>Referral cohorts</h3>
    <p class="muted">Per referral week (mart_recruitment_funnel, all sites). A measure over a window is published only once every referral of the week
    has had the whole window; younger cohorts are <span class="tag">window not complete</span> (right-censored): ${open} of ${t.cohorts.length} weeks.</p>
    <table class="cohorts"><thead><tr><th>referral week</th><th class="n">age, days</th><th class="n">referrals</th><th class="n">acknowledged within 72 h</th>
    <th class="n">attempted by day 3</th><th class="n">screening within 30 d</th><th class="n">enrolled within 60 d</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function worklistSection(t: TrialReport, n: number): SafeHtml {
  const sites = t.worklist.map(
    (
      s,
    ) => html`<h4 data-site="${s.siteId}">${siteLabel(s)} <span class="muted">· ${fmt(s.openCount)} open${s.openCount > s.rows.length ? `, the ${s.rows.length} oldest shown` : ''}</span></h4>
    <table class="worklist"><thead><tr><th class="n">#</th><th>patient key</th><th>next step</th><th>referred</th><th class="n">age, days</th><th>acknowledged</th>
    <th class="n">attempts</th><th class="n">days since last attempt</th><th>current status</th></tr></thead><tbody>
    ${s.rows.map(
      (
        r,
      ) => html`<tr><td class="n">${r.rank}</td><td><code>${r.patientKey}</code></td><td class="step-${r.step}">${r.step.replaceAll('_', ' ')}</td>
        <td>${r.referralDate}</td><td class="n">${fmt(r.ageDays)}</td><td>${r.isAcknowledged ? 'yes' : 'no'}</td><td class="n">${fmt(r.contactAttemptCount)}</td>
        <td class="n">${r.daysSinceLastAttempt === null ? '–' : fmt(r.daysSinceLastAttempt)}</td>
        <td data-col="current_status" title="${r.currentStatus ?? ''}">${r.currentStage === null ? '(none)' : (STAGE_LABELS[r.currentStage] ?? r.currentStage)}${
          r.currentStage === 'unmapped' ? html` <code>${r.currentStatus ?? ''}</code>` : ''
        }</td></tr>`,
    )}</tbody></table>`,
  );
  return html`<h3>Open referrals worklist</h3>
    <p class="muted">Referrals still open as of the data, oldest first, at most ${n} per site (mart_open_referrals, by worklist_rank).
    Patients are shown by their pseudonymous patient_key only.</p>
    ${sites.length > 0 ? sites : html`<p>No open referral.</p>`}`;
}

function dqSection(dq: DataQuality, trials: TrialReport[]): SafeHtml {
  const perTrial = new Set(trials.flatMap((t) => Object.keys(t.dq)));
  const values = (title: string, rows: { value: string; count: number }[]) =>
    rows.length === 0
      ? ''
      : html`<h4>${title}</h4><table class="dq-values"><thead><tr><th>value</th><th class="n">count</th></tr></thead><tbody>
        ${rows.map((r) => html`<tr><td><code>${r.value}</code></td><td class="n">${fmt(r.count)}</td></tr>`)}</tbody></table>`;
  return html`<section class="dq" id="data-quality"><h2>Data quality</h2>
    <p class="muted">The data-quality checks as last built (dq_summary; each check's detail is its dq_ model, exported as Parquet).
    Counts per trial where the check's rows carry a trial.</p>
    <table class="dq-summary"><thead><tr><th>check</th><th>what it finds</th><th class="n">issues</th>
    ${trials.map((t) => html`<th class="n">${t.trialId}</th>`)}</tr></thead><tbody>
    ${dq.summary.map(
      (c) => html`<tr data-check="${c.check}"><td><code>${c.check}</code></td><td>${c.description}</td>
        <td class="n${c.issueCount > 0 ? ' warn' : ''}" data-value="${c.issueCount}">${fmt(c.issueCount)}</td>
        ${trials.map((t) => html`<td class="n">${perTrial.has(c.check) ? fmt(t.dq[c.check] ?? 0) : '–'}</td>`)}</tr>`,
    )}</tbody></table>
    ${values('Unknown event types', dq.unknownEventTypes)}
    ${values('Unknown status values', dq.unmappedStatuses)}
    ${values('Unknown contact outcomes', dq.unmappedOutcomes)}
    ${
      dq.quarantined.length === 0
        ? ''
        : html`<h4>Quarantined events</h4><table class="dq-quarantine"><thead><tr><th>stream</th><th class="n">position</th><th>reason</th></tr></thead><tbody>
      ${dq.quarantined.map((q) => html`<tr><td><code>${q.streamId}</code></td><td class="n">${q.streamPosition}</td><td>${q.reason}</td></tr>`)}</tbody></table>`
    }
    </section>`;
}

/** A banner when the data is {@link STALE_DATA_DAYS} days or more older than the report. */
function staleNote(asOfAt: string | null, generatedAt: string): SafeHtml | '' {
  if (asOfAt === null) return '';
  const days = Math.floor((Date.parse(generatedAt) - Date.parse(asOfAt)) / DAY_MS);
  if (!(days >= STALE_DATA_DAYS)) return '';
  return html`<p class="stale" data-stale-days="${days}">The data is <b>${fmt(days)} days</b> older than this report: the newest event is of
    <span class="date">${asOfAt.slice(0, 10)}</span>. Every number and forecast below is as of that date.</p>`;
}

async function trialSection(t: TrialReport, index: number, n: number): Promise<SafeHtml> {
  const parts: HtmlValue[] = [
    await funnelSection(t),
    await forecastSection(t),
    await activitySection(t),
    await timingSection(t),
    cohortSection(t),
    worklistSection(t, n),
  ];
  return html`<section class="trial" id="trial-${index + 1}" data-trial="${t.trialId}"><h2>Trial ${t.trialId}</h2>${parts}</section>`;
}

/**
 * Render the report page.
 *
 * @returns the HTML document (UTF-8 text)
 * @throws Error when a chart cannot be rendered (a bug)
 */
export async function renderReport(data: ReportData, meta: ReportMeta): Promise<string> {
  const trials: SafeHtml[] = [];
  for (const [i, t] of data.trials.entries()) trials.push(await trialSection(t, i, data.worklistRows));
  const page = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Recruitment report${data.asOfAt ? ` as of ${data.asOfAt}` : ''}</title>
<style>${new SafeHtml(STYLE)}</style></head>
<body><header><h1>Recruitment report</h1>
<p>Data as of <b class="date" data-as-of="${data.asOfAt ?? ''}">${data.asOfAt ?? 'no referral yet'}</b> · written <span class="date">${meta.generatedAt}</span>${meta.runId ? ` by run ${meta.runId}` : ''}</p>
${staleNote(data.asOfAt, meta.generatedAt)}</header>
<main><nav>${data.trials.map((t, i) => html`<a href="#trial-${i + 1}">Trial ${t.trialId}</a>`)}<a href="#data-quality">Data quality</a></nav>
${data.trials.length === 0 ? html`<p>No trial in the marts yet.</p>` : trials}
${dqSection(data.dataQuality, data.trials)}
</main></body></html>
`;
  return page.value;
}
