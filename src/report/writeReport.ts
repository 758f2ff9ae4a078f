/**
 * The report stage: read the marts, render the page, write `<export-dir>/report.html`
 * atomically (a temporary file in the same folder, fsynced, renamed: a reader sees the old
 * report or the new one, never a part) with the readers' file mode (docs/report.md).
 *
 * @module
 */
import { join, resolve } from 'node:path';
import { isEtlError, ReportError } from '../errors.js';
import { readerModes, writeReaderFile, type ReaderModes } from '../fs/readerFiles.js';
import { silentLogger, type Logger } from '../log/logger.js';
import type { StageProgress } from '../log/progress.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { readReportData } from './reportData.js';
import { renderReport } from './renderReport.js';

/** The report's file name in the export folder. */
export const REPORT_FILE = 'report.html';

/** Options of {@link writeReport}. */
export interface ReportOptions {
  wh: Warehouse;
  /** `--export-dir`: the report is `<exportDir>/report.html`. */
  exportDir: string;
  /** `--report-worklist-rows`: open referrals listed per site. */
  worklistRows: number;
  runId?: string;
  logger?: Logger;
  progress?: StageProgress;
  /** `--file-mode` and its folder mode (src/fs/readerFiles.ts); default 0600 / 0700. */
  modes?: ReaderModes;
  now?: () => Date;
}

/** What {@link writeReport} wrote. */
export interface ReportResult {
  path: string;
  bytes: number;
  trials: number;
  /** Wall time of reading the marts and of rendering, ms. */
  readMs: number;
  renderMs: number;
}

/**
 * Write the report.
 *
 * @throws {ReportError} a model the report reads is missing, or the file cannot be written (exit 7)
 * @throws {WarehouseError} a query failed (exit 7)
 */
export async function writeReport(opts: ReportOptions): Promise<ReportResult> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'report' });
  const path = join(resolve(opts.exportDir), REPORT_FILE);
  const t0 = Date.now();
  const data = await readReportData(opts.wh, opts.worklistRows);
  const t1 = Date.now();
  opts.progress?.update({ done: 0, total: data.trials.length });
  const page = await renderReport(data, {
    generatedAt: (opts.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(opts.runId ? { runId: opts.runId } : {}),
  });
  const t2 = Date.now();
  const bytes = Buffer.byteLength(page, 'utf8');
  try {
    writeReaderFile(path, page, opts.modes ?? readerModes());
  } catch (err) {
    if (isEtlError(err)) throw err;
    throw new ReportError(`cannot write the report ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    });
  }
  opts.progress?.update({ done: data.trials.length, total: data.trials.length });
  const result = { path, bytes, trials: data.trials.length, readMs: t1 - t0, renderMs: t2 - t1 };
  logger.info({ path, bytes, trials: result.trials, readMs: result.readMs, renderMs: result.renderMs }, 'report written');
  return result;
}
