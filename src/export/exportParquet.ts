/**
 * The export stage: every mart and dimension (`fct_*`, `dim_*`, `mart_*` tables in schema
 * `main`) as `<export-dir>/<model>.parquet`, plus `manifest.json` (DESIGN.md "Exports").
 *
 * Atomic per file (DESIGN.md guarantee 8): each file is written under a temporary name in
 * the same folder, read back and checked, then renamed over the old one; the manifest is
 * renamed into place last. A process killed mid-export leaves only `.*.tmp` files, which
 * the next export removes (RELIABILITY.md "Files").
 *
 * @module
 */
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ExportError, isEtlError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { sqlString, type Warehouse } from '../warehouse/Warehouse.js';
import { failpoint } from '../failpoints.js';

/** Name prefixes of the models that are exported. */
export const EXPORTED_PREFIXES: readonly string[] = ['fct_', 'dim_', 'mart_'];

/** One exported file in `manifest.json`. */
export interface ManifestEntry {
  model: string;
  file: string;
  rows: number;
  bytes: number;
  columns: { name: string; type: string }[];
}

/** The shape of `manifest.json`. */
export interface Manifest {
  runId: string;
  exportedAt: string;
  files: ManifestEntry[];
}

/** Options of {@link exportParquet}. */
export interface ExportOptions {
  wh: Warehouse;
  exportDir: string;
  runId: string;
  logger?: Logger;
  now?: () => Date;
}

/**
 * Write the exports.
 *
 * @returns the manifest written
 * @throws {ExportError} writing or checking a file failed (exit 7); the previous file stays in place
 */
export async function exportParquet(opts: ExportOptions): Promise<Manifest> {
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'export' });
  const dir = resolve(opts.exportDir);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of readdirSync(dir)) if (f.startsWith('.') && f.endsWith('.tmp')) rmSync(join(dir, f), { force: true });
  } catch (err) {
    throw new ExportError(`cannot prepare the export folder ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  const like = EXPORTED_PREFIXES.map((p) => `table_name like '${p}%'`).join(' or ');
  const tables = await opts.wh.all<{ table_name: string }>(
    `select table_name from information_schema.tables where table_schema = 'main' and (${like}) order by table_name`,
  );
  const files: ManifestEntry[] = [];
  for (const { table_name: model } of tables) {
    const file = `${model}.parquet`;
    const tmp = join(dir, `.${file}.${opts.runId}.tmp`);
    try {
      await opts.wh.run(`copy (select * from main."${model}") to ${sqlString(tmp)} (format parquet, compression zstd, compression_level 1)`);
      const check = await opts.wh.one<{ rows: bigint; expected: bigint }>(
        `select (select count(*) from read_parquet(${sqlString(tmp)})) as rows, (select count(*) from main."${model}") as expected`,
      );
      if (!check || check.rows !== check.expected) {
        throw new ExportError(`export of ${model} read back ${check?.rows ?? '?'} rows, expected ${check?.expected ?? '?'}`);
      }
      const columns = await opts.wh.all<{ column_name: string; column_type: string }>(
        `select column_name, column_type from (describe select * from read_parquet(${sqlString(tmp)}))`,
      );
      chmodSync(tmp, 0o600);
      failpoint('export.mid-file');
      const bytes = statSync(tmp).size;
      renameSync(tmp, join(dir, file));
      files.push({
        model,
        file,
        rows: Number(check.rows),
        bytes,
        columns: columns.map((c) => ({ name: c.column_name, type: c.column_type })),
      });
    } catch (err) {
      rmSync(tmp, { force: true });
      if (isEtlError(err) && err.code === 'E_EXPORT') throw err;
      throw new ExportError(`cannot export ${model} to ${dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  const manifest: Manifest = { runId: opts.runId, exportedAt: (opts.now?.() ?? new Date()).toISOString(), files };
  const tmpManifest = join(dir, `.manifest.json.${opts.runId}.tmp`);
  try {
    writeFileSync(tmpManifest, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmpManifest, join(dir, 'manifest.json'));
  } catch (err) {
    rmSync(tmpManifest, { force: true });
    throw new ExportError(`cannot write ${join(dir, 'manifest.json')}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  logger.info({ files: files.length, dir }, 'exports written');
  return manifest;
}
