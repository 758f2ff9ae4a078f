/**
 * The HTML report (docs/report.md) on real warehouses: a demo-like one (the simulator's
 * stream, transformed), the hand-made activity fixture (right-censored cohorts), and one
 * whose trial ids, site ids, site names and values are markup. Numbers on the page must be
 * the marts' numbers; text from the data must be escaped; the page must load nothing.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ReportError } from '../../../src/errors.js';
import { runJob } from '../../../src/pipeline/jobs.js';
import { loadModelCatalog } from '../../../src/catalog/catalog.js';
import { MODELS_DIR } from '../../../src/paths.js';
import { readReportData } from '../../../src/report/reportData.js';
import { REPORT_CSP } from '../../../src/report/renderReport.js';
import { REPORT_FILE, writeReport } from '../../../src/report/writeReport.js';
import { resolveConfig } from '../../../src/config/config.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';
import { builtWarehouse, fixtureRows, simulatorRows } from '../../helpers/warehouses.js';
import type { RawEventRow } from '../models/fixture.js';
import { ack, attempt, created, type Ev } from '../models/fixture.js';
import { HOSTILE_EVENTS, HOSTILE_NAME, HOSTILE_SITE, HOSTILE_TRIAL, hostileSiteNames } from './hostile.js';

/** The `<section class="trial">` of one trial (its data-trial attribute, escaped as on the page). */
function trialSection(page: string, escapedTrialId: string): string {
  const start = page.indexOf(`data-trial="${escapedTrialId}"`);
  expect(start).toBeGreaterThan(0);
  return page.slice(start, page.indexOf('</section>', start));
}

