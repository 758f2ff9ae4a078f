/**
 * The metrics file (docs/contracts.md "Metrics"): after every pipeline command, success or
 * failure, `--metrics-file PATH` is rewritten in the Prometheus text format for
 * node_exporter's textfile collector, atomically (a temporary file in the same folder,
 * renamed) and with `--metrics-file-mode` (default 0644: the file holds no patient data).
 *
 * Two kinds of series. The command's own (label `command`: its last run, last success,
 * duration, exit code, events loaded, duration per stage), which each invocation knows; the
 * other commands' are read back from the previous file (parsed with
 * `parse-prometheus-text-format`) and written again unchanged. And the warehouse's
 * (freshness, events and quarantined events per stream, data-quality findings), read by the
 * job before it closed the warehouse (src/metrics/warehouseSeries.ts); when it could not
 * (a run refused on its options or the lock, a warehouse that cannot be read), the previous
 * file's values are kept, with `recruit_etl_warehouse_read_timestamp_seconds` telling their
 * age. A deleted file starts again empty (a counter reset, which `rate()` and `increase()`
 * expect); an unreadable one too, with a warning. The text is written by `prom-client`, from
 * a Registry of its own (never the global one).
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { metricsPathProblem, specialKind } from './metricsPath.js';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Counter, Gauge, Registry } from 'prom-client';
import { writeReaderFile, type ReaderModes } from '../fs/readerFiles.js';
import type { WarehouseSeries } from './warehouseSeries.js';

/** The default `--metrics-file-mode`: everyone reads (node_exporter runs as another user). */
export const DEFAULT_METRICS_FILE_MODE = 0o644;

/** A previous file larger than this is not read back (it is replaced, with a warning), bytes. */
export const MAX_PREVIOUS_BYTES = 1024 * 1024;

/** What one command did, for the metrics file. */
export interface CommandOutcome {
  /** The CLI command, the `command` label (`run`, `extract`, …). */
  command: string;
  /** The process exit code (docs/contracts.md "Exit codes"). */
  exitCode: number;
  startedAt: Date;
  finishedAt: Date;
  /** Events the command committed to `raw.events` (0 when it loads none). */
  eventsLoaded: number;
  /** Wall time of each stage that started, seconds (absent: no stage started). */
  stageSeconds?: Record<string, number>;
  /** The warehouse's series, read by the job (absent: the previous file's are kept). */
  warehouse?: WarehouseSeries;
}

type Kind = 'gauge' | 'counter';
/** One metric family: name, help, type, label names. */
interface Family {
  name: string;
  help: string;
  kind: Kind;
  labels: readonly string[];
}
const family = (name: string, kind: Kind, labels: readonly string[], help: string): Family => ({ name, help, kind, labels });

/** The series, by key (Prometheus naming: units in the name, `_total` counters, `_timestamp_seconds`). */
export const METRICS = {
  lastRun: family(
    'recruit_etl_last_run_timestamp_seconds',
    'gauge',
    ['command'],
    'Unix time the last run of the command ended, whatever its outcome',
  ),
  lastSuccess: family(
    'recruit_etl_last_success_timestamp_seconds',
    'gauge',
    ['command'],
    'Unix time the last successful run (exit 0) of the command ended',
  ),
  duration: family('recruit_etl_last_run_duration_seconds', 'gauge', ['command'], 'Duration of the last run of the command, seconds'),
  exitCode: family(
    'recruit_etl_last_exit_code',
    'gauge',
    ['command'],
    'Exit code of the last run of the command (0 done; docs/contracts.md "Exit codes")',
  ),
  events: family(
    'recruit_etl_events_loaded_total',
    'counter',
    ['command'],
    'Events the command committed to raw.events, summed over the runs this file has seen',
  ),
  stageDuration: family(
    'recruit_etl_stage_duration_seconds',
    'gauge',
    ['command', 'stage'],
    'Wall time of each stage of the last run of the command, seconds',
  ),
  warehouseRead: family('recruit_etl_warehouse_read_timestamp_seconds', 'gauge', [], 'Unix time the warehouse series below were read'),
  lastSuccessfulRun: family(
    'recruit_etl_last_successful_run_timestamp_seconds',
    'gauge',
    [],
    'Unix time the last run recorded succeeded in etl.runs ended, any command',
  ),
  lastSuccessfulExtract: family(
    'recruit_etl_last_successful_extract_timestamp_seconds',
    'gauge',
    [],
    'Unix time the last run or extract recorded succeeded in etl.runs ended',
  ),
  newestEvent: family(
    'recruit_etl_newest_event_published_timestamp_seconds',
    'gauge',
    [],
    'Newest publishedTime among the stored events, Unix time (the upstream clock)',
  ),
  cursorAge: family(
    'recruit_etl_cursor_age_seconds',
    'gauge',
    [],
    'Seconds since the oldest cursor of an active stream was stored, when this file was written',
  ),
  streamLastPoll: family(
    'recruit_etl_stream_last_poll_timestamp_seconds',
    'gauge',
    ['stream_id'],
    'Unix time the cursor of the active stream was last stored',
  ),
  streamEvents: family(
    'recruit_etl_stream_events_total',
    'counter',
    ['stream_id'],
    'Events stored on the stream (its last stream position)',
  ),
  streamQuarantined: family(
    'recruit_etl_stream_quarantined_events_total',
    'counter',
    ['stream_id'],
    'Events of the stream stored in their quarantined form (docs/ingest.md "Quarantine")',
  ),
  dataQuality: family(
    'recruit_etl_data_quality_findings',
    'gauge',
    ['check'],
    'Findings of each data-quality check of the last transform (main.dq_summary)',
  ),
} as const satisfies Record<string, Family>;

