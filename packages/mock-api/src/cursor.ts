/**
 * The simulator's opaque page cursor (the `cursor` query parameter of `nextPage`). It
 * binds the filter and the keyset position: the id of the last event seen (docs/upstream.md "Reading the stream"
 * rule 6), with its stream position as a hint that is always verified against the id.
 * Clients must treat it as opaque (docs/upstream.md "Reading the stream" rule 7, "Versioning and open sets").
 *
 * @module
 */

/** The decoded cursor. */
export interface CursorState {
  /** Requested event types (docs/upstream.md "Reading the stream"). */
  eventTypes: string[];
  /** Requested trial ids (docs/upstream.md "Reading the stream"). */
  trialIds: string[];
  /** Stream position the next page starts after (0 = the beginning of the stream). */
  after: number;
  /** Id of the event at position `after` (1-based), or `null` when `after` is 0. */
  afterId: string | null;
  /** Page size carried over from the first request. */
  limit: number;
}

/** Serializes a cursor to a URL-safe opaque string. */
export function encodeCursor(c: CursorState): string {
  const payload = JSON.stringify({ v: 1, t: c.eventTypes, r: c.trialIds, a: c.after, i: c.afterId, l: c.limit });
  return Buffer.from(payload, 'utf8').toString('base64url');
}

const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.length > 0);

/**
 * Parses a cursor made by {@link encodeCursor}.
 *
 * @returns the state, or `undefined` when the text is not a valid cursor
 */
export function decodeCursor(text: string): CursorState | undefined {
  if (text.length === 0 || text.length > 64_000 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  if (o['v'] !== 1 || !isStringArray(o['t']) || !isStringArray(o['r'])) return undefined;
  const a = o['a'];
  const l = o['l'];
  const i = o['i'];
  if (typeof a !== 'number' || !Number.isSafeInteger(a) || a < 0) return undefined;
  if (typeof l !== 'number' || !Number.isSafeInteger(l) || l < 1) return undefined;
  if (!(i === null || typeof i === 'string') || (a === 0) !== (i === null)) return undefined;
  return { eventTypes: o['t'], trialIds: o['r'], after: a, afterId: i, limit: l };
}
