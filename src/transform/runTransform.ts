/**
 * The job's model runner: loads `sql/seeds`, compiles every `sql/models/**.sql` (the same
 * files dbt runs), orders them by their refs and builds them in schema `main`, all in one
 * transaction: a failed transform leaves the previous models and seeds intact.
 *
 * Incremental by default (docs/incremental.md): `table` and `view` models are rebuilt whole;
 * `incremental` models replace, by `delete+insert` on their `unique_key`, the rows of the keys
 * that the events loaded since the last transform touched, and the per-stream watermark
 * (`etl.transform_watermarks`) commits in the same transaction. A full rebuild happens on
 * request (`fullRefresh`), on the first transform, when the models or seeds changed, when an
 * incremental model's table is missing, or when a stream's rank in staging's order changed.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ConfigError, TransformError } from '../errors.js';
import { failpoint } from '../failpoints.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { NO_PROGRESS, type StageProgress } from '../log/progress.js';
import { listModelFiles, RETIRED_MODELS } from '../catalog/catalog.js';
import { MACROS_DIR, MODELS_DIR, SEEDS_DIR } from '../paths.js';
import { dataErrorClass, UNORDERED_WRITES, type Warehouse } from '../warehouse/Warehouse.js';
import { type CompiledModel, compileModel, loadMacros, quoteIdent, renderMacro } from './compileModel.js';
import { orderModels } from './orderModels.js';
import { loadSeedSpecs, type SeedSpec, seedSql, validateTrialTargets } from './seeds.js';

/** Options of {@link runTransform}. */
export interface TransformOptions {
  /** Folder of the model files (searched recursively). Default: `sql/models` of the package. */
  modelsDir?: string;
  /** Folder of the seed CSV files and `_seeds.yml`. Default: `sql/seeds` of the package. */
  seedsDir?: string;
  logger?: Logger;
  /** Receives models built of total (src/log/progress.ts). */
  progress?: StageProgress;
  /**
   * Build only these models (in dependency order); the models they read must already exist.
   * Seeds are always loaded. Default: every model.
   */
  only?: string[];
  /** Target schema of seeds and models. Default `main` (docs/models.md). */
  schema?: string;
  /** Rebuild every model from all of raw (`--full-refresh`). Default false: incremental when possible. */
  fullRefresh?: boolean;
  /**
   * The operator's CSV of event site names (`--site-names`), loaded as `seed_site_names` in
   * place of the packaged, header-only file (docs/models.md "Site names").
   */
  siteNames?: string;
  /**
   * The operator's CSV of enrolment targets (`--trial-targets`), validated line by line and
   * loaded as `seed_trial_targets` in place of the packaged, header-only file (docs/models.md
   * "Trial targets").
   */
  trialTargets?: string;
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
  models: (BuiltRelation & { materialized: 'table' | 'view' | 'incremental' })[];
  /** `full`: every model rebuilt from all of raw; `incremental`: incremental models by the delta. */
  mode: 'full' | 'incremental';
  /** Why the mode is `full` (`requested`, `first transform`, `models changed`, …); absent when incremental. */
  fullReason?: string;
  /** Raw deliveries (rows of raw.events) read past the watermark by this transform. */
  newDeliveries: number;
  /** Rows of `dq_summary` when that model exists and was built; otherwise empty. */
  dq: DqCount[];
  /** Total time in milliseconds. */
  ms: number;
}

/** Every `.sql` file under `dir`, recursively, sorted by path (the catalog's list). */
export { listModelFiles };

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
 * Why a model failed, for its {@link TransformError}: DuckDB's first line, unless it is an
 * error about a value of the data, whose message quotes the value (maybe payload): then only
 * the error's class, and no cause for `--verbose` to print (docs/security.md).
 */
function modelFailure(err: unknown): { why: string; cause?: unknown } {
  const line = firstLine(err);
  const data = dataErrorClass(line);
  if (data === undefined) return { why: line, cause: err };
  return { why: `${data} on a value of the data (not quoted: it may be event payload)` };
}