/** The families read from the warehouse (kept from the previous file when it could not be read). */
const WAREHOUSE_KEYS = [
  'warehouseRead',
  'lastSuccessfulRun',
  'lastSuccessfulExtract',
  'newestEvent',
  'streamLastPoll',
  'streamEvents',
  'streamQuarantined',
  'dataQuality',
] as const;

/** One sample: its labels and value. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}
/** Samples by metric name. */
export type Series = Map<string, Sample[]>;

/**
 * The samples of our series in `text`, by metric name.
 * @throws when `text` is not the Prometheus text format
 */
export function readSeries(text: string): Series {
  const wanted = new Set<string>(Object.values(METRICS).map((f) => f.name));
  const out: Series = new Map();
  for (const fam of parsePrometheusTextFormat(text)) {
    if (!wanted.has(fam.name)) continue;
    const samples: Sample[] = [];
    for (const s of fam.metrics) {
      const value = Number(s.value);
      if (Number.isFinite(value)) samples.push({ labels: { ...(s.labels ?? {}) }, value });
    }
    out.set(fam.name, samples);
  }
  return out;
}

/** The warehouse's samples of `w`; this run's own success folded in (it is recorded after the file is written). */
function warehouseSamples(w: WarehouseSeries): Series {
  const one = (v: number | null): Sample[] => (v === null ? [] : [{ labels: {}, value: v }]);
  const byStream = (pick: (s: WarehouseSeries['streams'][number]) => number | null, active = false): Sample[] =>
    w.streams
      .filter((s) => !active || s.active)
      .flatMap((s) => {
        const v = pick(s);
        return v === null ? [] : [{ labels: { stream_id: s.streamId }, value: v }];
      });
  return new Map([
    [METRICS.warehouseRead.name, one(w.readAt.getTime() / 1000)],
    [METRICS.lastSuccessfulRun.name, one(w.lastSuccessfulRunSeconds)],
    [METRICS.lastSuccessfulExtract.name, one(w.lastSuccessfulExtractSeconds)],
    [METRICS.newestEvent.name, one(w.newestEventPublishedSeconds)],
    [METRICS.streamLastPoll.name, byStream((s) => s.lastPolledSeconds, true)],
    [METRICS.streamEvents.name, byStream((s) => s.events)],
    [METRICS.streamQuarantined.name, byStream((s) => s.quarantined)],
    [METRICS.dataQuality.name, Object.entries(w.dataQuality ?? {}).map(([check, value]) => ({ labels: { check }, value }))],
  ]);
}

/** Replace the sample of `labels` in `samples` (or add it). */
function put(samples: Sample[], labels: Record<string, string>, value: number): Sample[] {
  const key = JSON.stringify(labels);
  return [...samples.filter((s) => JSON.stringify(s.labels) !== key), { labels, value }];
}

/**
 * Every sample of the new file: the previous file's, this command's replaced, the
 * warehouse's replaced when the job read them.
 */
export function nextSeries(previous: Series, outcome: CommandOutcome): Series {
  const next: Series = new Map();
  const prev = (f: Family): Sample[] => previous.get(f.name) ?? [];
  const others = (f: Family): Sample[] => prev(f).filter((s) => s.labels['command'] !== outcome.command);
  const own = { command: outcome.command };
  const end = outcome.finishedAt.getTime() / 1000;
  next.set(METRICS.lastRun.name, [...others(METRICS.lastRun), { labels: own, value: end }]);
  const lastSuccess = prev(METRICS.lastSuccess);
  next.set(METRICS.lastSuccess.name, outcome.exitCode === 0 ? put(lastSuccess, own, end) : lastSuccess);
  next.set(METRICS.duration.name, [
    ...others(METRICS.duration),
    { labels: own, value: Math.max(0, (outcome.finishedAt.getTime() - outcome.startedAt.getTime()) / 1000) },
  ]);
  next.set(METRICS.exitCode.name, [...others(METRICS.exitCode), { labels: own, value: outcome.exitCode }]);
  const before = prev(METRICS.events).find((s) => s.labels['command'] === outcome.command)?.value ?? 0;
  next.set(METRICS.events.name, [
    ...others(METRICS.events),
    { labels: own, value: Math.max(0, before) + Math.max(0, outcome.eventsLoaded) },
  ]);
  const stages = Object.entries(outcome.stageSeconds ?? {}).map(([stage, value]) => ({
    labels: { command: outcome.command, stage },
    value,
  }));
  next.set(METRICS.stageDuration.name, [...others(METRICS.stageDuration), ...stages]);

  const wh = outcome.warehouse ? warehouseSamples(outcome.warehouse) : undefined;
  for (const key of WAREHOUSE_KEYS) next.set(METRICS[key].name, wh?.get(METRICS[key].name) ?? prev(METRICS[key]));
  if (outcome.exitCode === 0) {
    // The job records its success in etl.runs after this file is written (docs/contracts.md "Metrics").
    const later = (f: Family): void => {
      const v = next.get(f.name)?.[0]?.value;
      next.set(f.name, [{ labels: {}, value: v === undefined ? end : Math.max(v, end) }]);
    };
    later(METRICS.lastSuccessfulRun);
    if (outcome.command === 'run' || outcome.command === 'extract') later(METRICS.lastSuccessfulExtract);
  }
  // The age when the file is written, from the stored times (kept ones included).
  const polls = next.get(METRICS.streamLastPoll.name) ?? [];
  next.set(
    METRICS.cursorAge.name,
    polls.length ? [{ labels: {}, value: Math.max(0, Math.round(end - Math.min(...polls.map((s) => s.value)))) }] : [],
  );
  return next;
}

