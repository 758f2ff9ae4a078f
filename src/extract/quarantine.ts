/**
 * Quarantine (`docs/ingest.md` "Quarantine"): the readable form stored in `raw.events` for an
 * event whose text DuckDB's JSON reader refuses, and the reason recorded beside its text as
 * sent. Pure functions; never a word of the event in a reason.
 *
 * @module
 */
import type { QuarantinedEvent } from '../warehouse/RawEventWriter.js';

/** A `\uD800`–`\uDFFF` escape: the usual cause (a lone surrogate, not valid Unicode). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/** A copy of a parsed JSON value with every string and member name made well-formed (U+FFFD). */
function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value !== null && typeof value === 'object') {
    // A null prototype: a member named "__proto__" stays a member.
    const out = Object.create(null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) out[k.toWellFormed()] = wellFormed(v);
    return out;
  }
  return value;
}

/**
 * The form of a refused event stored in `raw.events`.
 *
 * @param envelope the event's text as sent
 * @param id its id (well-formed: the page reader checked it)
 * @param type its `eventType` / `name`, or null
 * @param level `repaired`: the same JSON with every string made valid Unicode (U+FFFD for each
 *   lone surrogate); `minimal`: only `id` and the event type, for an event DuckDB refuses even
 *   repaired
 */
export function quarantinedForm(envelope: string, id: string, type: string | null, level: 'repaired' | 'minimal'): QuarantinedEvent {
  const reason = SURROGATE_ESCAPE.test(envelope)
    ? 'a string is not valid Unicode (a lone surrogate escape)'
    : 'refused by the JSON reader of DuckDB';
  const safeType = type === null ? null : type.toWellFormed();
  if (level === 'repaired') {
    const repaired = wellFormed(JSON.parse(envelope)) as Record<string, unknown>;
    const message = repaired['message'];
    return {
      envelope: JSON.stringify(repaired),
      message: message === undefined || message === null ? null : JSON.stringify(message),
      type: safeType,
      reason,
    };
  }
  return { envelope: JSON.stringify(safeType === null ? { id } : { id, eventType: safeType }), message: null, type: safeType, reason };
}
