/**
 * Whether two JSON texts hold the same JSON value: member order and white space do not
 * count (`docs/ingest.md` "Redeliveries"). Numbers compare as `JSON.parse` reads them.
 *
 * @module
 */
import { jsonText } from '../events/jsonText.js';

/**
 * @param a, b JSON texts (each must parse)
 * @throws {SyntaxError} a text is not JSON
 */
export function sameJson(a: string, b: string): boolean {
  if (a === b) return true;
  return jsonText(JSON.parse(a), { sortKeys: true }) === jsonText(JSON.parse(b), { sortKeys: true });
}
