/**
 * The CLI's side of the metrics file (docs/contracts.md "Metrics"): {@link writeMetrics}
 * rewrites `--metrics-file` with the command's outcome. A pipeline job calls it with exit 0
 * before it records its success in `etl.runs` (so that a file that cannot be written fails
 * the run, exit 7); the CLI calls it again when the command ends with another code.
 *
 * @module
 */
import { WarehouseError } from '../errors.js';
import { describeFailure } from './exit.js';
import { readerModes } from '../fs/readerFiles.js';
import type { CliContext } from './context.js';

/**
 * Rewrite `--metrics-file` (when given) with `exitCode`; nothing when this invocation
 * already wrote it with that code.
 *
 * @throws {WarehouseError} (exit 7) the file cannot be written: its path is not a regular
 *   file, or the folder is missing, read-only (systemd's `ProtectSystem=strict` without
 *   `ReadWritePaths=`) or not writable by the job
 */
export async function writeMetrics(ctx: CliContext, exitCode: number): Promise<void> {
  const m = ctx.metrics;
  if (m === undefined || m.writtenExitCode === exitCode) return;
  if (exitCode === 5 && m.warehouse === undefined) {
    // Refused on the warehouse's lock: the process that holds it writes its own outcome, which
    // this one must not replace with its exit 5 (docs/contracts.md "Metrics").
    ctx.logger?.info({ metricsFile: m.path }, 'the metrics file is left to the process that holds the warehouse');
    return;
  }
  // Loaded only when asked for: prom-client is not needed on the CLI's other paths.
  const { writeMetricsFile, DEFAULT_METRICS_FILE_MODE } = await import('../metrics/metricsFile.js');
  const warn = (why: string): void => {
    const msg = `the previous metrics file is replaced: ${why}`;
    if (ctx.logger) ctx.logger.warn({ metricsFile: m.path }, msg);
    else ctx.stderr.write(`recruit-etl: warning: ${msg}: ${m.path}\n`);
  };
  try {
    m.base = await writeMetricsFile(
      m.path,
      {
        command: m.command,
        exitCode,
        startedAt: m.startedAt,
        finishedAt: new Date(),
        eventsLoaded: m.eventsLoaded,
        ...(m.stageSeconds ? { stageSeconds: m.stageSeconds } : {}),
        ...(m.warehouse ? { warehouse: m.warehouse } : {}),
      },
      readerModes(m.fileMode ?? DEFAULT_METRICS_FILE_MODE),
      warn,
      m.base,
    );
    m.writtenExitCode = exitCode;
  } catch (err) {
    throw new WarehouseError((err as Error).message, {
      cause: err,
      hint: "the metrics file's folder must exist and be writable by the job (systemd: list it in ReadWritePaths=); the run is recorded failed",
    });
  }
}

/**
 * The CLI's last step: {@link writeMetrics} with the command's `exitCode`, reporting a file
 * that cannot be written. The command's own failure stands (the write failure is logged, or
 * a warning on stderr without a logger); a success becomes exit 7 with the failure on stderr
 * (docs/contracts.md "Metrics").
 *
 * @returns the exit code of the invocation
 */
export async function writeFinalMetrics(ctx: CliContext, exitCode: number): Promise<number> {
  try {
    await writeMetrics(ctx, exitCode);
    return exitCode;
  } catch (err) {
    ctx.logger?.error({ metricsFile: ctx.metrics?.path, exitCode }, (err as Error).message);
    if (exitCode === 0) {
      const described = describeFailure(err, ctx.verbose, ctx.secrets);
      ctx.stderr.write(`${described.text}\n`);
      return described.exitCode;
    }
    if (!ctx.logger) ctx.stderr.write(`recruit-etl: warning: ${(err as Error).message}\n`);
    return exitCode;
  }
}
