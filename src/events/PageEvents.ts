/**
 * The events of a page as the page reader hands them over and the writers copy them: the
 * body's bytes and one typed array of offsets, {@link EVENT_SLOTS} an event, laid out as
 * {@link PART} says (`docs/ingest.md` "How a page is read"). The reader
 * (`src/upstream/page.ts`) fills it; the batch file (`src/warehouse/BatchFile.ts`) and the
 * extract's batches (`src/extract/`) read it. It belongs to neither side, so that the
 * warehouse imports nothing from the upstream client.
 *
 * @module
 */

/** Offsets kept per event in {@link PageEvents}: start and end of five slices. */
export const EVENT_SLOTS = 10;

/**
 * Where each part of an event lies in {@link PageEvents.offsets}: `offsets[i * EVENT_SLOTS + part]`
 * is the first byte of event `i`'s part, the next slot the byte after it (-1 when absent).
 * `id`, `type` and a string `publishedTime` are string tokens, quotes included; `publishedTime`
 * may be another JSON value; `message` is absent when it is missing or JSON null.
 */
export const PART = Object.freeze({ envelope: 0, id: 2, type: 4, publishedTime: 6, message: 8 });

const QUOTE = 34;
const BACKSLASH = 92;

/**
 * The events of one page as read: the body's bytes (UTF-8, as received) and, per event, where
 * its parts lie (one typed array of byte offsets, no string per part until someone asks for
 * it, so a page costs its body and 40 bytes an event). Writers copy the parts' bytes as they
 * are; the accessors below decode them.
 */
export class PageEvents {
  /** Number of events. */
  readonly count: number;
  /** Whether the body holds a line break (CR or LF, JSON white space): a raw part may span lines. */
  readonly hasLineBreak: boolean;

  /**
   * @param bytes the page body as received (valid UTF-8)
   * @param offsets {@link EVENT_SLOTS} byte offsets per event, laid out as {@link PART} says
   * @param hasLineBreak whether `bytes` holds a CR or LF; found in `bytes` when not given
   */
  constructor(
    readonly bytes: Buffer,
    readonly offsets: Int32Array,
    hasLineBreak?: boolean,
  ) {
    this.count = offsets.length / EVENT_SLOTS;
    this.hasLineBreak = hasLineBreak ?? (bytes.includes(10) || bytes.includes(13));
  }

  /** Events `from` to `to` (exclusive) of the page: the same bytes, no copy. */
  slice(from: number, to: number): PageEvents {
    return new PageEvents(this.bytes, this.offsets.subarray(from * EVENT_SLOTS, to * EVENT_SLOTS), this.hasLineBreak);
  }

  private text(a: number, b: number): string {
    return this.bytes.toString('utf8', a, b);
  }

  /** The string token at `a` (quotes included), unescaped. */
  private stringAt(a: number, b: number): string {
    return hasEscapeByte(this.bytes, a, b) ? (JSON.parse(this.text(a, b)) as string) : this.text(a + 1, b - 1);
  }

  /** The whole event object, exactly as sent. */
  envelope(i: number): string {
    return this.text(this.offsets[i * EVENT_SLOTS]!, this.offsets[i * EVENT_SLOTS + 1]!);
  }

  /** `id`, unescaped: a non-empty, well-formed string. */
  id(i: number): string {
    return this.stringAt(this.offsets[i * EVENT_SLOTS + PART.id]!, this.offsets[i * EVENT_SLOTS + PART.id + 1]!);
  }

  /** `eventType`, else `name` (docs/upstream.md "Event envelope"), unescaped; null when neither is a string. */
  type(i: number): string | null {
    const a = this.offsets[i * EVENT_SLOTS + PART.type]!;
    return a < 0 ? null : this.stringAt(a, this.offsets[i * EVENT_SLOTS + PART.type + 1]!);
  }

  /** `publishedTime`: a string unescaped, another JSON value as its text, null when absent or null. */
  publishedTime(i: number): string | null {
    const a = this.offsets[i * EVENT_SLOTS + PART.publishedTime]!;
    if (a < 0) return null;
    const b = this.offsets[i * EVENT_SLOTS + PART.publishedTime + 1]!;
    return this.bytes[a] === QUOTE ? this.stringAt(a, b) : this.text(a, b);
  }

  /** `message` as its JSON text as sent, null when absent or JSON null. */
  message(i: number): string | null {
    const a = this.offsets[i * EVENT_SLOTS + PART.message]!;
    return a < 0 ? null : this.text(a, this.offsets[i * EVENT_SLOTS + PART.message + 1]!);
  }

  /** Every event's value of one part, in order (tests, the bench). */
  all<T>(part: (i: number) => T): T[] {
    return Array.from({ length: this.count }, (_, i) => part.call(this, i));
  }
}

/** Whether `bytes[a, b)` holds a backslash (an escape, in a JSON token). */
export function hasEscapeByte(bytes: Uint8Array, a: number, b: number): boolean {
  for (let k = a; k < b; k += 1) if (bytes[k] === BACKSLASH) return true;
  return false;
}
