/**
 * Whether two JSON texts hold the same JSON value: member order and white space do not
 * count (`docs/ingest.md` "Redeliveries"). Numbers compare as `JSON.parse` reads them.
 *
 * @module
 */

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(value).sort()) out[k] = canonical((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/** @param a, b JSON texts (each must parse) */
export function sameJson(a: string, b: string): boolean {
  if (a === b) return true;
  return JSON.stringify(canonical(JSON.parse(a))) === JSON.stringify(canonical(JSON.parse(b)));
}