/**
 * Load the seeds and build the models.
 *
 * @param wh an open, migrated, writable warehouse
 * @returns seeds and models built (rows, ms) and the dq counts
 * @throws {TransformError} a model or seed failed (named, with DuckDB's message), a cycle,
 *   an unknown ref or unsupported Jinja; nothing of this transform is then committed
 * @throws {ConfigError} the `siteNames` or `trialTargets` file cannot be read or loaded, or lacks a column,
 *   or a line of `trialTargets` is invalid (nothing committed)
 */
export async function runTransform(wh: Warehouse, options: TransformOptions = {}): Promise<TransformResult> {
  const started = performance.now();
  const logger = (options.logger ?? silentLogger()).child({ stage: 'transform' });
  const plan = planTransform(options);
  const result = await wh.withSettings(UNORDERED_WRITES, () => wh.transaction(() => buildInTransaction(wh, plan, options, logger)));
  const ms = Math.round(performance.now() - started);
  logger.info(
    {
      mode: result.mode,
      newDeliveries: result.newDeliveries,
      seeds: result.seeds.length,
      models: result.models.length,
      ms,
      dq: Object.fromEntries(result.dq.map((d) => [d.check, d.count])),
    },
    'transform done',
  );
  return { ...result, ms };
}

/** What a transform builds, decided from the files before the warehouse is touched. */
interface TransformPlan {
  schema: string;
  seedSpecs: SeedSpec[];
  /** Every model compiled (the digest covers them all). */
  compiled: CompiledModel[];
  /** The models to build, dependencies first (`only` applied). */
  ordered: CompiledModel[];
  modelsHash: string;
}

/**
 * Read the seeds and models of `options` and order what to build.
 * @throws {TransformError} a compile error, a cycle, an unknown ref, or an unknown name in `only`
 * @throws {ConfigError} an operator's seed file that cannot be read
 */
function planTransform(options: TransformOptions): TransformPlan {
  const schema = options.schema ?? 'main';
  const seedSpecs = loadSeedSpecs(options.seedsDir ?? SEEDS_DIR, [
    ...(options.siteNames === undefined ? [] : [{ seed: 'seed_site_names', path: options.siteNames, option: '--site-names' }]),
    ...(options.trialTargets === undefined
      ? []
      : [{ seed: 'seed_trial_targets', path: options.trialTargets, option: '--trial-targets', validate: validateTrialTargets }]),
  ]);
  const compiled = compileModels(options.modelsDir ?? MODELS_DIR, schema);
  let ordered = orderModels(
    compiled,
    seedSpecs.map((s) => s.name),
  );
  if (options.only) {
    const known = new Set(compiled.map((m) => m.name));
    const unknown = options.only.filter((n) => !known.has(n));
    if (unknown.length > 0) throw new TransformError(`no such model: ${unknown.join(', ')}`);
    const wanted = new Set(options.only);
    ordered = ordered.filter((m) => wanted.has(m.name));
  }
  return {
    schema,
    seedSpecs,
    compiled,
    ordered,
    modelsHash: hashModels(
      compiled,
      seedSpecs.map((spec) => spec.path),
    ),
  };
}

/** The warehouse side of one transform: the schema's relations as they are, and how to count and replace them. */
interface BuildContext {
  wh: Warehouse;
  schema: string;
  /** Relations of the schema by name: `table` or `view` (updated as relations are built). */
  existing: Map<string, 'table' | 'view'>;
  logger: Logger;
}

async function buildContext(wh: Warehouse, schema: string, logger: Logger): Promise<BuildContext> {
  await wh.run(`create schema if not exists ${quoteIdent(schema)}`);
  const rows = await wh.all<{ name: string; kind: string }>(
    `select table_name as name, table_type as kind from information_schema.tables where table_schema = ?`,
    [schema],
  );
  return { wh, schema, logger, existing: new Map(rows.map((r) => [r.name, r.kind === 'VIEW' ? 'view' : 'table'] as const)) };
}

async function countRows(ctx: BuildContext, name: string): Promise<number> {
  const rows = await ctx.wh.all<{ n: bigint | number }>(`select count(*) as n from ${quoteIdent(ctx.schema)}.${quoteIdent(name)}`);
  return Number(rows[0]?.n ?? 0);
}

