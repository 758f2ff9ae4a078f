/**
 * The job's model runner: loads `sql/seeds`, compiles every `sql/models/**.sql` (the same
 * files dbt runs), orders them by their refs and builds them in schema `main`, all in one
 * transaction: a failed transform leaves the previous models and seeds intact.
 *
 * @module
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ConfigError, TransformError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { MACROS_DIR, MODELS_DIR, SEEDS_DIR } from '../paths.js';
import type { Warehouse } from '../warehouse/Warehouse.js';
import { type CompiledModel, compileModel, loadMacros, quoteIdent } from './compileModel.js';
import { orderModels } from './orderModels.js';
import { loadSeedSpecs, seedSql } from './seeds.js';

/** Options of {@link runTransform}. */
export interface TransformOptions {
  /** Folder of the model files (searched recursively). Default: `sql/models` of the package. */
  modelsDir?: string;
  /** Folder of the seed CSV files and `_seeds.yml`. Default: `sql/seeds` of the package. */
  seedsDir?: string;
  logger?: Logger;
  /**
   * Build only these models (in dependency order); the models they read must already exist.
   * Seeds are always loaded. Default: every model.
   */
  only?: string[];
  /** Target schema of seeds and models. Default `main` (docs/models.md). */
  schema?: string;
  /**
   * The operator's CSV of event site names (`--site-names`), loaded as `seed_site_names` in
   * place of the packaged, header-only file (docs/models.md "Site names").
   */
  siteNames?: string;
}

/** One model or seed built. */
export interface BuiltRelation {
  name: string;
  /** Rows in the built table or view. */
  rows: number;
  /** Build time in milliseconds (row count excluded). */
  ms: number;
}

/** One data-quality check of `dq_summary`. */
export interface DqCount {
  check: string;
  count: number;
}

/** What {@link runTransform} built. */
export interface TransformResult {
  seeds: BuiltRelation[];
  /** Models in build order. */
  models: (BuiltRelation & { materialized: 'table' | 'view' })[];
  /** Rows of `dq_summary` when that model exists and was built; otherwise empty. */
  dq: DqCount[];
  /** Total time in milliseconds. */
  ms: number;
}