/** The Prometheus text of `series` (families without a sample are left out). */
export async function renderSeries(series: Series): Promise<string> {
  const registry = new Registry();
  for (const f of Object.values(METRICS) as Family[]) {
    const samples = series.get(f.name) ?? [];
    if (samples.length === 0) continue;
    const opts = { name: f.name, help: f.help, labelNames: [...f.labels], registers: [registry] };
    if (f.kind === 'counter') {
      const c = new Counter(opts);
      for (const s of samples) c.inc(pick(s.labels, f.labels), Math.max(0, s.value));
    } else {
      const g = new Gauge(opts);
      for (const s of samples) g.set(pick(s.labels, f.labels), s.value);
    }
  }
  return registry.metrics();
}

function pick(labels: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, labels[n] ?? '']));
}

/** The metrics text after `outcome`, from the previous file's series. */
export async function renderMetrics(previous: Series, outcome: CommandOutcome): Promise<string> {
  return renderSeries(nextSeries(previous, outcome));
}

/**
 * The previous file's text: opened without following a link and without blocking, read only
 * when it is a regular file of at most {@link MAX_PREVIOUS_BYTES}. Not `readInputFile`
 * (src/fs/inputFile.ts): that one follows links (a Kubernetes secret is one), stats the path
 * before opening it, and refuses with a ConfigError (exit 2) naming an option, where a missing
 * or unreadable previous file here is normal or only a warning, and the file is replaced.
 * @throws a `NodeJS.ErrnoException`, or an Error saying why the file is not read
 */
function readPrevious(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    const kind = specialKind(st);
    if (kind) throw new Error(`it is ${kind}`);
    if (st.size > MAX_PREVIOUS_BYTES) throw new Error(`it is over ${MAX_PREVIOUS_BYTES} bytes`);
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The metrics file cannot be written: `path` is a special file, or the write failed. */
export class MetricsFileError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot write the metrics file ${path}: ${reason}`, options);
  }
}

/**
 * Rewrite the metrics file at `path` with `outcome`, keeping the other commands' series.
 *
 * @param modes `--metrics-file-mode` and its folder mode
 * @param warn told why the previous file was not read back (it is then replaced)
 * @param base the series to start from instead of the file's: what an earlier write of the
 *   same invocation returned, so that a second write (a run that failed after it wrote exit 0)
 *   replaces the first one's outcome instead of adding to it
 * @returns the series the new file was computed from (pass it as `base` to a second write)
 * @throws {MetricsFileError} `path` is not a regular file, or the file cannot be written (the
 *   error's code, e.g. EACCES or EROFS, in its reason)
 */
export async function writeMetricsFile(
  path: string,
  outcome: CommandOutcome,
  modes: ReaderModes,
  warn: (why: string) => void = () => undefined,
  base?: Series,
): Promise<Series> {
  const problem = metricsPathProblem(path);
  if (problem) throw new MetricsFileError(path, `it is ${problem}`);
  const previous = base ?? readPreviousSeries(path, warn);
  const body = await renderMetrics(previous, outcome);
  try {
    writeReaderFile(path, body, modes);
  } catch (err) {
    throw new MetricsFileError(path, (err as NodeJS.ErrnoException).code ?? (err as Error).message, { cause: err });
  }
  return previous;
}

/** The series of the file at `path`; none when it is missing, unreadable (`warn` says why) or not the text format. */
function readPreviousSeries(path: string, warn: (why: string) => void): Series {
  let previous: Series = new Map();
  let text: string | undefined;
  try {
    text = readPrevious(path);
  } catch (err) {
    warn(`cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (text !== undefined) {
    try {
      previous = readSeries(text);
    } catch (err) {
      warn(`it is not the Prometheus text format (${(err as Error).message.split('\n')[0]})`);
    }
  }
  return previous;
}