/** Replacing a view by a table (or back) needs a drop: DuckDB refuses to change the kind. */
async function dropOtherKind(ctx: BuildContext, name: string, kind: 'table' | 'view'): Promise<void> {
  const had = ctx.existing.get(name);
  if (had && had !== kind) await ctx.wh.run(`drop ${had} ${quoteIdent(ctx.schema)}.${quoteIdent(name)} cascade`);
  ctx.existing.set(name, kind);
}

/** Drop the {@link RETIRED_MODELS} the schema still holds (with what depends on them), in the transform's transaction. */
async function dropRetired(ctx: BuildContext): Promise<void> {
  const dropped: string[] = [];
  for (const name of RETIRED_MODELS) {
    const kind = ctx.existing.get(name);
    if (kind === undefined) continue;
    await ctx.wh.run(`drop ${kind} ${quoteIdent(ctx.schema)}.${quoteIdent(name)} cascade`);
    ctx.existing.delete(name);
    dropped.push(name);
  }
  if (dropped.length > 0) ctx.logger.info({ dropped }, 'models retired by this build dropped');
}

/** The body of the transform's transaction: mode, seeds, models, watermarks, dq counts. */
async function buildInTransaction(
  wh: Warehouse,
  plan: TransformPlan,
  options: TransformOptions,
  logger: Logger,
): Promise<Omit<TransformResult, 'ms'>> {
  const { schema, ordered, modelsHash } = plan;
  const ctx = await buildContext(wh, schema, logger);
  if (options.only === undefined) await dropRetired(ctx);
  const decided = await decideMode(wh, ordered, ctx.existing, modelsHash, options.fullRefresh === true || options.only !== undefined);
  const mode = decided.mode;
  if (mode === 'full' && options.only === undefined) {
    // Delta models then see every raw row as new.
    await wh.run('delete from etl.transform_watermarks');
  }
  const newDeliveries = await countNewDeliveries(wh);
  logger.info({ mode, ...(decided.reason ? { reason: decided.reason } : {}), newDeliveries }, 'transform mode');
  const seeds: BuiltRelation[] = [];
  for (const spec of plan.seedSpecs) seeds.push(await loadSeed(ctx, spec, mode));
  const models = await buildModels(ctx, ordered, mode, options.progress ?? NO_PROGRESS);
  if (options.only === undefined) await saveWatermarks(wh, schema, ordered, modelsHash, mode);
  failpoint('transform.before-commit');
  const dq = ordered.some((m) => m.name === 'dq_summary') ? await readDq(wh, schema) : [];
  return { seeds, models, dq, mode, newDeliveries, ...(decided.reason ? { fullReason: decided.reason } : {}) };
}

/**
 * Load one seed (kept as it is when incremental: the seed files are part of the models'
 * digest, so unchanged since the table was loaded).
 * @throws {ConfigError} the operator's file cannot be loaded
 * @throws {TransformError} a packaged seed cannot be loaded
 */
async function loadSeed(ctx: BuildContext, spec: SeedSpec, mode: 'full' | 'incremental'): Promise<BuiltRelation> {
  const t0 = performance.now();
  if (mode === 'incremental' && ctx.existing.get(spec.name) === 'table')
    return { name: spec.name, rows: await countRows(ctx, spec.name), ms: 0 };
  try {
    await dropOtherKind(ctx, spec.name, 'table');
    await ctx.wh.run(seedSql(spec, ctx.schema));
  } catch (err) {
    if (spec.override) {
      // The operator's file: theirs to fix (exit 2), not a bug of the models.
      // DuckDB read the job's private copy (src/transform/seeds.ts): name the operator's file.
      const why = firstLine(err).replaceAll(spec.path, spec.override.source);
      throw new ConfigError(`${spec.override.option} ${spec.override.source}: cannot be loaded as ${spec.name}: ${why}`, { cause: err });
    }
    throw new TransformError(`seed ${spec.name} failed to load: ${firstLine(err)}`, { cause: err });
  }
  const ms = Math.round(performance.now() - t0);
  const rows = await countRows(ctx, spec.name);
  ctx.logger.debug({ seed: spec.name, rows, ms }, 'seed loaded');
  return { name: spec.name, rows, ms };
}