/** Every `.sql` file under `dir`, recursively, sorted by path. */
export function listModelFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d).sort()) {
      const p = join(d, entry);
      if (statSync(p).isDirectory()) walk(p);
      else if (entry.endsWith('.sql')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/**
 * Compile every model of `dir`.
 * @throws {TransformError} on a compile error or two files with one name
 */
export function compileModels(dir: string, schema = 'main', macrosDir: string = MACROS_DIR): CompiledModel[] {
  const macros = loadMacros(macrosDir);
  const seen = new Map<string, string>();
  return listModelFiles(dir).map((file) => {
    const name = basename(file, '.sql');
    const prior = seen.get(name);
    if (prior) throw new TransformError(`two model files are named ${name}: ${prior} and ${relative(dir, file)}`);
    seen.set(name, relative(dir, file));
    return compileModel(name, readFileSync(file, 'utf8'), schema, macros);
  });
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const line = msg.split('\n')[0] ?? msg;
  return line.length > 800 ? `${line.slice(0, 800)}…` : line;
}

/**
 * Load the seeds and build the models.
 *
 * @param wh an open, migrated, writable warehouse
 * @returns seeds and models built (rows, ms) and the dq counts
 * @throws {TransformError} a model or seed failed (named, with DuckDB's message), a cycle,
 *   an unknown ref or unsupported Jinja; nothing of this transform is then committed
 * @throws {ConfigError} the `siteNames` file cannot be read or loaded, or lacks a column (nothing committed)
 */
export async function runTransform(wh: Warehouse, options: TransformOptions = {}): Promise<TransformResult> {
  const started = performance.now();
  const logger = (options.logger ?? silentLogger()).child({ stage: 'transform' });
  const schema = options.schema ?? 'main';
  const seedSpecs = loadSeedSpecs(
    options.seedsDir ?? SEEDS_DIR,
    options.siteNames === undefined ? [] : [{ seed: 'seed_site_names', path: options.siteNames, option: '--site-names' }],
  );
  const compiled = compileModels(options.modelsDir ?? MODELS_DIR, schema);
  let ordered = orderModels(compiled, seedSpecs.map((s) => s.name));
  if (options.only) {
    const known = new Set(compiled.map((m) => m.name));
    const unknown = options.only.filter((n) => !known.has(n));
    if (unknown.length > 0) throw new TransformError(`no such model: ${unknown.join(', ')}`);
    const wanted = new Set(options.only);
    ordered = ordered.filter((m) => wanted.has(m.name));
  }

  // Models are sets: no model promises a row order (readers sort), so DuckDB need not keep
  // the insertion order in its CREATE TABLE AS; that spares memory and a merge in parallel
  // writes. The session's own setting is restored afterwards (a `run` goes on to export).
  const preserveOrder = await wh.one<{ v: boolean | string }>(`select current_setting('preserve_insertion_order') as v`);
  await wh.run('set preserve_insertion_order = false');
  const restoreSettings = async (): Promise<void> => {
    // Best effort: a failure here must not hide the transform's own error.
    await wh
      .run(`set preserve_insertion_order = ${String(preserveOrder?.v ?? true) === 'false' ? 'false' : 'true'}`)
      .catch(() => undefined);
  };

  const result = await wh.transaction(async () => {
    await wh.run(`create schema if not exists ${quoteIdent(schema)}`);
    const existing = new Map(
      (
        await wh.all<{ name: string; kind: string }>(
          `select table_name as name, table_type as kind from information_schema.tables where table_schema = ?`,
          [schema],
        )
      ).map((r) => [r.name, r.kind === 'VIEW' ? 'view' : 'table'] as const),
    );
    const count = async (name: string): Promise<number> => {
      const rows = await wh.all<{ n: bigint | number }>(`select count(*) as n from ${quoteIdent(schema)}.${quoteIdent(name)}`);
      return Number(rows[0]?.n ?? 0);
    };
    // Replacing a view by a table (or back) needs a drop: DuckDB refuses to change the kind.
    const dropOtherKind = async (name: string, kind: 'table' | 'view'): Promise<void> => {
      const had = existing.get(name);
      if (had && had !== kind) await wh.run(`drop ${had} ${quoteIdent(schema)}.${quoteIdent(name)} cascade`);
      existing.set(name, kind);
    };

    const seeds: BuiltRelation[] = [];
    for (const spec of seedSpecs) {
      const t0 = performance.now();
      try {
        await dropOtherKind(spec.name, 'table');
        await wh.run(seedSql(spec, schema));
      } catch (err) {
        if (spec.override) {
          // The operator's file: theirs to fix (exit 2), not a bug of the models.
          throw new ConfigError(`${spec.override.option} ${spec.path}: cannot be loaded as ${spec.name}: ${firstLine(err)}`, { cause: err });
        }
        throw new TransformError(`seed ${spec.name} failed to load: ${firstLine(err)}`, { cause: err });
      }
      const ms = Math.round(performance.now() - t0);
      const rows = await count(spec.name);
      seeds.push({ name: spec.name, rows, ms });
      logger.debug({ seed: spec.name, rows, ms }, 'seed loaded');
    }

    const models: TransformResult['models'] = [];
    for (const model of ordered) {
      const t0 = performance.now();
      let rows: number;
      try {
        await dropOtherKind(model.name, model.materialized);
        await wh.run(
          `create or replace ${model.materialized} ${quoteIdent(schema)}.${quoteIdent(model.name)} as\n${model.sql}\n`,
        );
        rows = await count(model.name);
      } catch (err) {
        if (err instanceof TransformError) throw err;
        throw new TransformError(`model ${model.name} failed to build: ${firstLine(err)}`, {
          cause: err,
          hint: 'fix the model (sql/models) or the seed it reads; the previous models are kept',
        });
      }
      const ms = Math.round(performance.now() - t0);
      models.push({ name: model.name, rows, ms, materialized: model.materialized });
      logger.debug({ model: model.name, rows, ms }, 'model built');
    }

    let dq: DqCount[] = [];
    if (ordered.some((m) => m.name === 'dq_summary')) {
      const rows = await wh.all<{ check_name: string; issue_count: bigint | number }>(
        `select check_name, issue_count from ${quoteIdent(schema)}.dq_summary order by check_name`,
      );
      dq = rows.map((r) => ({ check: r.check_name, count: Number(r.issue_count) }));
    }
    return { seeds, models, dq };
  }).finally(restoreSettings);

  const ms = Math.round(performance.now() - started);
  logger.info(
    { seeds: result.seeds.length, models: result.models.length, ms, dq: Object.fromEntries(result.dq.map((d) => [d.check, d.count])) },
    'transform done',
  );
  return { ...result, ms };
}
