/**
 * The report's charts: Vega-Lite specifications compiled to Vega and rendered to static SVG
 * in Node by `vega` (a headless `View`, renderer `none`, `view.toSVG()`), never hand-written
 * SVG. Expressions are evaluated by `vega-interpreter` (parse with `ast: true`), so no
 * `new Function` is called. Vega escapes every text it writes into the SVG (labels, titles,
 * legends), so data values from upstream cannot inject markup.
 *
 * @module
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { expressionInterpreter } from 'vega-interpreter';

/** One data row of a chart: plain values only. */
export type ChartRow = Record<string, string | number | boolean | null>;

const CONFIG = {
  font: 'sans-serif',
  view: { stroke: null },
  axis: { labelFontSize: 11, titleFontSize: 11, labelLimit: 180 },
  legend: { labelFontSize: 11, titleFontSize: 11, labelLimit: 480 },
} as const;

let chartSeq = 0;

/**
 * Render a Vega-Lite spec to an SVG string.
 *
 * Ids the SVG defines (clip paths, gradients) are made unique per chart, since many charts
 * share one HTML document and an id must name one element.
 *
 * @throws Error when Vega-Lite or Vega rejects the spec (a bug in the report)
 */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const vegaSpec = compile({ ...spec, config: { ...CONFIG, ...(spec.config ?? {}) } } as TopLevelSpec).spec;
  const view = new View(parse(vegaSpec, undefined, { ast: true }), { renderer: 'none', expr: expressionInterpreter });
  try {
    const svg = await view.toSVG();
    const prefix = `c${++chartSeq}-`;
    return svg.replace(/\bid="([^"]+)"/g, `id="${prefix}$1"`).replace(/url\(#([^)]+)\)/g, `url(#${prefix}$1)`);
  } finally {
    view.finalize();
  }
}

/** Horizontal bars of the funnel: one per stage, in order, with the count as a label. */
export function funnelSpec(rows: { label: string; count: number }[]): TopLevelSpec {
  return {
    width: 420,
    height: { step: 26 },
    data: { values: rows },
    encoding: {
      y: { field: 'label', type: 'nominal', sort: null, title: null },
      x: { field: 'count', type: 'quantitative', title: 'patients' },
    },
    layer: [
      { mark: { type: 'bar', color: '#3b6ea5' } },
      { mark: { type: 'text', align: 'left', dx: 4 }, encoding: { text: { field: 'count', type: 'quantitative' } } },
    ],
  };
}

/** The x and color channels of a chart of weeks × sites (rows of {@link ChartRow}). */
function weekBySite(weekTitle: string) {
  return {
    x: { field: 'week', type: 'temporal', timeUnit: 'utcyearmonthdate', title: weekTitle, axis: { format: '%d %b' } },
    color: { field: 'series', type: 'nominal', title: 'site', scale: { scheme: 'tableau10' } },
  } as const;
}

/**
 * Weekly counts per site: one line per site (`series`), a triangle on the week that is not
 * complete (the week of `as_of_at`).
 */
export function weeklySpec(rows: ChartRow[], field: string, title: string): TopLevelSpec {
  return {
    width: 560,
    height: 180,
    title: { text: title, anchor: 'start', fontSize: 12 },
    data: { values: rows },
    encoding: {
      ...weekBySite('ISO week (Monday, UTC)'),
      y: { field, type: 'quantitative', title: null },
    },
    layer: [
      { mark: { type: 'line' } },
      {
        mark: { type: 'point', filled: true, size: 36 },
        encoding: {
          shape: {
            field: 'partial',
            type: 'nominal',
            title: 'week',
            scale: { domain: ['complete', 'partial (as of)'], range: ['circle', 'triangle-up'] },
          },
        },
      },
    ],
  };
}

/** Cumulative shares (0–1) at a few thresholds, one bar each, with the percentage as a label. */
export function sharesSpec(rows: { label: string; share: number }[], title: string): TopLevelSpec {
  return {
    width: 260,
    height: { step: 24 },
    title: { text: title, anchor: 'start', fontSize: 12 },
    data: { values: rows },
    encoding: {
      y: { field: 'label', type: 'nominal', sort: null, title: null },
      x: { field: 'share', type: 'quantitative', title: 'share of referrals', scale: { domain: [0, 1] }, axis: { format: '.0%' } },
    },
    layer: [
      { mark: { type: 'bar', color: '#4f8f6f' } },
      { mark: { type: 'text', align: 'left', dx: 4 }, encoding: { text: { field: 'share', type: 'quantitative', format: '.0%' } } },
    ],
  };
}

/** Per referral week × site: the median as a point and a rule up to the P90 (the mart's per-row values). */
export function medianP90Spec(rows: ChartRow[], unit: string, title: string): TopLevelSpec {
  return {
    width: 560,
    height: 180,
    title: { text: title, anchor: 'start', fontSize: 12 },
    data: { values: rows },
    encoding: {
      ...weekBySite('referral week (Monday, UTC)'),
    },
    layer: [
      {
        mark: { type: 'rule', opacity: 0.5 },
        encoding: { y: { field: 'median', type: 'quantitative', title: unit }, y2: { field: 'p90' } },
      },
      { mark: { type: 'point', filled: true }, encoding: { y: { field: 'median', type: 'quantitative', title: unit } } },
    ],
  };
}

/** The data of {@link forecastSpec}: dates are `YYYY-MM-DD` (UTC). */
export interface ForecastChart {
  /** Enrolled (cumulative) at the end of each past week, and at the as-of date last. */
  history: { date: string; enrolled: number }[];
  /** The 10–90 band and the median of the enrolled count ahead, from the as-of date on. */
  band: { date: string; low: number; median: number; high: number }[];
  target: number | null;
  targetDate: string | null;
}

/**
 * Enrolled to date (line), the forecast's 10–90 band (area) and median (dashed) ahead, the
 * target (horizontal rule) and the target date (vertical rule).
 */
export function forecastSpec(c: ForecastChart): TopLevelSpec {
  const x = {
    field: 'date',
    type: 'temporal',
    timeUnit: 'utcyearmonthdate',
    title: null,
    axis: { format: '%d %b %Y', labelAngle: 0, tickCount: 6 },
  } as const;
  const layers: object[] = [
    {
      data: { values: c.band },
      mark: { type: 'area', color: '#3b6ea5', opacity: 0.2 },
      encoding: { x, y: { field: 'low', type: 'quantitative', title: 'patients enrolled' }, y2: { field: 'high' } },
    },
    {
      data: { values: c.band },
      mark: { type: 'line', color: '#3b6ea5', strokeDash: [5, 3] },
      encoding: { x, y: { field: 'median', type: 'quantitative' } },
    },
    {
      data: { values: c.history },
      mark: { type: 'line', color: '#1d2630', point: { size: 16, color: '#1d2630' } },
      encoding: { x, y: { field: 'enrolled', type: 'quantitative' } },
    },
  ];
  if (c.target !== null) {
    layers.push({
      data: { values: [{ target: c.target }] },
      mark: { type: 'rule', color: '#a1260d' },
      encoding: { y: { field: 'target', type: 'quantitative' } },
    });
  }
  if (c.targetDate !== null) {
    layers.push({
      data: { values: [{ date: c.targetDate }] },
      mark: { type: 'rule', color: '#a1260d', strokeDash: [2, 2] },
      encoding: { x },
    });
  }
  return {
    width: 560,
    height: 220,
    title: { text: 'Enrolled to date, and the forecast: median (dashed) within its 10–90 % band', anchor: 'start', fontSize: 12 },
    layer: layers,
  } as TopLevelSpec;
}
