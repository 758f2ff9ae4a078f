/**
 * The report in a real browser: Debian's `chromium` (`make test` installs it, see the
 * Makefile's `.make/chromium`) driven by playwright-core. The page must render with no
 * console error, request nothing but its own file:// URL, show the funnel numbers of
 * `mart_recruitment_funnel`, and hold no script even when the data is markup. A screenshot
 * is saved under the test's temporary folder.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPORT_CSP } from '../../src/report/renderReport.js';
import { writeReport } from '../../src/report/writeReport.js';
import { runTransform } from '../../src/transform/runTransform.js';
import type { Warehouse } from '../../src/warehouse/Warehouse.js';
import { tempDir } from '../helpers/tmp.js';
import { builtWarehouse, fixtureRows, simulatorRows } from '../helpers/warehouses.js';
import { HOSTILE_EVENTS, HOSTILE_NAME, HOSTILE_SITE, HOSTILE_TRIAL, hostileSiteNames } from '../integration/report/hostile.js';

/** Debian's chromium; `make test` installs it when missing. */
const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';

/** What a page did while it loaded: console errors, page errors, requests, dialogs. */
interface Visit {
  errors: string[];
  requests: string[];
  dialogs: string[];
}

async function visit(browser: Browser, file: string): Promise<{ page: Page; seen: Visit }> {
  // A context with no network access beyond the file itself: any other request would be
  // recorded (and fail), never reach a server.
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 }, offline: true });
  const page = await context.newPage();
  const seen: Visit = { errors: [], requests: [], dialogs: [] };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') seen.errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => seen.errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => seen.requests.push(r.url()));
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  return { page, seen };
}

