/**
 * The arguments of a macro call in a model (`{{ name(arg, …) }}`), read the way Jinja reads
 * them for the restricted macros the runner expands (docs/models.md "Macros"): an argument is
 * a quoted string (`'a'` or `"a"`) or a list of quoted strings (`['a', 'b']`, as dbt_utils'
 * `generate_surrogate_key` takes its columns). Commas inside quotes, parentheses or brackets
 * do not split arguments.
 *
 * @module
 */
import { TransformError } from '../errors.js';

/** One argument's value: a string, or a list of strings. */
export type MacroArg = string | string[];

const OPEN: Readonly<Record<string, string>> = { '(': ')', '[': ']', '{': '}' };

/**
 * The end of the quoted string that starts at `text[start]` (the index after its closing quote).
 * @throws {TransformError} when the string is not closed
 */
function skipQuoted(text: string, start: number, where: string): number {
  const quote = text[start]!;
  const end = text.indexOf(quote, start + 1);
  if (end < 0) throw new TransformError(`${where}: a quoted string is not closed`);
  return end + 1;
}

/**
 * Split `text` at its top-level commas (not inside quotes, parentheses, brackets or braces),
 * stopping at the first unmatched `)` when `untilParen` is set (a call's arguments: a `}}` before it is an error).
 * @returns the pieces (untrimmed) and the index where scanning stopped (at the `)`, or the end)
 * @throws {TransformError} an unclosed quote or bracket, or a closing one that does not match
 */
export function splitTopLevel(text: string, where: string, untilParen = false): { parts: string[]; end: number } {
  const parts: string[] = [];
  const stack: string[] = [];
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "'" || ch === '"') {
      i = skipQuoted(text, i, where);
      continue;
    }
    if (untilParen && text.startsWith('}}', i)) throw new TransformError(`${where}: ')' is missing before '}}'`);
    if (OPEN[ch] !== undefined) stack.push(OPEN[ch]);
    else if (ch === ')' || ch === ']' || ch === '}') {
      if (stack.length === 0 && ch === ')' && untilParen) break;
      if (stack.pop() !== ch) throw new TransformError(`${where}: '${ch}' does not close anything`);
    } else if (ch === ',' && stack.length === 0) {
      parts.push(text.slice(from, i));
      from = i + 1;
    }
    i++;
  }
  if (stack.length > 0) throw new TransformError(`${where}: '${stack.at(-1)!}' is missing`);
  if (untilParen && i >= text.length) throw new TransformError(`${where}: ')' is missing`);
  parts.push(text.slice(from, i));
  return { parts, end: i };
}

const QUOTED_RE = /^\s*(?:'([^']*)'|"([^"]*)")\s*$/;

/** A quoted string's contents, or undefined when `text` is not one quoted string. */
function unquote(text: string): string | undefined {
  const q = QUOTED_RE.exec(text);
  return q ? (q[1] ?? q[2] ?? '') : undefined;
}

/**
 * One argument: a quoted string, or a list of quoted strings (a trailing comma allowed).
 * @throws {TransformError} anything else
 */
export function parseMacroArg(text: string, where: string): MacroArg {
  const s = unquote(text);
  if (s !== undefined) return s;
  const t = text.trim();
  if (t.startsWith('[') && t.endsWith(']')) {
    const { parts } = splitTopLevel(t.slice(1, -1), where);
    if (parts.length > 1 && parts.at(-1)!.trim() === '') parts.pop();
    if (parts.length === 1 && parts[0]!.trim() === '') return [];
    return parts.map((p) => {
      const item = unquote(p);
      if (item === undefined) throw new TransformError(`${where}: the items of a list argument must be quoted strings, got ${p.trim()}`);
      return item;
    });
  }
  throw new TransformError(`${where}: the arguments must be quoted strings or lists of quoted strings, got ${t}`);
}

/**
 * The arguments of a call whose text starts after its `(`.
 * @returns the arguments and the index of the closing `)` in `text`
 * @throws {TransformError} an unclosed call, quote or bracket, or an argument of another kind
 */
export function parseMacroArgs(text: string, where: string): { args: MacroArg[]; end: number } {
  const { parts, end } = splitTopLevel(text, where, true);
  if (parts.length === 1 && parts[0]!.trim() === '') return { args: [], end };
  return { args: parts.map((p) => parseMacroArg(p, where)), end };
}
