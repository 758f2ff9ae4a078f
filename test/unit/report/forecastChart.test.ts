/**
 * The forecast chart's data (docs/report.md "Forecast"): the band joins the mart's percentiles
 * (today's count, the 91-day percentiles, the target at its date percentiles) and never
 * crosses; the past sums the weekly enrolments of the sites.
 */
import { describe, expect, test } from 'vitest';
import { forecastChartData } from '../../../src/report/renderReport.js';
import type { TrialForecast, TrialReport } from '../../../src/report/reportData.js';

const week = (w: string, siteId: string, enrolments: number) => ({
  siteId,
  siteName: null,
  week: w,
  referralsReceived: 0,
  enrolments,
  isCompleteWeek: true,
});
const trial = {
  siteWeeks: [week('2026-01-05', 'A', 1), week('2026-01-05', 'B', 2), week('2026-01-12', 'A', 3), week('2026-01-19', 'B', 1)],
} as unknown as TrialReport;
const forecast: TrialForecast = {
  enrolledToDate: 7,
  siteCount: 2,
  next91d: [5, 9, 14],
  target: 40,
  targetDate: '2026-09-30',
  reachedOn: ['2026-08-01', '2026-10-15', '2027-02-01'],
  probabilityByTargetDate: 0.42,
  asOfDate: '2026-01-22',
};

describe('forecastChartData', () => {
  test('the past: cumulative weekly enrolments of complete weeks, then enrolled to date at the as-of date', () => {
    expect(forecastChartData(trial, forecast).history).toEqual([
      { date: '2026-01-12', enrolled: 3 },
      { date: '2026-01-19', enrolled: 6 },
      { date: '2026-01-22', enrolled: 7 },
    ]);
  });

  test('the band passes through the percentiles of the mart and its edges never cross', () => {
    const { band, target, targetDate } = forecastChartData(trial, forecast);
    expect([target, targetDate]).toEqual([40, '2026-09-30']);
    const at = (d: string) => band.find((b) => b.date === d)!;
    expect(at('2026-01-22')).toEqual({ date: '2026-01-22', low: 7, median: 7, high: 7 });
    expect(at('2026-04-23')).toEqual({ date: '2026-04-23', low: 12, median: 16, high: 21 });
    expect(at('2026-08-01').high).toBeCloseTo(40, 9);
    expect(at('2026-10-15').median).toBeCloseTo(40, 9);
    expect(at('2027-02-01').low).toBeCloseTo(40, 9);
    expect(band.map((b) => b.date)).toEqual(['2026-01-22', '2026-04-23', '2026-08-01', '2026-10-15', '2027-02-01']);
    for (const b of band) {
      expect(b.low).toBeLessThanOrEqual(b.median);
      expect(b.median).toBeLessThanOrEqual(b.high);
    }
  });

  test('without a target the band ends at 91 days', () => {
    const { band, target } = forecastChartData(trial, {
      ...forecast,
      target: null,
      targetDate: null,
      reachedOn: null,
      probabilityByTargetDate: null,
    });
    expect(target).toBeNull();
    expect(band).toEqual([
      { date: '2026-01-22', low: 7, median: 7, high: 7 },
      { date: '2026-04-23', low: 12, median: 16, high: 21 },
    ]);
  });
});
