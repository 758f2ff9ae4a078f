/**
 * The model catalog: which models `sql/models` holds and what each is, read from the model
 * files' `{{ config(...) }}` and the YAML property files beside them (docs/architecture.md
 * "The model catalog"). The transform, the export, the publish and the report ask it
 * instead of each learning the models on its own; it reads files only (no warehouse, no
 * other stage), so any stage may import it.
 *
 * @module
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TransformError } from '../errors.js';
import { MODELS_DIR } from '../paths.js';

/**
 * How a model is built: `table` and `view` are rebuilt whole; `incremental` is a table the
 * runner updates by `delete+insert` on its `unique_key` (docs/incremental.md).
 */
export type Materialization = 'table' | 'view' | 'incremental';

/** dbt's layering by name prefix (docs/models.md "Conventions"): `stg_`, `int_`, `fct_`, `dim_`, `mart_`, `dq_`. */
export type ModelLayer = 'stg' | 'int' | 'fct' | 'dim' | 'mart' | 'dq';

/** The layers, each named by its prefix `<layer>_`. */
export const MODEL_LAYERS: readonly ModelLayer[] = ['stg', 'int', 'fct', 'dim', 'mart', 'dq'];

/** The layers that are exported as Parquet and published to the lake (docs/exports.md): marts, dimensions, data quality. */
export const EXPORTED_LAYERS: readonly ModelLayer[] = ['fct', 'dim', 'mart', 'dq'];

/** Name prefixes of the exported models (`fct_`, `dim_`, `mart_`, `dq_`: docs/exports.md). */
export const EXPORTED_PREFIXES: readonly string[] = EXPORTED_LAYERS.map((l) => `${l}_`);

/**
 * Models an earlier build made that this one no longer has: the transform drops them from
 * the warehouse (docs/models.md "Retired models"), so an upgraded warehouse holds no table
 * that nothing rebuilds. A name leaves `sql/models` and joins this list in one change.
 */
export const RETIRED_MODELS: readonly string[] = [
  // Staging that parsed and typed the events: now int_<entity>_events (staging renames and casts only).
  'stg_patients_created',
  'stg_referral_acknowledgements',
  'stg_patient_status_changes',
  'stg_contact_attempts',
];

/** What a model's `{{ config(...) }}` says, as the job's runner supports it. */
export interface ModelConfig {
  /** `materialized=`; `table` when absent. */
  materialized: Materialization;
  /** `unique_key=` (one column or a list), when given. */
  uniqueKey?: string[];
}

/** One model of the catalog. */
export interface CatalogModel {
  /** The file name without `.sql` (dbt's rule). */
  name: string;
  /** The file's path relative to the models folder (`marts/fct_patient_funnel.sql`). */
  file: string;
  /** By the name's prefix; undefined for a name without a known prefix. */
  layer: ModelLayer | undefined;
  materialized: Materialization;
  /**
   * `unique_key` of its config: the columns an incremental model's rows are replaced by, and
   * the key publish merges an exported model by; a view may name one for publish only (the
   * fct_ views over their int_ tables: docs/models.md "Layers"). Undefined when none is named.
   */
  uniqueKey?: string[];
  /** Exported as Parquet and published to the lake ({@link isExportedModel}). */
  exported: boolean;
  /** The model's `description` in its YAML property file, whitespace folded; '' when none. */
  description: string;
}

/** The catalog of one models folder. */
export interface ModelCatalog {
  /** The models folder (absolute or as given). */
  dir: string;
  /** Every model, sorted by file path. */
  models: CatalogModel[];
  /** The model of a name. */
  get(name: string): CatalogModel | undefined;
}

