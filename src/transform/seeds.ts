/**
 * Seeds: the CSV mappings of `sql/seeds/` and their column types.
 *
 * Column types come from the seed properties file `sql/seeds/_seeds.yml`, which dbt reads
 * as YAML and this module reads as JSON (the file is written in the JSON subset of YAML;
 * lines starting with `#` are comments). Both engines thus load each column with the same
 * DuckDB type.
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { TransformError } from '../errors.js';
import { quoteIdent } from './compileModel.js';
import { sqlString } from '../warehouse/Warehouse.js';

/** One seed: a CSV file and the DuckDB type of each of its columns, in file order. */
export interface SeedSpec {
  /** Table name: the file name without `.csv`. */
  name: string;
  /** Absolute path of the CSV file. */
  path: string;
  /** Columns in header order with their DuckDB types (`varchar` unless declared). */
  columns: { name: string; type: string }[];
}

const PROPERTIES_FILE = '_seeds.yml';
const TYPE_RE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\d+(,\s*\d+)?\))?(\[\])?$/;

/** Parse the seed properties file: `seed name → column → type`. */
export function parseSeedProperties(text: string, file = PROPERTIES_FILE): Map<string, Record<string, string>> {
  const json = text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    throw new TransformError(`${file}: not valid JSON-style YAML (${(err as Error).message})`);
  }
  const out = new Map<string, Record<string, string>>();
  const seeds = (doc as { seeds?: unknown }).seeds;
  if (!Array.isArray(seeds)) return out;
  for (const s of seeds as { name?: unknown; config?: { column_types?: unknown } }[]) {
    if (typeof s.name !== 'string') continue;
    const types = s.config?.column_types;
    const map: Record<string, string> = {};
    if (types && typeof types === 'object') {
      for (const [col, type] of Object.entries(types as Record<string, unknown>)) {
        if (typeof type !== 'string' || !TYPE_RE.test(type)) {
          throw new TransformError(`${file}: seed ${s.name} column ${col} has an invalid type`);
        }
        map[col] = type;
      }
    }
    out.set(s.name, map);
  }
  return out;
}

/** Split a CSV header line (no quoted commas in seed headers). */
function parseHeader(line: string): string[] {
  return line
    .replace(/^\uFEFF/, '')
    .split(',')
    .map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
}

/**
 * Read every `*.csv` of `dir` with the column types of `_seeds.yml`.
 *
 * @throws {TransformError} on an unreadable file, an empty header, or a typed column missing from the CSV
 */
export function loadSeedSpecs(dir: string): SeedSpec[] {
  if (!existsSync(dir)) return [];
  const propsPath = join(dir, PROPERTIES_FILE);
  const props = existsSync(propsPath) ? parseSeedProperties(readFileSync(propsPath, 'utf8'), propsPath) : new Map();
  const specs: SeedSpec[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.csv')).sort()) {
    const name = basename(file, '.csv');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TransformError(`seed ${file}: the name is not a plain identifier`);
    const path = join(dir, file);
    const first = readFileSync(path, 'utf8').split(/\r?\n/, 1)[0] ?? '';
    const header = parseHeader(first);
    if (header.length === 0 || header.some((h) => h === '')) throw new TransformError(`seed ${name}: empty or malformed header`);
    const types: Record<string, string> = props.get(name) ?? {};
    for (const col of Object.keys(types)) {
      if (!header.includes(col)) throw new TransformError(`seed ${name}: column ${col} is typed in ${PROPERTIES_FILE} but missing from the CSV`);
    }
    specs.push({ name, path, columns: header.map((c) => ({ name: c, type: types[c] ?? 'varchar' })) });
  }
  return specs;
}

/** The `CREATE OR REPLACE TABLE` statement that loads one seed into `schema`. */
export function seedSql(spec: SeedSpec, schema = 'main'): string {
  const cols = spec.columns.map((c) => `${sqlString(c.name)}: ${sqlString(c.type)}`).join(', ');
  return (
    `create or replace table ${quoteIdent(schema)}.${quoteIdent(spec.name)} as ` +
    `select * from read_csv(${sqlString(spec.path)}, header = true, auto_detect = false, ` +
    `delim = ',', quote = '"', escape = '"', columns = {${cols}})`
  );
}
