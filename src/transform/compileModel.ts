/**
 * Compile one SQL model file for DuckDB without dbt: the models use only
 * `{{ config(...) }}`, `{{ ref('name') }}` and `{{ source('schema', 'table') }}` (STYLE.md),
 * so three substitutions turn the dbt file into plain SQL.
 *
 * @module
 */
import { TransformError } from '../errors.js';

/** How a model is built. */
export type Materialization = 'table' | 'view';

/** A model file compiled to plain DuckDB SQL. */
export interface CompiledModel {
  /** Model name: the file name without `.sql` (dbt's rule). */
  name: string;
  /** The SELECT (or WITH … SELECT) body, with refs and sources resolved. */
  sql: string;
  /** Names referenced with `ref()` (models or seeds), in order of first appearance, unique. */
  refs: string[];
  /** `schema.table` of every `source()`, unique. */
  sources: string[];
  /** From `config(materialized=...)`; `table` when absent. */
  materialized: Materialization;
}

const QUOTED = String.raw`\s*(?:'([^']*)'|"([^"]*)")\s*`;
const REF_RE = new RegExp(String.raw`\{\{\s*ref\(${QUOTED}\)\s*\}\}`, 'g');
const SOURCE_RE = new RegExp(String.raw`\{\{\s*source\(${QUOTED},${QUOTED}\)\s*\}\}`, 'g');
const CONFIG_RE = /\{\{\s*config\(([\s\S]*?)\)\s*\}\}/g;
const MATERIALIZED_RE = /materialized\s*=\s*(?:'([^']*)'|"([^"]*)")/;
const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Double-quote an identifier for DuckDB. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Compile a model's text.
 *
 * @param name model name (file name without extension)
 * @param text the file's contents
 * @param schema schema the refs resolve to (default `main`)
 * @returns the compiled model
 * @throws {TransformError} on any other Jinja, a bad identifier, or an unsupported materialization
 */
export function compileModel(name: string, text: string, schema = 'main'): CompiledModel {
  if (!IDENT_RE.test(name)) throw new TransformError(`model ${name}: the file name is not a plain SQL identifier`);
  let materialized: Materialization = 'table';
  let sql = text.replace(CONFIG_RE, (_m, args: string) => {
    const m = MATERIALIZED_RE.exec(args);
    if (m) {
      const value = m[1] ?? m[2] ?? '';
      if (value !== 'table' && value !== 'view') {
        throw new TransformError(`model ${name}: materialized='${value}' is not supported by the job's runner (table or view)`);
      }
      materialized = value;
    }
    return '';
  });
  const refs: string[] = [];
  sql = sql.replace(REF_RE, (_m, a?: string, b?: string) => {
    const ref = a ?? b ?? '';
    if (!IDENT_RE.test(ref)) throw new TransformError(`model ${name}: ref('${ref}') is not a plain identifier`);
    if (!refs.includes(ref)) refs.push(ref);
    return `${quoteIdent(schema)}.${quoteIdent(ref)}`;
  });
  const sources: string[] = [];
  sql = sql.replace(SOURCE_RE, (_m, a?: string, b?: string, c?: string, d?: string) => {
    const src = a ?? b ?? '';
    const table = c ?? d ?? '';
    if (!IDENT_RE.test(src) || !IDENT_RE.test(table)) {
      throw new TransformError(`model ${name}: source('${src}', '${table}') is not made of plain identifiers`);
    }
    const key = `${src}.${table}`;
    if (!sources.includes(key)) sources.push(key);
    return `${quoteIdent(src)}.${quoteIdent(table)}`;
  });
  const leftover = /\{\{|\{%|\{#/.exec(sql);
  if (leftover) {
    const line = sql.slice(0, leftover.index).split('\n').length;
    throw new TransformError(
      `model ${name}: unsupported Jinja at line ${line} (models may use only config, ref and source)`,
    );
  }
  sql = sql.trim().replace(/;\s*$/, '');
  if (sql === '') throw new TransformError(`model ${name}: the model is empty`);
  return { name, sql, refs, sources, materialized };
}
