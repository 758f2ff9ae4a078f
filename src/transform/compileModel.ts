/**
 * Compile one SQL model file for DuckDB without dbt: the models use only
 * `{{ config(...) }}`, `{{ ref('name') }}`, `{{ source('schema', 'table') }}` (docs/models.md "Conventions") and
 * calls of the project's macros (`sql/macros`) with quoted arguments or lists of them, so a few substitutions
 * turn the dbt file into plain SQL.
 *
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Materialization, parseModelConfig } from '../catalog/catalog.js';
import { TransformError } from '../errors.js';
import { type MacroArg, parseMacroArgs } from './macroCall.js';

/**
 * A dbt macro of the restricted form the runner expands: `{% macro name(a, b) %} … {% endmacro %}`
 * whose body uses its parameters only as `{{ a }}`, or `{{ a | join(', ') }}` for a list argument.
 */
export interface SqlMacro {
  name: string;
  params: string[];
  body: string;
}

const MACRO_DEF_RE = /\{%-?\s*macro\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)\s*-?%\}([\s\S]*?)\{%-?\s*endmacro\s*-?%\}/g;

/**
 * Every macro defined in the `.sql` files of `dir` (none when the folder is missing).
 * @throws {TransformError} a parameter that is not a plain identifier (defaults are not supported), or a macro defined twice
 */
export function loadMacros(dir: string): Map<string, SqlMacro> {
  const macros = new Map<string, SqlMacro>();
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort();
  } catch {
    return macros;
  }
  for (const file of files) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(MACRO_DEF_RE)) {
      const name = m[1]!;
      const params = m[2]!
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      const bad = params.find((p) => !IDENT_RE.test(p));
      if (bad !== undefined) throw new TransformError(`macro ${name} (${file}): parameter '${bad}' is not a plain identifier`);
      if (macros.has(name)) throw new TransformError(`macro ${name} is defined twice`);
      macros.set(name, { name, params, body: m[3]!.trim() });
    }
  }
  return macros;
}

/** `{{ param }}`, or `{{ param | join('sep') }}` for a list argument, in a macro's body. */
const PARAM_USE_RE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|\s*join\(\s*(?:'([^']*)'|"([^"]*)")\s*\)\s*)?\}\}/g;

/**
 * A macro's body with its parameters replaced by the call's arguments.
 * @throws {TransformError} a wrong number of arguments, or a list where a string is used (or the reverse)
 */
function applyMacro(macro: SqlMacro, args: readonly MacroArg[], where: string): string {
  if (args.length !== macro.params.length) {
    throw new TransformError(`${where} takes ${macro.params.length} argument(s), got ${args.length}`);
  }
  return macro.body.replace(PARAM_USE_RE, (use, param: string, sepA?: string, sepB?: string) => {
    const i = macro.params.indexOf(param);
    if (i < 0) return use;
    const value = args[i]!;
    const sep = sepA ?? sepB;
    if (sep === undefined) {
      if (Array.isArray(value)) throw new TransformError(`${where}: argument ${param} must be a quoted string, got a list`);
      return value;
    }
    if (!Array.isArray(value)) throw new TransformError(`${where}: argument ${param} must be a list of quoted strings`);
    return value.join(sep);
  });
}

/**
 * Expand the calls of `macros` in `sql`; other Jinja is left for the caller to refuse.
 * Arguments are read by {@link parseMacroArgs}: commas inside quotes, parentheses and lists do not split them.
 * @throws {TransformError} a call of a project macro that is malformed or has the wrong arguments
 */
function expandMacros(model: string, sql: string, macros: ReadonlyMap<string, SqlMacro>): string {
  const callStart = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(/g;
  let out = '';
  let pos = 0;
  for (let m = callStart.exec(sql); m !== null; m = callStart.exec(sql)) {
    const macro = macros.get(m[1]!);
    if (!macro) continue;
    const where = `model ${model}: ${macro.name}()`;
    const argsAt = m.index + m[0].length;
    const { args, end } = parseMacroArgs(sql.slice(argsAt), where);
    const close = /^\)\s*\}\}/.exec(sql.slice(argsAt + end));
    if (!close) throw new TransformError(`${where}: the call is not closed by '}}'`);
    out += sql.slice(pos, m.index) + applyMacro(macro, args, where);
    pos = argsAt + end + close[0].length;
    callStart.lastIndex = pos;
  }
  return out + sql.slice(pos);
}

