/**
 * The one place that owns progress (docs/contracts.md "Progress and the run summary").
 * The stages report their counts to a {@link StageProgress}; this module decides what a
 * person or a scheduler sees of them:
 *
 * - a log line (`msg: "<stage> progress"`, level info) every `--progress-interval` seconds
 *   (default 10) while a stage runs, whether or not its counts moved (a stalled upstream is
 *   visible as a line whose counts do not change);
 * - on a terminal (the stream given as `terminal`, stderr when it is a TTY), a live display
 *   drawn by `cli-progress`, removed when the stage ends; nothing of it when stderr is not a
 *   terminal (cron, systemd, Kubernetes, tests);
 * - the run summary ({@link RunSummary}): one JSON log line (`msg: "run summary"`), and on a
 *   terminal a readable block on stderr as well ({@link formatSummary}).
 *
 * Updates are cheap (numbers stored, the display redrawn at most 5 times a second by
 * cli-progress); the timer is unref'd and stops with the stage.
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Logger } from 'pino';

/** A stage that reports progress, in pipeline order. */
export type ProgressStage = 'extract' | 'sites' | 'transform' | 'export' | 'report' | 'publish';

/** Default seconds between two progress lines while a stage runs. */
export const DEFAULT_PROGRESS_INTERVAL_SECONDS = 10;

/** Counts a stage reports; each stage sets the ones it has. */
export interface StageCounts {
  /** extract: pages fetched so far. */
  pages?: number;
  /** extract: events fetched so far in this run (committed with their batch; see `position`). */
  events?: number;
  /** extract: the stream position committed (rows on the stream). */
  position?: number;
  /** transform, export, sites, report, publish: items done so far (models built, files written, sites stored, trials rendered, events published). */
  done?: number;
  /** transform, export, report: items this stage will do in all. */
  total?: number;
}

/** A writable terminal (stderr on a TTY; tests pass a fake one). */
export type Terminal = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/** Options of {@link Progress}. */
export interface ProgressOptions {
  /** Where the progress lines and the summary line go (level info). */
  logger: Logger;
  /** Seconds between two progress lines (default {@link DEFAULT_PROGRESS_INTERVAL_SECONDS}). */
  intervalSeconds?: number;
  /** The terminal for the live display and the readable summary; none when absent or not a TTY. */
  terminal?: Terminal;
  /** Clock in ms (tests). */
  now?: () => number;
  /**
   * Log the summary as a line (default true). The CLI turns it off when both stdout and
   * stderr are terminals: a person reads the block on stderr, and the pretty log would
   * repeat it as a long object.
   */
  summaryLine?: boolean;
}

/** What a stage counted, as the summary and `etl.runs.stages` record it (docs/contracts.md "etl.runs"). */
export interface StageSummary {
  /** Wall time of the stage, ms. */
  durationMs: number;
  /** True when the stage ended by a failure or an interruption. */
  failed?: boolean;
  [count: string]: number | string | boolean | undefined;
}

/** The summary printed at the end of every pipeline command (docs/contracts.md "Progress and the run summary"). */
export interface RunSummary {
  runId: string;
  command: string;
  /** `succeeded`, `failed` or `interrupted`. */
  status: string;
  durationMs: number;
  /** One entry per stage that started, in pipeline order. */
  stages: Partial<Record<ProgressStage, StageSummary>>;
  /** Events quarantined by this run's extract. */
  quarantined: number;
  /** `dq_summary`: issue count per check, from this run's transform, else from the last one built (null: no models yet). */
  dq: Record<string, number> | null;
  /** Where `dq` comes from: `this run` or `last transform`. */
  dqSource: 'this run' | 'last transform' | null;
  /** Seconds since the active stream's cursor was last stored (null: no stream yet). */
  cursorAgeSeconds: number | null;
  /** The one-line error, when the run did not succeed. */
  error?: string;
}

/** Reports of one running stage (see {@link Progress.start}). */
export interface StageProgress {
  /** Record the stage's counts so far (fields absent keep their value). */
  update(counts: StageCounts): void;
  /** The stage ended (success or not): stop the timer and remove the live display. */
  end(): void;
}

/** A {@link StageProgress} that reports nothing (library default). */
export const NO_PROGRESS: StageProgress = Object.freeze({ update: () => undefined, end: () => undefined });

const UNITS: Record<ProgressStage, string> = {
  extract: 'events',
  sites: 'sites',
  transform: 'models',
  export: 'files',
  report: 'trials',
  publish: 'events',
};

/** Owner of the progress of one command. */
export class Progress {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly terminal: Terminal | undefined;

  constructor(private readonly options: ProgressOptions) {
    this.intervalMs = Math.max(0.05, options.intervalSeconds ?? DEFAULT_PROGRESS_INTERVAL_SECONDS) * 1000;
    this.now = options.now ?? Date.now;
    this.terminal = options.terminal?.isTTY === true ? options.terminal : undefined;
  }