const CONFIG_RE = /\{\{\s*config\(([\s\S]*?)\)\s*\}\}/g;
const MATERIALIZED_RE = /materialized\s*=\s*(?:'([^']*)'|"([^"]*)")/;
const UNIQUE_KEY_RE = /unique_key\s*=\s*(?:'([^']*)'|"([^"]*)"|\[([^\]]*)\])/;
const STRATEGY_RE = /incremental_strategy\s*=\s*(?:'([^']*)'|"([^"]*)")/;
const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The arguments of one `config(...)` call, checked. */
function readConfigArgs(name: string, args: string, into: ModelConfig): void {
  const m = MATERIALIZED_RE.exec(args);
  if (m) {
    const value = m[1] ?? m[2] ?? '';
    if (value !== 'table' && value !== 'view' && value !== 'incremental') {
      throw new TransformError(`model ${name}: materialized='${value}' is not supported by the job's runner (table, view or incremental)`);
    }
    into.materialized = value;
  }
  const k = UNIQUE_KEY_RE.exec(args);
  if (k) {
    const list = k[1] ?? k[2] ?? k[3] ?? '';
    const key = list
      .split(',')
      .map((c) => c.trim().replace(/^['"]|['"]$/g, ''))
      .filter((c) => c !== '');
    const bad = key.find((c) => !IDENT_RE.test(c));
    if (bad !== undefined) throw new TransformError(`model ${name}: unique_key column '${bad}' is not a plain identifier`);
    into.uniqueKey = key;
  }
  const st = STRATEGY_RE.exec(args);
  if (st && (st[1] ?? st[2]) !== 'delete+insert') {
    throw new TransformError(
      `model ${name}: incremental_strategy='${st[1] ?? st[2]}' is not supported by the job's runner (delete+insert)`,
    );
  }
}

/**
 * Read the `{{ config(...) }}` calls of a model's text and remove them.
 *
 * @param name the model's name (messages)
 * @param text the model file's contents
 * @returns the config and the text without its `config()` calls
 * @throws {TransformError} an unsupported materialization or strategy, a key column that is
 *   not a plain identifier, or an incremental model without a `unique_key`
 */
export function parseModelConfig(name: string, text: string): { config: ModelConfig; body: string } {
  const config: ModelConfig = { materialized: 'table' };
  const body = text.replace(CONFIG_RE, (_m, args: string) => {
    readConfigArgs(name, args, config);
    return '';
  });
  if (config.materialized === 'incremental' && (config.uniqueKey === undefined || config.uniqueKey.length === 0)) {
    throw new TransformError(`model ${name}: an incremental model needs a unique_key (the runner replaces rows by it)`);
  }
  return { config, body };
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

/** Every `.yml` / `.yaml` file under `dir`, recursively, sorted by path. */
function listYamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...listYamlFiles(p));
    else if (/\.ya?ml$/.test(entry)) out.push(p);
  }
  return out;
}

/** The layer a model's name prefix gives, or undefined. */
export function layerOf(name: string): ModelLayer | undefined {
  return MODEL_LAYERS.find((l) => name.startsWith(`${l}_`));
}

/**
 * Whether the relation `name` of schema `main` is exported as Parquet and published to the
 * lake: its name starts with one of {@link EXPORTED_PREFIXES} (docs/exports.md). The rule is
 * by name so that it holds for every relation of the warehouse, catalogued or not.
 */
export function isExportedModel(name: string): boolean {
  const layer = layerOf(name);
  return layer !== undefined && EXPORTED_LAYERS.includes(layer);
}

/** `description` of every model of the YAML property files under `dir` (dbt's `models:` lists). */
function readDescriptions(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of listYamlFiles(dir)) {
    const doc = parseYaml(readFileSync(file, 'utf8')) as { models?: unknown } | null;
    const models = Array.isArray(doc?.models) ? (doc.models as unknown[]) : [];
    for (const m of models) {
      const { name, description } = (m ?? {}) as { name?: unknown; description?: unknown };
      if (typeof name === 'string' && typeof description === 'string') out.set(name, description.replace(/\s+/g, ' ').trim());
    }
  }
  return out;
}

/** Read the catalog of `dir` from its files (uncached). */
function readCatalog(dir: string): ModelCatalog {
  const descriptions = readDescriptions(dir);
  const seen = new Map<string, string>();
  const models = listModelFiles(dir).map((path): CatalogModel => {
    const name = basename(path, '.sql');
    const file = relative(dir, path);
    const prior = seen.get(name);
    if (prior) throw new TransformError(`two model files are named ${name}: ${prior} and ${file}`);
    seen.set(name, file);
    const { config } = parseModelConfig(name, readFileSync(path, 'utf8'));
    return {
      name,
      file,
      layer: layerOf(name),
      materialized: config.materialized,
      ...(config.uniqueKey !== undefined && config.uniqueKey.length > 0 ? { uniqueKey: config.uniqueKey } : {}),
      exported: isExportedModel(name),
      description: descriptions.get(name) ?? '',
    };
  });
  const byName = new Map(models.map((m) => [m.name, m]));
  return { dir, models, get: (name) => byName.get(name) };
}

const cache = new Map<string, ModelCatalog>();

/**
 * The catalog of the models folder `dir` (default the package's `sql/models`), read once per
 * process and folder: the model files do not change while the job runs.
 *
 * @throws {TransformError} two model files with one name, or a `config()` the runner does not
 *   support ({@link parseModelConfig})
 * @throws a `NodeJS.ErrnoException` when the folder or a file cannot be read, or a YAML error
 *   when a property file is not valid YAML
 */
export function loadModelCatalog(dir: string = MODELS_DIR): ModelCatalog {
  let catalog = cache.get(dir);
  if (catalog === undefined) {
    catalog = readCatalog(dir);
    cache.set(dir, catalog);
  }
  return catalog;
}
