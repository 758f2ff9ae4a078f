/**
 * Seeds: the CSV mappings of `sql/seeds/` and their column types.
 *
 * Column types come from the seed properties file `sql/seeds/_seeds.yml`, which dbt and
 * this module both read as YAML. Both engines thus load each column with the same DuckDB type.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, TransformError, WarehouseError } from '../errors.js';
import { INPUT_FILE_MAX_BYTES, readInputFile } from '../fs/inputFile.js';
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
  /**
   * Set when an operator's file replaces the packaged CSV ({@link SeedOverride}): the option
   * that named it, the operator's file (`source`; `path` is then the job's private copy of
   * it, see {@link readOperatorCsv}), and the packaged columns, the only ones loaded (extra
   * columns are ignored).
   */
  override?: { option: string; source: string; columns: string[] };
}

/**
 * An operator's CSV that replaces a packaged seed (docs/models.md "Site names"): it must have
 * every column of the packaged CSV's header, in any order; other columns are ignored.
 */
export interface SeedOverride {
  /** The seed it replaces, e.g. `seed_site_names`. */
  seed: string;
  /** The operator's file. */
  path: string;
  /** The option that named the file, for error messages, e.g. `--site-names`. */
  option: string;
  /**
   * Checks the file's values before it is loaded (e.g. {@link validateTrialTargets}); throws
   * a message naming the line and column, which the loader prefixes with the option and file.
   */
  validate?: (text: string) => void;
}

const PROPERTIES_FILE = '_seeds.yml';
const TYPE_RE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\d+(,\s*\d+)?\))?(\[\])?$/;

/**
 * Parse the seed properties file: `seed name → column → type`. The file is YAML, read as dbt
 * reads it (YAML 1.1, the `yaml` package), so any valid YAML edit (block or flow style,
 * comments anywhere) means the same to both engines (docs/models.md "Seeds"). A file without
 * a `seeds` list has no types; a seed entry without a string `name` is skipped.
 *
 * @throws {TransformError} naming `file`: not valid YAML (or over 100 aliases), or a column
 *   type that is not a plain DuckDB type name
 */