describe('the report in headless Chromium', () => {
  const tmp = tempDir('recruit-etl-report-browser-');
  let browser: Browser;
  let wh: Warehouse;
  let hostile: Warehouse;

  beforeAll(async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: run make test (it installs chromium)`).toBe(true);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    wh = await builtWarehouse(':memory:', await simulatorRows({ seed: 7, trials: 2, sitesPerTrial: 4, patientsPerTrial: 150 }));
    // a target for the first trial only: the other shows the 91-day forecast alone
    const first = await wh.one<{ trial_id: string; e: bigint }>(
      'select trial_id, enrolled_to_date as e from main.mart_enrolment_forecast order by trial_id limit 1',
    );
    const targets = join(tmp.dir, 'targets.csv');
    writeFileSync(targets, `trial_id,enrolment_target,target_date\n${first!.trial_id},${Number(first!.e) + 30},2099-12-31\n`);
    await runTransform(wh, { trialTargets: targets });
    hostile = await builtWarehouse(':memory:', fixtureRows(HOSTILE_EVENTS), hostileSiteNames(tmp.dir));
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await wh?.close();
    await hostile?.close();
    tmp.cleanup();
  });

  test("renders with no console error and no request, showing the mart's funnel", async () => {
    const { path } = await writeReport({ wh, exportDir: join(tmp.dir, 'demo'), worklistRows: 10 });
    const { page, seen } = await visit(browser, path);
    expect(seen.errors).toEqual([]);
    expect(seen.requests).toEqual([pathToFileURL(path).href]);
    expect(seen.dialogs).toEqual([]);
    // The policy the browser reads is the strict one, whatever the escaping of its quotes.
    expect(await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content')).toBe(REPORT_CSP);

    // The funnel as the browser shows it (rendered text), per trial.
    const shown = await page.$$eval('section.trial', (sections) =>
      sections.map((s) => ({
        trial: s.getAttribute('data-trial'),
        stages: Object.fromEntries(
          [...s.querySelectorAll('tr[data-funnel-stage]')].map((tr) => [
            tr.getAttribute('data-funnel-stage'),
            Number((tr.children[1]?.textContent ?? '').replaceAll(',', '')),
          ]),
        ),
      })),
    );
    const mart = await wh.all<Record<string, string | bigint>>(
      `select trial_id, sum(referrals) as referred, sum(reached_pre_screening) as pre_screening, sum(reached_visit_scheduled) as visit_scheduled,
         sum(reached_screening) as screening, sum(reached_enrolled) as enrolled from main.mart_recruitment_funnel group by 1 order by 1`,
    );
    expect(shown).toEqual(
      mart.map(({ trial_id, ...c }) => ({
        trial: trial_id,
        stages: Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Number(v)])),
      })),
    );

    // The charts are drawn: inline SVG with marks, visible on the page.
    const charts = await page.$$eval('div.chart > svg', (svgs) =>
      svgs.map((s) => ({ w: s.getBoundingClientRect().width, marks: s.querySelectorAll('path, rect, line').length })),
    );
    expect(charts.length).toBe(16);
    for (const c of charts) {
      expect(c.w).toBeGreaterThan(100);
      expect(c.marks).toBeGreaterThan(3);
    }
    expect(await page.locator('script').count()).toBe(0);

    const shot = join(tmp.dir, 'report.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(50_000);
    await page.context().close();
  }, 60_000);

  test("shows each trial's forecast and each site's rate interval as the marts hold them, and tells one story", async () => {
    const { path } = await writeReport({ wh, exportDir: join(tmp.dir, 'forecast'), worklistRows: 10 });
    const { page, seen } = await visit(browser, path);
    expect(seen.errors).toEqual([]);
    const shown = await page.$$eval('table.forecast', (tables) =>
      tables.map((t) => ({
        trial: t.getAttribute('data-forecast'),
        ...Object.fromEntries(
          [...t.querySelectorAll('td[data-col]')].map((td) => [
            td.getAttribute('data-col'),
            (td.textContent ?? '').replace(/\s+/g, ' ').trim(),
          ]),
        ),
      })),
    );
    const mart = await wh.all<Record<string, unknown>>(
      `select trial_id, enrolled_to_date, enrolment_target, strftime(target_date, '%Y-%m-%d') as target_date,
         enrolments_next_91d_p10 as a, enrolments_next_91d_p50 as b, enrolments_next_91d_p90 as c,
         strftime(target_reached_on_p10, '%Y-%m-%d') as r10, strftime(target_reached_on_p50, '%Y-%m-%d') as r50, strftime(target_reached_on_p90, '%Y-%m-%d') as r90,
         probability_target_met_by_target_date as p
       from main.mart_enrolment_forecast order by trial_id`,
    );
    expect(mart).toHaveLength(2);
    expect(shown).toEqual(
      mart.map((m) => ({
        trial: m['trial_id'],
        enrolled_to_date: String(m['enrolled_to_date']),
        enrolment_target: m['enrolment_target'] === null ? 'none given' : `${String(m['enrolment_target'])} by ${String(m['target_date'])}`,
        next_91d: `${String(m['b'])} (${String(m['a'])}–${String(m['c'])})`,
        ...(m['enrolment_target'] === null
          ? {}
          : {
              target_reached_on: `${String(m['r50'])} (${String(m['r10'])} – ${String(m['r90'])})`,
              probability: `${Math.round(100 * Number(m['p']))}%`,
            }),
      })),
    );
    // the band is drawn: an area under the line of the past, for each trial
    expect(await page.locator('div.chart[data-chart="forecast"] svg path').count()).toBeGreaterThan(8);
    expect(await page.locator('div.chart[data-chart="forecast"]').count()).toBe(2);
    // every site of the sites table shows its rate interval, as the site mart holds it
    const rates = await page.$$eval('section.trial', (sections) =>
      sections.flatMap((s) =>
        [...s.querySelectorAll('table.sites tr[data-site]')].map(
          (tr) =>
            `${s.getAttribute('data-trial')}/${tr.getAttribute('data-site')}: ${tr.querySelector('td[data-col="rate"]')?.textContent.replace(/\s+/g, ' ')}`,
        ),
      ),
    );
    const siteMart = await wh.all<{ k: string }>(
      `select trial_id || '/' || site_id || ': ' || printf('%.1f (%.1f–%.1f)', enrolment_rate_per_30d_p50, enrolment_rate_per_30d_p10, enrolment_rate_per_30d_p90) as k
       from main.mart_site_enrolment_forecast order by trial_id, site_id`,
    );
    expect(rates).toEqual(siteMart.map((r) => r.k));
    // one story: the worklist shows the funnel's labels, never a raw status code
    const statuses = await page.$$eval('table.worklist td[data-col="current_status"]', (tds) =>
      tds.map((td) => td.textContent?.trim() ?? ''),
    );
    expect(statuses.length).toBeGreaterThan(0);
    // (a value the seed does not map is named as unknown, with its code)
    for (const st of statuses)
      expect(['Referred', 'Pre-screening', 'Visit scheduled', 'Screening', 'Enrolled', '(none)']).toContain(
        st.replace(/^Unknown status \S+$/, 'Referred'),
      );
    // the data's age: the simulator's data is months older than the report
    const stale = page.locator('header p.stale');
    expect(Number(await stale.getAttribute('data-stale-days'))).toBeGreaterThan(3);
    expect(await stale.isVisible()).toBe(true);
    // the site table's enrolments and the funnel's Enrolled: equal, or the page says why not
    for (const section of await page.locator('section.trial').all()) {
      const funnel = Number(await section.locator('tr[data-funnel-stage="enrolled"] td[data-value]').getAttribute('data-value'));
      const sites = (await section.locator('table.sites td[data-col="enrolments"]').allInnerTexts()).reduce(
        (n, x) => n + Number(x.replaceAll(',', '')),
        0,
      );
      expect(await section.locator('p[data-note="enrolled-mismatch"]').count()).toBe(sites === funnel ? 0 : 1);
    }
    // a date does not wrap: each stays on one line
    const heights = await page.$$eval('.date', (spans) => spans.map((x) => x.getClientRects().length));
    expect(heights.length).toBeGreaterThan(0);
    for (const h of heights) expect(h).toBe(1);
    const wrapping = (await page.evaluate(
      `[...document.querySelectorAll('table.cohorts td:first-child, table.worklist td:nth-child(4)')].map((e) => getComputedStyle(e).whiteSpace)`,
    )) as string[];
    expect(wrapping.length).toBeGreaterThan(0);
    expect(new Set(wrapping)).toEqual(new Set(['nowrap']));
    await page.context().close();
  }, 60_000);

  test('markup in the data stays text: no script, image or handler, no dialog, no request', async () => {
    const { path } = await writeReport({ wh: hostile, exportDir: join(tmp.dir, 'hostile'), worklistRows: 10 });
    const { page, seen } = await visit(browser, path);
    await page.mouse.move(200, 300);
    expect(seen.errors).toEqual([]);
    expect(seen.dialogs).toEqual([]);
    expect(seen.requests).toEqual([pathToFileURL(path).href]);
    expect(await page.locator('script, img, image, iframe, object, embed, foreignObject').count()).toBe(0);
    const handlers = await page.$$eval('*', (els) =>
      els.flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName}.${a.name}`)),
    );
    expect(handlers).toEqual([]);
    // The values are shown as text, exactly as the data holds them.
    expect(await page.locator('section.trial h2').innerText()).toBe(`Trial ${HOSTILE_TRIAL}`);
    expect(await page.locator('section.trial').getAttribute('data-trial')).toBe(HOSTILE_TRIAL);
    const text = await page.locator('body').innerText();
    expect(text).toContain(HOSTILE_NAME);
    expect(await page.locator('h4[data-site]').evaluateAll((hs) => hs.map((h) => h.getAttribute('data-site')))).toEqual([
      HOSTILE_SITE,
      'S-2',
    ]);
    expect(await page.title()).toMatch(/^Recruitment report as of /);
    await page.screenshot({ path: join(tmp.dir, 'hostile.png'), fullPage: true });
    await page.context().close();
  }, 60_000);
});