  /** Whether the live display is on (a terminal was given and it is a TTY). */
  get live(): boolean {
    return this.terminal !== undefined;
  }

  /** Start reporting `stage`; call `end()` on the result when it ends. */
  start(stage: ProgressStage): StageProgress {
    const logger = this.options.logger;
    const started = this.now();
    const counts: StageCounts = {};
    const line = (): Record<string, unknown> => {
      const elapsedMs = this.now() - started;
      if (stage === 'extract') {
        const events = counts.events ?? 0;
        return {
          stage,
          pages: counts.pages ?? 0,
          events,
          eventsPerSecond: elapsedMs > 0 ? Math.round((events * 1000) / elapsedMs) : 0,
          position: counts.position ?? null,
          elapsedMs,
        };
      }
      const unit = UNITS[stage];
      return { stage, [unit]: counts.done ?? 0, ...(counts.total !== undefined ? { total: counts.total } : {}), elapsedMs };
    };
    const timer = setInterval(() => logger.info(line(), `${stage} progress`), this.intervalMs);
    timer.unref();
    const bar = this.terminal ? this.bar(stage) : undefined;
    let drawn = false;
    let ended = false;
    return {
      update: (c) => {
        Object.assign(counts, c);
        if (bar && !ended) {
          // Drawn from the first update, when a stage with a total knows it.
          if (!drawn) bar.start(counts.total ?? 0, 0, payload(stage, counts, 0));
          drawn = true;
          if (counts.total !== undefined) bar.setTotal(counts.total);
          const s = (this.now() - started) / 1000;
          bar.update(stage === 'extract' ? (counts.events ?? 0) : (counts.done ?? 0), payload(stage, counts, s));
        }
      },
      end: () => {
        if (ended) return;
        ended = true;
        clearInterval(timer);
        if (drawn) bar?.stop();
      },
    };
  }

  /** Report the run summary: one JSON log line, and on a terminal a readable block. */
  summary(s: RunSummary): void {
    if (this.options.summaryLine !== false || !this.terminal) this.options.logger.info({ summary: s }, 'run summary');
    this.terminal?.write(formatSummary(s));
  }

  private bar(stage: ProgressStage): cliProgress.SingleBar {
    const format =
      stage === 'extract'
        ? 'extract   {events} events, {pages} pages, {rate} events/s, position {position} | {duration_formatted}'
        : `${stage.padEnd(9)} [{bar}] {value}/{total} ${UNITS[stage]} | {duration_formatted}`;
    return new cliProgress.SingleBar({
      stream: this.terminal!,
      format,
      fps: 5,
      barsize: 30,
      hideCursor: true,
      clearOnComplete: true,
      noTTYOutput: false,
      etaBuffer: 50,
    });
  }
}

function payload(stage: ProgressStage, c: StageCounts, seconds: number): Record<string, string | number> {
  if (stage !== 'extract') return {};
  const events = c.events ?? 0;
  return {
    events: events.toLocaleString('en-US'),
    pages: (c.pages ?? 0).toLocaleString('en-US'),
    rate: seconds > 0 ? Math.round(events / seconds).toLocaleString('en-US') : '0',
    position: c.position === undefined ? '-' : c.position.toLocaleString('en-US'),
  };
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}

/** Age in seconds as a person reads it: `45s`, `12m`, `5h`, `3d`, or `never`. */
export function formatAge(s: number | null): string {
  if (s === null) return 'never';
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

/** The run summary as a readable block (terminals). */
export function formatSummary(s: RunSummary): string {
  const out = [`recruit-etl ${s.command} ${s.status} in ${seconds(s.durationMs)} (run ${s.runId})`];
  for (const [stage, st] of Object.entries(s.stages) as [ProgressStage, StageSummary][]) {
    const { durationMs, failed, ...rest } = st;
    const counts = Object.entries(rest)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k} ${typeof v === 'number' ? v.toLocaleString('en-US') : String(v)}`)
      .join(', ');
    out.push(`  ${stage.padEnd(9)} ${seconds(durationMs).padStart(6)}${failed ? '  FAILED' : ''}${counts ? `  ${counts}` : ''}`);
  }
  out.push(`  quarantined events: ${s.quarantined}`);
  if (s.dq) {
    const found = Object.entries(s.dq).filter(([, n]) => n > 0);
    out.push(`  data quality (${s.dqSource}): ${found.length === 0 ? 'no findings' : found.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  }
  out.push(`  cursor age: ${formatAge(s.cursorAgeSeconds)}`);
  if (s.error) out.push(`  error: ${s.error}`);
  return `${out.join('\n')}\n`;
}
