#!/usr/bin/env node
// make screenshot: the picture of the report in the README (docs/report.png), taken by
// headless Chromium (playwright-core, Debian's chromium) from the demo's report.
//   node scripts/report-screenshot.mjs [report.html] [out.png]
import { pathToFileURL } from 'node:url';
import { statSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [report = 'data/exports/report.html', out = 'docs/report.png'] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1500 }, offline: true });
  await page.goto(pathToFileURL(report).href, { waitUntil: 'load' });
  // The header, the first trial's funnel and its weekly activity charts.
  await page.screenshot({ path: out, clip: { x: 0, y: 0, width: 1200, height: 1500 } });
  console.log(`screenshot: ${out} (${Math.round(statSync(out).size / 1024)} KB) from ${report}`);
} finally {
  await browser.close();
}