/** The numbers in `data-value` of the funnel rows, by stage. */
function funnelValues(section: string): Record<string, number> {
  return Object.fromEntries(
    [...section.matchAll(/<tr data-funnel-stage="([a-z_]+)">\s*<td>[^<]*<\/td><td class="n" data-value="(\d+)"/g)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
}

/** Checks every report must pass: a single document that loads nothing and runs nothing. */
function expectSelfContained(page: string): void {
  expect(page.startsWith('<!doctype html>')).toBe(true);
  expect(page).toContain(`<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP.replaceAll("'", '&#39;')}">`);
  expect(page).not.toMatch(/<script/i);
  // The elements and attributes of the page (quoted values blanked: escaped data in them is text).
  const tags = [...page.replace(/"[^"]*"/g, '""').matchAll(/<([a-zA-Z][\w:-]*)([^<>]*)>/g)];
  const names = new Set(tags.map((t) => t[1]!.toLowerCase()));
  for (const bad of ['script', 'link', 'img', 'image', 'iframe', 'object', 'embed', 'base', 'form', 'foreignobject', 'use'])
    expect(names.has(bad), bad).toBe(false);
  for (const t of tags) expect(t[2]).not.toMatch(/\s(src|srcset|on[a-z]+)\s*=/i);
  expect(page).not.toMatch(/@import|url\((?!#)/i);
  // Every link is an anchor of the page; the only absolute URLs are SVG namespaces.
  for (const m of page.matchAll(/\shref="([^"]*)"/g)) expect(m[1]).toMatch(/^#/);
  for (const m of page.matchAll(/https?:\/\/[^\s"')<]+/g)) expect(m[0]).toMatch(/^http:\/\/www\.w3\.org\//);
}

/**
 * A report written for the warehouse built from `rows` (in memory), for one `describe`:
 * `wh` and `page` are set by its `beforeAll`, closed and removed by its `afterAll`.
 */
function reportOn(
  rows: () => Promise<RawEventRow[]> | RawEventRow[],
  worklistRows: number,
  siteNames?: (dir: string) => string,
): { wh: Warehouse; page: string } {
  const tmp = tempDir('recruit-etl-report-');
  const state = {} as { wh: Warehouse; page: string };
  beforeAll(async () => {
    state.wh = await builtWarehouse(':memory:', await rows(), siteNames?.(tmp.dir));
    const r = await writeReport({ wh: state.wh, exportDir: tmp.dir, worklistRows });
    state.page = readFileSync(r.path, 'utf8');
  }, 60_000);
  afterAll(async () => {
    await state.wh?.close();
    tmp.cleanup();
  });
  return state;
}

describe('report on a demo-like warehouse', () => {
  const tmp = tempDir('recruit-etl-report-');
  let wh: Warehouse;
  let page: string;
  const exportDir = join(tmp.dir, 'exports');

  beforeAll(async () => {
    wh = await builtWarehouse(
      join(tmp.dir, 'warehouse.duckdb'),
      await simulatorRows({ seed: 7, trials: 2, sitesPerTrial: 4, patientsPerTrial: 150 }),
    );
    const result = await writeReport({ wh, exportDir, worklistRows: 3, runId: 'test-run' });
    expect(result.path).toBe(join(exportDir, REPORT_FILE));
    expect(result.trials).toBe(2);
    page = (await import('node:fs')).readFileSync(result.path, 'utf8');
    expect(result.bytes).toBe(Buffer.byteLength(page));
  }, 120_000);
  afterAll(async () => {
    await wh?.close();
    tmp.cleanup();
  });

  test('one self-contained file, written for readers, nothing left behind', () => {
    expectSelfContained(page);
    expect(statSync(join(exportDir, REPORT_FILE)).mode & 0o777).toBe(0o600);
    expect(readdirSync(exportDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  test('every section for each trial, and the data-quality panel', async () => {
    const trials = (await wh.all<{ t: string }>('select distinct trial_id as t from main.mart_recruitment_funnel order by 1')).map(
      (r) => r.t,
    );
    expect(trials).toEqual(['TRIAL-001', 'TRIAL-002']);
    for (const t of trials) {
      const s = trialSection(page, t);
      for (const h of [
        'Funnel',
        'Weekly activity per site',
        'Time to acknowledgement and to first contact',
        'Referral cohorts',
        'Open referrals worklist',
      ]) {
        expect(s).toContain(`<h3>${h}</h3>`);
      }
      for (const c of ['funnel', 'weekly-referrals', 'weekly-enrolments', 'ack-shares', 'attempt-shares', 'ack-median', 'attempt-median']) {
        expect(s).toMatch(new RegExp(`data-chart="${c}"><svg `));
      }
    }
    expect(page).toContain('<section class="dq" id="data-quality"><h2>Data quality</h2>');
  });

  test("the funnel is the mart's: sums of mart_recruitment_funnel per trial", async () => {
    const mart = await wh.all<Record<string, bigint | string>>(
      `select trial_id, sum(referrals) as referred, sum(reached_pre_screening) as pre_screening, sum(reached_visit_scheduled) as visit_scheduled,
         sum(reached_screening) as screening, sum(reached_enrolled) as enrolled
       from main.mart_recruitment_funnel group by 1 order by 1`,
    );
    for (const row of mart) {
      const { trial_id, ...counts } = row;
      expect(funnelValues(trialSection(page, String(trial_id)))).toEqual(
        Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Number(v)])),
      );
    }
  });

  test("site totals are mart_site_activity's sums", async () => {
    const mart = await wh.all<{ trial_id: string; site_id: string; referrals: bigint; enrolments: bigint }>(
      'select trial_id, site_id, sum(referrals_received) as referrals, sum(enrolments) as enrolments from main.mart_site_activity group by all order by all',
    );
    expect(mart.length).toBe(8);
    for (const r of mart) {
      const s = trialSection(page, r.trial_id);
      const row = new RegExp(
        `<tr data-site="${r.site_id}">[\\s\\S]*?data-col="referrals_received">([\\d,]+)<[\\s\\S]*?data-col="enrolments">([\\d,]+)<`,
      ).exec(s);
      expect(row, r.site_id).not.toBeNull();
      expect([Number(row![1]!.replaceAll(',', '')), Number(row![2]!.replaceAll(',', ''))]).toEqual([
        Number(r.referrals),
        Number(r.enrolments),
      ]);
    }
  });

  test("the monthly pace is mart_site_activity_monthly's last three months", async () => {
    const mart = await wh.all<{
      trial_id: string;
      site_id: string;
      month: string;
      complete: boolean;
      referrals: bigint;
      enrolments: bigint;
    }>(
      `select trial_id, site_id, strftime(activity_month, '%Y-%m') as month, is_complete_month as complete, referrals_received as referrals, enrolments
       from main.mart_site_activity_monthly a
       where activity_month in (select distinct activity_month from main.mart_site_activity_monthly b where b.trial_id = a.trial_id order by 1 desc limit 3)
       order by trial_id, site_id, activity_month`,
    );
    for (const trial of ['TRIAL-001', 'TRIAL-002']) {
      const s = trialSection(page, trial);
      const table = /<table class="monthly">[\s\S]*?<\/table>/.exec(s)![0];
      const rows = mart.filter((r) => r.trial_id === trial);
      const heads = [...table.matchAll(/data-month="(\d{4}-\d{2})-01">([^<]*)(<span class="tag">partial<\/span>)?/g)].map((m) => [
        m[1],
        m[3] === undefined,
      ]);
      expect(heads).toEqual([...new Map(rows.map((r) => [r.month, r.complete])).entries()].sort());
      const cells = [...table.matchAll(/<tr data-site="([^"]+)">([\s\S]*?)<\/tr>/g)].flatMap((m) =>
        [...m[2]!.matchAll(/data-col="(referrals_received|enrolments)">([\d,]+)</g)].map((c) => `${m[1]} ${c[1]} ${c[2]}`),
      );
      expect(cells).toEqual(
        rows.flatMap((r) => [`${r.site_id} referrals_received ${r.referrals}`, `${r.site_id} enrolments ${r.enrolments}`]),
      );
    }
  });

  test('the worklist: the N oldest open referrals per site by worklist_rank, by patient_key only', async () => {
    const mart = await wh.all<{ trial_id: string; site_id: string; patient_key: string }>(
      'select trial_id, site_id, patient_key from main.mart_open_referrals where worklist_rank <= 3 order by trial_id, site_id, worklist_rank',
    );
    const shown = [...page.matchAll(/<tr><td class="n">(\d+)<\/td><td><code>([0-9a-f]{32})<\/code><\/td>/g)].map((m) => m[2]);
    expect(shown).toEqual(mart.map((r) => r.patient_key));
    const counts = await wh.all<{ n: bigint }>(
      'select count(*) as n from main.mart_open_referrals group by trial_id, site_id order by trial_id, site_id',
    );
    const headings = [...page.matchAll(/· ([\d,]+) open/g)].map((m) => Number(m[1]!.replaceAll(',', '')));
    expect(headings).toEqual(counts.map((c) => Number(c.n)));
    // No referral subject id reaches the page (docs/security.md "The report").
    const subjects = await wh.all<{ s: string }>('select distinct referral_subject_id as s from main.fct_patient_funnel');
    for (const { s } of subjects) expect(page).not.toContain(`>${s}<`);
  });

  test("the data-quality panel shows dq_summary's counts", async () => {
    const dq = await wh.all<{ check_name: string; issue_count: bigint }>('select check_name, issue_count from main.dq_summary order by 1');
    expect(dq.length).toBeGreaterThanOrEqual(10);
    for (const c of dq) expect(page).toMatch(new RegExp(`<tr data-check="${c.check_name}">[\\s\\S]*?data-value="${c.issue_count}"`));
    const orphans = await wh.all<{ trial_id: string; n: bigint }>(
      'select trial_id, count(*) as n from main.dq_orphan_events group by 1 order by 1',
    );
    expect(orphans.length).toBeGreaterThan(0);
    // Per trial: every dq_ model of the catalog whose rows carry a trial_id, and only those.
    const data = await readReportData(wh, 3);
    const withTrial = loadModelCatalog().models.filter(
      (m) => m.layer === 'dq' && readFileSync(join(MODELS_DIR, m.file), 'utf8').includes('trial_id'),
    );
    for (const t of data.trials) expect(Object.keys(t.dq).sort()).toEqual(withTrial.map((m) => m.name).sort());
    const first = data.trials.find((t) => t.trialId === orphans[0]!.trial_id)!;
    expect(first.dq['dq_orphan_events']).toBe(Number(orphans[0]!.n));
  });

  test('the report as a recorded command: etl.runs, no published copy, exit 7 without models', async () => {
    const db = join(tmp.dir, 'warehouse.duckdb');
    await wh.close();
    const config = resolveConfig({ db, exportDir: join(tmp.dir, 'exports2'), reportWorklistRows: 2, logLevel: 'silent' }, []);
    const r = await runJob('report', ['report'], { config });
    expect(r.report!.trials).toBe(2);
    expect(existsSync(join(tmp.dir, 'exports2', REPORT_FILE))).toBe(true);
    expect(r.publishedCopy).toBeUndefined();
    expect(r.stages.report!['trials']).toBe(2);
    wh = await Warehouse.open(db, { readOnly: true });
    const run = await wh.one<{ command: string; status: string }>("select command, status from etl.runs where command = 'report'");
    expect(run).toEqual({ command: 'report', status: 'succeeded' });

    const empty = resolveConfig({ db: join(tmp.dir, 'empty.duckdb'), exportDir: join(tmp.dir, 'exports3'), logLevel: 'silent' }, []);
    const err = await runJob('report', ['report'], { config: empty }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReportError);
    expect((err as ReportError).exitCode).toBe(7);
    expect((err as ReportError).message).toMatch(/no mart_recruitment_funnel/);
    expect(existsSync(join(tmp.dir, 'exports3', REPORT_FILE))).toBe(false);
  }, 60_000);
});

/**
 * Trial T9: referral weeks of 1 January (every window complete), 19 February (72 h complete,
 * 60 days not) and 18 March (none complete); as_of_at is the attempt of 20 March.
 */
const COHORT_EVENTS: Ev[] = [
  created('k01', 'T9', 'q1', 'X1', '2024-01-02T09:00:00Z', '2024-01-02T09:00:00Z'),
  ack('k02', 'T9', 'q1', 'X1', '2024-01-02T12:00:00Z'),
  created('k03', 'T9', 'q2', 'X1', '2024-02-20T09:00:00Z', '2024-02-20T09:00:00Z'),
  created('k04', 'T9', 'q3', 'X2', '2024-03-18T09:00:00Z', '2024-03-18T09:00:00Z'),
  attempt('k05', 'v1.contactAttempt.created', 'T9', 'q3', 'X2', 'K5', '2024-03-20', '2024-03-20T10:00:00Z', ['noAnswer']),
];

describe('report: right-censored cohorts are marked', () => {
  const built = reportOn(() => fixtureRows(COHORT_EVENTS), 10);

  test('a week is marked exactly when the mart withholds one of its windowed measures', async () => {
    const weeks = await built.wh.all<{ week: string; censored: boolean; e60: bigint | null }>(
      `select strftime(referral_week, '%Y-%m-%d') as week, sum(enrolled_within_60d_denominator) as e60,
         bool_or(acknowledged_within_72h_denominator is null or attempted_by_day_3_denominator is null
           or screening_within_30d_denominator is null or enrolled_within_60d_denominator is null) as censored
       from main.mart_recruitment_funnel group by 1 order by 1`,
    );
    expect(weeks.map((w) => [w.week, w.censored])).toEqual([
      ['2024-01-01', false],
      ['2024-02-19', true],
      ['2024-03-18', true],
    ]);
    const section = trialSection(built.page, 'T9');
    for (const w of weeks) {
      if (w.censored) {
        expect(section).toMatch(
          new RegExp(
            `<tr data-week="${w.week}" class="censored" data-censored="true">\\s*<td>${w.week} <span class="tag">window not complete</span>`,
          ),
        );
      } else {
        expect(section).toMatch(new RegExp(`<tr data-week="${w.week}">\\s*<td>${w.week}</td>`));
      }
    }
    // the withheld cells, and only those, say so
    expect([...section.matchAll(/<td class="n censored" data-censored="true"/g)].length).toBe(
      Number(
        (await built.wh.one<{
          n: bigint;
        }>(`select count(*) filter (where a72 is null) + count(*) filter (where b3 is null) + count(*) filter (where s30 is null) + count(*) filter (where e60 is null) as n
        from (select referral_week, sum(acknowledged_within_72h_denominator) as a72, sum(attempted_by_day_3_denominator) as b3,
          sum(screening_within_30d_denominator) as s30, sum(enrolled_within_60d_denominator) as e60 from main.mart_recruitment_funnel group by 1)`))!
          .n,
      ),
    );
    expect(section).toContain('2 of 3 weeks');
    expectSelfContained(built.page);
  });
});

describe('report: text from the data is escaped', () => {
  const built = reportOn(() => fixtureRows(HOSTILE_EVENTS), 10, hostileSiteNames);

  test('the marts hold the markup as sent', async () => {
    const sites = await built.wh.all<{ site_id: string; site_name: string }>(
      'select site_id, site_name from main.mart_open_referrals order by site_id',
    );
    expect(sites).toEqual([
      { site_id: HOSTILE_SITE, site_name: HOSTILE_NAME },
      { site_id: 'S-2', site_name: HOSTILE_TRIAL },
    ]);
  });

  test('no element, attribute or script comes from the data; every value appears escaped', () => {
    expectSelfContained(built.page);
    expect(built.page).not.toMatch(/<img|<b onmouseover|<i>|<svg onload|onerror=alert\(1\)>|<\/title><script/i);
    expect(built.page).toContain('data-trial="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"');
    expect(built.page).toContain('<h2>Trial &quot;&gt;&lt;img src=x onerror=alert(1)&gt;</h2>');
    expect(built.page).toContain('&lt;/title&gt;&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;');
    expect(built.page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(built.page).toContain('<code>&lt;script&gt;type&lt;/script&gt;</code>');
    expect(built.page).toContain('&lt;svg onload=alert(3)&gt;');
    expect(built.page).toContain('&lt;i&gt;odd&lt;/i&gt;');
    // Only the page's own <svg> elements, each a chart drawn by Vega.
    const svgs = [...built.page.matchAll(/<svg\b[^>]*>/g)].map((m) => m[0]);
    expect(svgs.length).toBeGreaterThan(0);
    for (const s of svgs)
      expect(s).toMatch(
        /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" xmlns:xlink="http:\/\/www\.w3\.org\/1999\/xlink" version="1\.1" class="marks"/,
      );
  });
});

describe('report: many sites', () => {
  const built = reportOn(() => simulatorRows({ seed: 3, trials: 1, sitesPerTrial: 12, patientsPerTrial: 120 }), 1);

  test('charts draw the 9 busiest sites and "other sites"; the tables list every site', async () => {
    const sites = await built.wh.all<{ site_id: string; site_name: string | null; n: bigint }>(
      'select site_id, any_value(site_name) as site_name, sum(referrals_received) as n from main.mart_site_activity group by 1 order by n desc, site_id',
    );
    expect(sites.length).toBe(12);
    const weekly = /data-chart="weekly-referrals">(<svg[\s\S]*?<\/svg>)/.exec(built.page)![1]!;
    const legend = /aria-label="Symbol legend titled 'site'[^"]*with (\d+) values/.exec(weekly)!;
    expect(Number(legend[1])).toBe(10);
    const texts = new Set([...weekly.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!));
    expect(texts.has('other sites')).toBe(true);
    for (const s of sites.slice(0, 9)) expect(texts.has(s.site_name ?? s.site_id), s.site_id).toBe(true);
    for (const s of sites.slice(9)) expect(texts.has(s.site_name ?? s.site_id), s.site_id).toBe(false);
    const sitesTable = /<table class="sites">[\s\S]*?<\/table>/.exec(built.page)![0];
    expect([...sitesTable.matchAll(/<tr data-site="/g)].length).toBe(12);
    expect([...built.page.matchAll(/<h4 data-site="/g)].length).toBe(
      await built.wh.one<{ n: bigint }>('select count(distinct site_id) as n from main.mart_open_referrals').then((r) => Number(r!.n)),
    );
  });
});
