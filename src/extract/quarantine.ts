/**
 * Quarantine (`docs/ingest.md` "Quarantine"): the readable form stored in `raw.events` for an
 * event whose text DuckDB's JSON reader refuses, and the reason recorded beside its text as
 * sent. Pure functions; never a word of the event in a reason.
 *
 * @module
 */
import type { QuarantinedEvent } from '../warehouse/RawEventWriter.js';
import { jsonText } from '../events/jsonText.js';

/** A `\uD800`–`\uDFFF` escape: the usual cause (a lone surrogate, not valid Unicode). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

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
    const parsed = JSON.parse(envelope) as Record<string, unknown>;
    const message = parsed['message'];
    return {
      envelope: jsonText(parsed, { wellFormed: true }),
      message: message === undefined || message === null ? null : jsonText(message, { wellFormed: true }),
      type: safeType,
      reason,
    };
  }
  return { envelope: JSON.stringify(safeType === null ? { id } : { id, eventType: safeType }), message: null, type: safeType, reason };
}
