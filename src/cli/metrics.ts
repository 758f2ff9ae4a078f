/**
 * The CLI's side of the metrics file (docs/contracts.md "Metrics"): {@link writeMetrics}
 * rewrites `--metrics-file` with the command's outcome. A pipeline job calls it with exit 0
 * before it records its success in `etl.runs` (so that a file that cannot be written fails
 * the run, exit 7); the CLI calls it again when the command ends with another code.
 *
 * @module
 */
import { WarehouseError } from '../errors.js';
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
  // Loaded only when asked for: prom-client is not needed on the CLI's other paths.
  const { writeMetricsFile, DEFAULT_METRICS_FILE_MODE } = await import('../metrics/metricsFile.js');
  const warn = (why: string): void => {
    const msg = `the previous metrics file is replaced: ${why}`;
    if (ctx.logger) ctx.logger.warn({ metricsFile: m.path }, msg);
    else ctx.stderr.write(`recruit-etl: warning: ${msg}: ${m.path}\n`);
  };
  try {
    await writeMetricsFile(
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
    );
    m.writtenExitCode = exitCode;
  } catch (err) {
    throw new WarehouseError((err as Error).message, {
      cause: err,
      hint: "the metrics file's folder must exist and be writable by the job (systemd: list it in ReadWritePaths=); the run is recorded failed",
    });
  }
}