/** Build `ordered` in order, reporting progress. */
async function buildModels(
  ctx: BuildContext,
  ordered: readonly CompiledModel[],
  mode: 'full' | 'incremental',
  progress: StageProgress,
): Promise<TransformResult['models']> {
  const models: TransformResult['models'] = [];
  progress.update({ done: 0, total: ordered.length });
  let incrementalDone = 0;
  for (const model of ordered) {
    const t0 = performance.now();
    const rows = await buildModel(ctx, model, mode, () => model.materialized === 'incremental' && ++incrementalDone === 1);
    const ms = Math.round(performance.now() - t0);
    models.push({ name: model.name, rows, ms, materialized: model.materialized });
    ctx.logger.debug({ model: model.name, rows, ms }, 'model built');
    progress.update({ done: models.length });
  }
  return models;
}

/**
 * Build one model: by its delta when incremental in an incremental transform, else whole.
 * `firstIncremental` says whether this is the first incremental model built (a failpoint).
 * @returns its row count
 * @throws {TransformError} the model failed (named; the value of a data error unquoted)
 */
async function buildModel(
  ctx: BuildContext,
  model: CompiledModel,
  mode: 'full' | 'incremental',
  firstIncremental: () => boolean,
): Promise<number> {
  const target = `${quoteIdent(ctx.schema)}.${quoteIdent(model.name)}`;
  try {
    if (model.materialized === 'incremental' && mode === 'incremental') {
      await applyDelta(ctx.wh, target, model, ctx.schema);
    } else {
      const kind = model.materialized === 'view' ? 'view' : 'table';
      await dropOtherKind(ctx, model.name, kind);
      await ctx.wh.run(`create or replace ${kind} ${target} as\n${model.sql}\n`);
    }
    if (firstIncremental()) failpoint('transform.mid-models');
    return await countRows(ctx, model.name);
  } catch (err) {
    if (err instanceof TransformError) throw err;
    const { why, cause } = modelFailure(err);
    throw new TransformError(`model ${model.name} failed to build: ${why}`, {
      ...(cause === undefined ? {} : { cause }),
      hint: 'fix the model (sql/models) or the seed it reads; the previous models are kept',
    });
  }
}

/** The rows of `dq_summary` as just built. */
async function readDq(wh: Warehouse, schema: string): Promise<DqCount[]> {
  const rows = await wh.all<{ check_name: string; issue_count: bigint | number }>(
    `select check_name, issue_count from ${quoteIdent(schema)}.dq_summary order by check_name`,
  );
  return rows.map((r) => ({ check: r.check_name, count: Number(r.issue_count) }));
}

/** The model whose table gives each stream's rank in staging's delivery order (docs/incremental.md). */
const STREAM_RANKS_MODEL = 'int_stream_ranks';

/**
 * A digest of everything the models are built from besides the data: the compiled SQL,
 * materializations and keys of every model, and the seed files. A change forces a full rebuild.
 */
export function hashModels(models: readonly CompiledModel[], seedPaths: readonly string[]): string {
  const h = createHash('sha256');
  for (const m of [...models].sort((a, b) => a.name.localeCompare(b.name))) {
    h.update(JSON.stringify([m.name, m.materialized, m.uniqueKey ?? null, m.sql, m.incrementalSql ?? null]));
  }
  for (const p of [...seedPaths].sort()) h.update(readFileSync(p));
  return h.digest('hex');
}

/**
 * Incremental or full, and why (docs/incremental.md "When the transform rebuilds everything").
 * @throws {WarehouseError}
 */
async function decideMode(
  wh: Warehouse,
  ordered: readonly CompiledModel[],
  existing: ReadonlyMap<string, string>,
  modelsHash: string,
  fullRequested: boolean,
): Promise<{ mode: 'full' | 'incremental'; reason?: string }> {
  if (fullRequested) return { mode: 'full', reason: 'requested' };
  const state = await wh.all<{ models_hash: string }>('select models_hash from etl.transform_state');
  if (state.length === 0) return { mode: 'full', reason: 'first transform' };
  if (state[0]!.models_hash !== modelsHash) return { mode: 'full', reason: 'models or seeds changed' };
  const missing = ordered.find((m) => m.materialized === 'incremental' && existing.get(m.name) !== 'table');
  if (missing) return { mode: 'full', reason: `table ${missing.name} missing` };
  const ranks = ordered.find((m) => m.name === STREAM_RANKS_MODEL);
  if (ranks) {
    const changed = await wh.all<{ stream_id: string }>(
      `select w.stream_id from etl.transform_watermarks w
       left join (${ranks.sql}) r on w.stream_id = r.stream_id
       where r.stream_rank is distinct from w.stream_rank limit 1`,
    );
    if (changed.length > 0) return { mode: 'full', reason: 'the order of streams changed' };
  }
  return { mode: 'incremental' };
}

