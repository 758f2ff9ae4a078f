/**
 * The metrics file (docs/contracts.md "Metrics"): after every pipeline command, success or
 * failure, `--metrics-file PATH` is rewritten in the Prometheus text format for
 * node_exporter's textfile collector, atomically (a temporary file in the same folder,
 * renamed) and with `--file-mode`.
 *
 * One file serves every command, and each invocation knows only its own outcome, so the
 * series of the other commands are read back from the previous file (parsed with
 * `parse-prometheus-text-format`) and written again unchanged. The file is its own state:
 * no warehouse read, so a run refused on the lock (exit 5) or on its options (exit 2) is
 * recorded like any other. A deleted file starts again empty (a counter reset, which
 * Prometheus' `rate()` and `increase()` expect); an unreadable one too, with a warning.
 * The format is written by `prom-client`, from a Registry of its own (never the global one).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Counter, Gauge, Registry } from 'prom-client';
import { readerModes, writeReaderFile, type ReaderModes } from '../fs/readerFiles.js';

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
}

/** The series, by name, with their help text (Prometheus naming: units in the name, `_total` counters). */
export const METRICS = {
  lastRun: ['recruit_etl_last_run_timestamp_seconds', 'Unix time the last run of the command ended, whatever its outcome'],
  lastSuccess: ['recruit_etl_last_success_timestamp_seconds', 'Unix time the last successful run (exit 0) of the command ended'],
  duration: ['recruit_etl_last_run_duration_seconds', 'Duration of the last run of the command, seconds'],
  exitCode: ['recruit_etl_last_exit_code', 'Exit code of the last run of the command (0 done; docs/contracts.md "Exit codes")'],
  events: ['recruit_etl_events_loaded_total', 'Events the command committed to raw.events, summed over the runs this file has seen'],
} as const satisfies Record<string, readonly [string, string]>;

type Previous = Map<string, Map<string, number>>;

/**
 * The values of our series in `text`, by metric name and then by `command` label.
 * @throws when `text` is not the Prometheus text format
 */
export function readSeries(text: string): Previous {
  const wanted = new Set<string>(Object.values(METRICS).map(([name]) => name));
  const out: Previous = new Map();
  for (const family of parsePrometheusTextFormat(text)) {
    if (!wanted.has(family.name)) continue;
    const byCommand = new Map<string, number>();
    for (const sample of family.metrics) {
      const command = sample.labels?.['command'];
      const value = Number(sample.value);
      if (command !== undefined && Number.isFinite(value)) byCommand.set(command, value);
    }
    out.set(family.name, byCommand);
  }
  return out;
}

/**
 * The metrics text after `outcome`: the previous values of every command, this command's
 * replaced (its last success kept when this run failed; its events added to the counter).
 */
export async function renderMetrics(previous: Previous, outcome: CommandOutcome): Promise<string> {
  const registry = new Registry();
  const gauge = ([name, help]: readonly [string, string]) => new Gauge({ name, help, labelNames: ['command'] as const, registers: [registry] });
  const lastRun = gauge(METRICS.lastRun);
  const lastSuccess = gauge(METRICS.lastSuccess);
  const duration = gauge(METRICS.duration);
  const exitCode = gauge(METRICS.exitCode);
  const events = new Counter({ name: METRICS.events[0], help: METRICS.events[1], labelNames: ['command'] as const, registers: [registry] });
  const gauges = [
    [lastRun, METRICS.lastRun[0]],
    [lastSuccess, METRICS.lastSuccess[0]],
    [duration, METRICS.duration[0]],
    [exitCode, METRICS.exitCode[0]],
  ] as const;
  for (const [metric, name] of gauges) for (const [command, value] of previous.get(name) ?? []) metric.set({ command }, value);
  for (const [command, value] of previous.get(METRICS.events[0]) ?? []) events.inc({ command }, Math.max(0, value));

  const labels = { command: outcome.command };
  const end = outcome.finishedAt.getTime() / 1000;
  lastRun.set(labels, end);
  if (outcome.exitCode === 0) lastSuccess.set(labels, end);
  duration.set(labels, Math.max(0, (outcome.finishedAt.getTime() - outcome.startedAt.getTime()) / 1000));
  exitCode.set(labels, outcome.exitCode);
  events.inc(labels, Math.max(0, outcome.eventsLoaded)); // creates the series at 0 too
  return registry.metrics();
}

/**
 * Rewrite the metrics file at `path` with `outcome`, keeping the other commands' series.
 *
 * @param warn told why the previous file was not read back (it is then replaced)
 * @throws a `NodeJS.ErrnoException` when the file cannot be written
 */
export async function writeMetricsFile(path: string, outcome: CommandOutcome, modes: ReaderModes = readerModes(), warn: (why: string) => void = () => undefined): Promise<void> {
  let previous: Previous = new Map();
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') warn(`cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text !== undefined) {
    try {
      previous = readSeries(text);
    } catch (err) {
      warn(`it is not the Prometheus text format (${(err as Error).message.split('\n')[0]})`);
    }
  }
  writeReaderFile(path, await renderMetrics(previous, outcome), modes);
}