export function parseSeedProperties(text: string, file = PROPERTIES_FILE): Map<string, Record<string, string>> {
  let doc: unknown;
  try {
    doc = parseYaml(text, { version: '1.1', maxAliasCount: 100 });
  } catch (err) {
    throw new TransformError(`${file}: not valid YAML (${(err as Error).message.split('\n', 1)[0]})`);
  }
  const out = new Map<string, Record<string, string>>();
  const seeds = (doc as { seeds?: unknown } | null)?.seeds;
  if (!Array.isArray(seeds)) return out;
  for (const s of seeds as ({ name?: unknown; config?: { column_types?: unknown } | null } | null)[]) {
    if (typeof s?.name !== 'string') continue;
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
 * The text of a packaged seed CSV (a file of the package, read whole). The operator's CSVs
 * (`--site-names`, `--trial-targets`) are read by {@link readOperatorCsv} instead, bounded
 * and without blocking (docs/contracts.md "Input files").
 * @throws the file system's error (ENOENT, EISDIR, ...)
 */
function readSeedText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** The header of a CSV text (first line). */
function headerOf(text: string): string[] {
  return parseHeader(text.split(/\r?\n/, 1)[0] ?? '');
}

/** The header of a CSV file (first line). */
function readHeader(path: string): string[] {
  return headerOf(readSeedText(path));
}

/** The folder of this process's copies of operator CSVs (0700), removed when the process exits. */
let copiesDir: string | undefined;

/**
 * Read an operator's CSV ({@link SeedOverride}) once, as an input file (src/fs/inputFile.ts):
 * a regular file of at most 16 MiB, never blocking on a FIFO or device; and copy those bytes
 * to a private file (0600, in a 0700 folder of the temporary directory, removed at exit),
 * which is what DuckDB and the models' digest then read, so that a path swapped meanwhile
 * (for a FIFO, or a larger file) is never read (docs/contracts.md "Input files").
 *
 * @returns the private copy's path, the header of the operator's file and its text (UTF-8)
 * @throws {ConfigError} naming the option: unreadable, not a regular file, over 16 MiB (exit 2)
 * @throws {WarehouseError} the copy cannot be written: the temporary directory is full or read-only (exit 7)
 */
function readOperatorCsv(o: SeedOverride): { copy: string; header: string[]; text: string } {
  const bytes = readInputFile(o.path, { option: o.option, maxBytes: INPUT_FILE_MAX_BYTES.csv });
  let copy: string;
  try {
    if (copiesDir === undefined) {
      const dir = mkdtempSync(join(tmpdir(), 'recruit-etl-seeds-'));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      copiesDir = dir;
    }
    copy = join(copiesDir, `${o.seed}-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.csv`);
    writeFileSync(copy, bytes, { mode: 0o600 });
  } catch (err) {
    throw new WarehouseError(
      `${o.option} ${o.path}: cannot copy the file to the temporary directory ${tmpdir()}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      { cause: err },
    );
  }
  const nl = bytes.indexOf(0x0a);
  const first = (nl < 0 ? bytes : bytes.subarray(0, nl)).toString('utf8').replace(/\r$/, '');
  return { copy, header: parseHeader(first), text: bytes.toString('utf8') };
}

/**
 * Read every `*.csv` of `dir` with the column types of `_seeds.yml`; an override replaces
 * the CSV of its seed by the operator's file.
 *
 * @throws {TransformError} on an unreadable file, an empty header, or a typed column missing from the CSV
 * @throws {ConfigError} an override names an unknown seed, or its file cannot be read, is no
 *   regular file or is over 16 MiB, or lacks a column of the packaged seed (exit 2: the
 *   operator fixes the file)
 * @throws {WarehouseError} the private copy of an override cannot be written (exit 7)
 */
export function loadSeedSpecs(dir: string, overrides: readonly SeedOverride[] = []): SeedSpec[] {
  if (!existsSync(dir)) return [];
  const propsPath = join(dir, PROPERTIES_FILE);
  const props = existsSync(propsPath) ? parseSeedProperties(readFileSync(propsPath, 'utf8'), propsPath) : new Map();
  const specs: SeedSpec[] = [];
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.csv'))
    .sort();
  for (const o of overrides) {
    if (!files.includes(`${o.seed}.csv`)) throw new ConfigError(`${o.option}: there is no seed ${o.seed} to replace`);
  }
  for (const file of files) {
    const name = basename(file, '.csv');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TransformError(`seed ${file}: the name is not a plain identifier`);
    const packaged = join(dir, file);
    const header = readHeader(packaged);
    if (header.length === 0 || header.some((h) => h === '')) throw new TransformError(`seed ${name}: empty or malformed header`);
    const types: Record<string, string> = props.get(name) ?? {};
    for (const col of Object.keys(types)) {
      if (!header.includes(col))
        throw new TransformError(`seed ${name}: column ${col} is typed in ${PROPERTIES_FILE} but missing from the CSV`);
    }
    const override = overrides.find((o) => o.seed === name);
    if (override === undefined) {
      specs.push({ name, path: packaged, columns: header.map((c) => ({ name: c, type: types[c] ?? 'varchar' })) });
      continue;
    }
    const { copy: path, header: own, text } = readOperatorCsv(override);
    const missing = header.filter((c) => !own.includes(c));
    if (missing.length > 0) {
      throw new ConfigError(`${override.option} ${override.path}: the header lacks column(s) ${missing.join(', ')}`, {
        hint: `the first line must name the columns ${header.join(',')} (in any order)`,
      });
    }
    const dup = own.find((c, i) => own.indexOf(c) !== i);
    if (dup !== undefined) throw new ConfigError(`${override.option} ${override.path}: the header names column ${dup} twice`);
    try {
      override.validate?.(text);
    } catch (err) {
      throw new ConfigError(`${override.option} ${override.path}: ${(err as Error).message}`, {
        hint: 'fix that line of the file (docs/models.md describes its values)',
      });
    }
    specs.push({
      name,
      path,
      columns: own.map((c) => ({ name: c, type: types[c] ?? 'varchar' })),
      override: { option: override.option, source: override.path, columns: header },
    });
  }
  return specs;
}

/** The `CREATE OR REPLACE TABLE` statement that loads one seed into `schema`. */
export function seedSql(spec: SeedSpec, schema = 'main'): string {
  const cols = spec.columns.map((c) => `${sqlString(c.name)}: ${sqlString(c.type)}`).join(', ');
  const select = spec.override ? spec.override.columns.map(quoteIdent).join(', ') : '*';
  return (
    `create or replace table ${quoteIdent(schema)}.${quoteIdent(spec.name)} as ` +
    `select ${select} from read_csv(${sqlString(spec.path)}, header = true, auto_detect = false, ` +
    `delim = ',', quote = '"', escape = '"', columns = {${cols}})`
  );
}

/**
 * The records of a CSV text (RFC 4180: `"` quotes, `""` inside quotes), each with the line it
 * starts on (1-based). A quoted field may not span lines (seed values are one line each).
 * @throws {Error} an unterminated quote or a quote inside an unquoted field (naming the line)
 */
export function parseCsvRecords(text: string): { line: number; fields: string[] }[] {
  const records: { line: number; fields: string[] }[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    if (raw.trim() === '') return;
    const fields: string[] = [];
    let pos = 0;
    for (;;) {
      let field = '';
      if (raw[pos] === '"') {
        const end = /^"((?:[^"]|"")*)"(?=,|$)/.exec(raw.slice(pos));
        if (!end) throw new Error(`line ${i + 1}: a quoted field is not closed on its line`);
        field = end[1]!.replaceAll('""', '"');
        pos += end[0].length;
      } else {
        const next = raw.indexOf(',', pos);
        field = raw.slice(pos, next === -1 ? raw.length : next);
        if (field.includes('"')) throw new Error(`line ${i + 1}: a quote inside an unquoted field`);
        pos = next === -1 ? raw.length : next;
      }
      fields.push(field);
      if (pos >= raw.length) break;
      pos++; // the comma
    }
    records.push({ line: i + 1, fields });
  });
  return records;
}

const ISO_DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written YYYY-MM-DD, years 1900–2199 (docs/models.md "Time"). */
function isIsoDate(text: string): boolean {
  const m = ISO_DATE_RE.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return y >= 1900 && y < 2200 && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/**
 * Check the operator's enrolment targets (docs/models.md "Trial targets"): the header names
 * `trial_id`, `enrolment_target`, `target_date` (others ignored); on each line `trial_id` is
 * not empty and not repeated, `enrolment_target` is a whole number from 1 to 10^9, and
 * `target_date` is empty or an ISO date (YYYY-MM-DD).
 * @throws {Error} the first bad value, as `line N, column C: …` (values are not quoted back)
 */
export function validateTrialTargets(text: string): void {
  const [header, ...rows] = parseCsvRecords(text);
  if (header === undefined) throw new Error('the file is empty');
  const col = (name: string): number => header.fields.map((f) => f.trim()).indexOf(name);
  const [trial, target, date] = [col('trial_id'), col('enrolment_target'), col('target_date')];
  const seen = new Map<string, number>();
  for (const { line, fields } of rows) {
    const at = (name: string, why: string): Error => new Error(`line ${line}, column ${name}: ${why}`);
    if (fields.length !== header.fields.length)
      throw new Error(`line ${line}: ${fields.length} fields where the header has ${header.fields.length}`);
    const id = fields[trial]!;
    if (id.trim() === '') throw at('trial_id', 'empty');
    if (seen.has(id)) throw at('trial_id', `the trial is already on line ${seen.get(id)!}`);
    seen.set(id, line);
    const n = fields[target]!.trim();
    if (!/^\d{1,10}$/.test(n) || Number(n) < 1 || Number(n) > 1e9) throw at('enrolment_target', 'not a whole number from 1 to 1000000000');
    const d = fields[date]!.trim();
    if (d !== '' && !isIsoDate(d)) throw at('target_date', 'not empty and not a date YYYY-MM-DD');
  }
}