/** Rows of raw.events past the stored watermark of their stream. */
async function countNewDeliveries(wh: Warehouse): Promise<number> {
  const rows = await wh.all<{ n: bigint | number }>(
    `select count(*) as n from raw.events e
     left join etl.transform_watermarks w on e.stream_id = w.stream_id
     where e.stream_position > coalesce(w.stream_position, 0)`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * `delete+insert` of an incremental model: its incremental SQL gives the rows of the touched
 * keys; the target's rows with those keys are replaced (dbt-duckdb's strategy of that name).
 * A table whose deleted rows outnumber its live ones is first rewritten whole: checkpoints
 * never merge row groups (`MAX_VACUUM_TASKS`), so nothing else reclaims them
 * (docs/incremental.md "Compaction").
 * @throws {WarehouseError}
 */
async function applyDelta(wh: Warehouse, target: string, model: CompiledModel, schema: string): Promise<void> {
  const size = await wh.one<{ stored: bigint | number; live: bigint | number }>(
    `select (select estimated_size from duckdb_tables() where schema_name = ? and table_name = ? and database_name = current_database()) as stored,
            (select count(*) from ${target}) as live`,
    [schema, model.name],
  );
  if (size !== undefined && Number(size.stored) > 2 * Number(size.live))
    await wh.run(`create or replace table ${target} as select * from ${target}`);
  const keys = model.uniqueKey!.map(quoteIdent);
  const delta = quoteIdent(`__delta_${model.name}`);
  const on = keys.map((k) => `${target}.${k} is not distinct from d.${k}`).join(' and ');
  // One round trip: the statements run in order inside the transform's transaction.
  await wh.run(
    `create or replace temp table ${delta} as\n${model.incrementalSql!}\n;\n` +
      `delete from ${target} using (select distinct ${keys.join(', ')} from ${delta}) d where ${on};\n` +
      `insert into ${target} by name select * from ${delta};\n` +
      `drop table ${delta};`,
  );
}

/**
 * The SQL that replaces the watermark with every raw row now read, per stream, with its rank:
 * the macro `transform_watermarks_sql` of sql/macros/transform_watermarks.sql, the same text
 * dbt runs after a build (docs/incremental.md "dbt").
 * @throws {TransformError} the macro is missing or malformed, or `schema` contains a double quote
 */
export function watermarkSql(schema: string, macrosDir: string = MACROS_DIR): string {
  if (schema.includes('"')) throw new TransformError(`schema ${schema}: a double quote is not allowed in the models' schema`);
  return renderMacro('transform_watermarks_sql', [schema], loadMacros(macrosDir));
}

/**
 * The watermark and the state row, in the transform's transaction: every raw row now read,
 * per stream, with the stream's rank.
 * @throws {WarehouseError}
 */
async function saveWatermarks(
  wh: Warehouse,
  schema: string,
  ordered: readonly CompiledModel[],
  modelsHash: string,
  mode: 'full' | 'incremental',
): Promise<void> {
  if (ordered.some((m) => m.name === STREAM_RANKS_MODEL)) {
    await wh.run(watermarkSql(schema));
  } else {
    // a models folder without the ranks model (tests' own folders): every stream rank 0
    await wh.run('delete from etl.transform_watermarks');
    await wh.run('insert into etl.transform_watermarks select stream_id, max(stream_position), 0 from raw.events group by stream_id');
  }
  await wh.run('delete from etl.transform_state');
  await wh.run(`insert into etl.transform_state values (?, ?, now())`, [modelsHash, mode]);
}