/**
 * The body of the project macro `name` called with `args`, as plain SQL: how the runner runs
 * SQL that dbt runs too, from one text (the watermark: docs/incremental.md "dbt").
 * @throws {TransformError} an unknown macro, wrong arguments, or Jinja left in the body
 */
export function renderMacro(name: string, args: readonly MacroArg[], macros: ReadonlyMap<string, SqlMacro>): string {
  const macro = macros.get(name);
  if (!macro) throw new TransformError(`macro ${name} is not defined in sql/macros`);
  const sql = applyMacro(macro, args, `macro ${name}()`);
  if (/\{\{|\{%|\{#/.test(sql)) throw new TransformError(`macro ${name}: its body uses Jinja the runner does not expand`);
  return sql;
}

export type { Materialization };

/** A model file compiled to plain DuckDB SQL. */
export interface CompiledModel {
  /** Model name: the file name without `.sql` (dbt's rule). */
  name: string;
  /** The SELECT (or WITH … SELECT) body, with refs and sources resolved, built whole (`is_incremental()` false). */
  sql: string;
  /**
   * The body with `is_incremental()` true (its `{% if is_incremental() %}` blocks kept): the
   * rows of the keys the new events touched. Only for `materialized='incremental'`.
   */
  incrementalSql?: string;
  /** `unique_key` of an incremental model: the column(s) its rows are replaced by. */
  uniqueKey?: string[];
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
const IF_INCREMENTAL_RE = /\{%-?\s*if\s+is_incremental\(\)\s*-?%\}([\s\S]*?)\{%-?\s*endif\s*-?%\}/g;
const THIS_RE = /\{\{\s*this\s*\}\}/g;
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
 * @param macros the project's macros ({@link loadMacros}); calls of others are refused
 * @returns the compiled model
 * @throws {TransformError} on any other Jinja, a bad identifier, or an unsupported materialization
 */
export function compileModel(
  name: string,
  text: string,
  schema = 'main',
  macros: ReadonlyMap<string, SqlMacro> = new Map(),
): CompiledModel {
  if (!IDENT_RE.test(name)) throw new TransformError(`model ${name}: the file name is not a plain SQL identifier`);
  const parsed = parseModelConfig(name, text);
  const { materialized, uniqueKey } = parsed.config;
  let body = parsed.body;
  body = expandMacros(name, body, macros);
  body = body.replace(THIS_RE, () => `${quoteIdent(schema)}.${quoteIdent(name)}`);
  const refs: string[] = [];
  const sources: string[] = [];
  const resolve = (sql: string): string => {
    sql = sql.replace(REF_RE, (_m, a?: string, b?: string) => {
      const ref = a ?? b ?? '';
      if (!IDENT_RE.test(ref)) throw new TransformError(`model ${name}: ref('${ref}') is not a plain identifier`);
      if (!refs.includes(ref)) refs.push(ref);
      return `${quoteIdent(schema)}.${quoteIdent(ref)}`;
    });
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
        `model ${name}: unsupported Jinja at line ${line} (models may use only config, ref, source, this, {% if is_incremental() %} and the macros of sql/macros)`,
      );
    }
    sql = sql.trim().replace(/;\s*$/, '');
    if (sql === '') throw new TransformError(`model ${name}: the model is empty`);
    return sql;
  };
  const incremental = materialized === 'incremental' ? resolve(body.replace(IF_INCREMENTAL_RE, (_m, inner: string) => inner)) : undefined;
  const sql = resolve(body.replace(IF_INCREMENTAL_RE, ''));
  return {
    name,
    sql,
    refs,
    sources,
    materialized,
    ...(incremental !== undefined ? { incrementalSql: incremental, uniqueKey: uniqueKey! } : {}),
  };
}
