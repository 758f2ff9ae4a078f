/**
 * JSON text of a parsed JSON value, written without recursion: an event or a site record may
 * nest values as deep as its size allows (the page reader and DuckDB accept any depth,
 * docs/ingest.md "How a page is read"), and a recursive walk, `JSON.stringify` included, runs
 * out of stack at a few thousand levels.
 *
 * @module
 */

/** Options of {@link jsonText}. */
export interface JsonTextOptions {
  /** Members in code-unit order of their names (a canonical form: member order does not count). */
  sortKeys?: boolean;
  /** Every string and member name made well-formed Unicode: each lone surrogate becomes U+FFFD. */
  wellFormed?: boolean;
}

/** Output that is written as is (pushed on the work stack beside values). */
class Literal {
  constructor(readonly text: string) {}
}
const OPEN_ARRAY = new Literal('[');
const CLOSE_ARRAY = new Literal(']');
const OPEN_OBJECT = new Literal('{');
const CLOSE_OBJECT = new Literal('}');
const COMMA = new Literal(',');

/**
 * The JSON text of `value`, as `JSON.stringify` writes it (no white space; a number that is not
 * finite as `null`), at any depth.
 *
 * @param value what `JSON.parse` returned
 */
export function jsonText(value: unknown, options: JsonTextOptions = {}): string {
  const str = options.wellFormed ? (s: string) => JSON.stringify(s.toWellFormed()) : (s: string) => JSON.stringify(s);
  const out: string[] = [];
  // Last in, first out: a container pushes its closing text, then its items in reverse.
  const work: unknown[] = [value];
  while (work.length > 0) {
    const v = work.pop();
    if (v instanceof Literal) {
      out.push(v.text);
    } else if (typeof v === 'string') {
      out.push(str(v));
    } else if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
    } else if (Array.isArray(v)) {
      work.push(CLOSE_ARRAY);
      for (let i = v.length - 1; i >= 0; i--) {
        work.push(v[i]);
        if (i > 0) work.push(COMMA);
      }
      out.push(OPEN_ARRAY.text);
    } else {
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record);
      if (options.sortKeys) keys.sort();
      work.push(CLOSE_OBJECT);
      for (let i = keys.length - 1; i >= 0; i--) {
        work.push(record[keys[i]!]);
        work.push(new Literal(`${str(keys[i]!)}:`));
        if (i > 0) work.push(COMMA);
      }
      out.push(OPEN_OBJECT.text);
    }
  }
  return out.join('');
}
