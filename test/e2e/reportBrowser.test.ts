/**
 * The report in a real browser: Debian's `chromium` (`make test` installs it, see the
 * Makefile's `.make/chromium`) driven by playwright-core. The page must render with no
 * console error, request nothing but its own file:// URL, show the funnel numbers of
 * `mart_recruitment_funnel`, and hold no script even when the data is markup. A screenshot
 * is saved under the test's temporary folder.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPORT_CSP } from '../../src/report/renderReport.js';
import { writeReport } from '../../src/report/writeReport.js';
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
          [...s.querySelectorAll('tr[data-funnel-stage]')].map((tr) => [tr.getAttribute('data-funnel-stage'), Number((tr.children[1]?.textContent ?? '').replaceAll(',', ''))]),
        ),
      })),
    );
    const mart = await wh.all<Record<string, string | bigint>>(
      `select trial_id, sum(referrals) as referred, sum(reached_pre_screening) as pre_screening, sum(reached_visit_scheduled) as visit_scheduled,
         sum(reached_screening) as screening, sum(reached_enrolled) as enrolled from main.mart_recruitment_funnel group by 1 order by 1`,
    );
    expect(shown).toEqual(mart.map(({ trial_id, ...c }) => ({ trial: trial_id, stages: Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Number(v)])) })));

    // The charts are drawn: inline SVG with marks, visible on the page.
    const charts = await page.$$eval('div.chart > svg', (svgs) => svgs.map((s) => ({ w: s.getBoundingClientRect().width, marks: s.querySelectorAll('path, rect, line').length })));
    expect(charts.length).toBe(14);
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

  test('markup in the data stays text: no script, image or handler, no dialog, no request', async () => {
    const { path } = await writeReport({ wh: hostile, exportDir: join(tmp.dir, 'hostile'), worklistRows: 10 });
    const { page, seen } = await visit(browser, path);
    await page.mouse.move(200, 300);
    expect(seen.errors).toEqual([]);
    expect(seen.dialogs).toEqual([]);
    expect(seen.requests).toEqual([pathToFileURL(path).href]);
    expect(await page.locator('script, img, image, iframe, object, embed, foreignObject').count()).toBe(0);
    const handlers = await page.$$eval('*', (els) => els.flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName}.${a.name}`)));
    expect(handlers).toEqual([]);
    // The values are shown as text, exactly as the data holds them.
    expect(await page.locator('section.trial h2').innerText()).toBe(`Trial ${HOSTILE_TRIAL}`);
    expect(await page.locator('section.trial').getAttribute('data-trial')).toBe(HOSTILE_TRIAL);
    const text = await page.locator('body').innerText();
    expect(text).toContain(HOSTILE_NAME);
    expect(await page.locator('h4[data-site]').evaluateAll((hs) => hs.map((h) => h.getAttribute('data-site')))).toEqual([HOSTILE_SITE, 'S-2']);
    expect(await page.title()).toMatch(/^Recruitment report as of /);
    await page.screenshot({ path: join(tmp.dir, 'hostile.png'), fullPage: true });
    await page.context().close();
  }, 60_000);
});
