/**
 * The one reading of an events page (docs/upstream.md "Event envelope", "Reading the stream", "Versioning and open sets"): what the job checks and what it
 * stores come from this module. The rules are those of `docs/ingest.md` "How a page is read":
 *
 * 1. The body must be JSON (RFC 8259): `JSON.parse` is the grammar check and nothing more;
 *    its values are not used. A body that is not JSON is unreadable (retried, exit 4).
 * 2. One scanner then reads the members the job uses, with one set of rules: names are
 *    compared after unescaping (`"\u0069d"` is `id`); a name the job reads (`events`,
 *    `pagination` at the top, `nextPage`, `hasNextPage` in `pagination`, `id`, `eventType`,
 *    `name`, `publishedTime`, `message` in an event) given twice in one object breaks the
 *    contract (exit 6), because JSON readers disagree on which one counts. Other members are
 *    an open set (docs/upstream.md "Versioning and open sets"), kept as sent.
 * 3. Each event is stored as the exact text the scanner sliced from the body, so the stored
 *    envelope's `id` is the `id` checked here.
 *
 * Why a scanner and not the parsed objects: the writer needs each event's text as sent, and
 * re-serialising every parsed event costs more than the rest of the writer
 * (`docs/performance.md`).
 *
 * @module
 */
import { UpstreamContractError } from '../errors.js';

/** Offsets kept per event in {@link PageEvents}: start and end of five slices. */
const SLOTS = 10;

/**
 * The events of one page as read: the body and, per event, where its parts lie (one typed
 * array, no string per part until a writer asks for it, so a page waiting for its commit
 * costs its body and 40 bytes an event). Absent parts are -1.
 */
export class PageEvents {
  /** Number of events. */
  readonly count: number;
  /** Whether the body holds a backslash: an escape somewhere (no escape, no lone surrogate). */
  readonly hasEscape: boolean;

  /** @param body the page body; @param at {@link SLOTS} offsets per event */
  constructor(
    private readonly body: string,
    private readonly at: Int32Array,
  ) {
    this.count = at.length / SLOTS;
    this.hasEscape = body.includes('\\');
  }

  /** The whole event object, exactly as sent. */
  envelope(i: number): string {
    return this.body.slice(this.at[i * SLOTS]!, this.at[i * SLOTS + 1]!);
  }

  /** `id`, unescaped: a non-empty, well-formed string. */
  id(i: number): string {
    return stringValue(this.body, this.at[i * SLOTS + 2]!, this.at[i * SLOTS + 3]!);
  }

  /** `eventType`, else `name` (docs/upstream.md "Event envelope"), unescaped; null when neither is a string. */
  type(i: number): string | null {
    const a = this.at[i * SLOTS + 4]!;
    return a < 0 ? null : stringValue(this.body, a, this.at[i * SLOTS + 5]!);
  }

  /** `publishedTime`: a string unescaped, another JSON value as its text, null when absent or null. */
  publishedTime(i: number): string | null {
    const a = this.at[i * SLOTS + 6]!;
    return a < 0 ? null : valueText(this.body, a, this.at[i * SLOTS + 7]!);
  }

  /** `message` as its JSON text as sent, null when absent or JSON null. */
  message(i: number): string | null {
    const a = this.at[i * SLOTS + 8]!;
    return a < 0 ? null : this.body.slice(a, this.at[i * SLOTS + 9]!);
  }

  /** Every event's value of one part, in order (tests, the bench). */
  all<T>(part: (i: number) => T): T[] {
    return Array.from({ length: this.count }, (_, i) => part.call(this, i));
  }
}

/** What {@link readEventsPage} found in a body. */
export interface PageContent {
  events: PageEvents;
  /** `pagination.nextPage`, unescaped: the cursor to store byte for byte (docs/upstream.md "Reading the stream" rule 4). */
  nextPage: string;
  /** `pagination.hasNextPage`. */
  hasNextPage: boolean;
}

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_OBJ = 123;
const CLOSE_OBJ = 125;
const OPEN_ARR = 91;
const CLOSE_ARR = 93;

/** Breaks of the contract found by the scanner; the message never quotes the body. */
function contract(what: string): UpstreamContractError {
  return new UpstreamContractError(`events response breaks the contract (${what})`);
}

/** The scanner met a structure that `JSON.parse` accepted but it does not expect: a bug, not data. */
function unexpected(what: string): never {
  throw new Error(`page scanner: ${what} in a body JSON.parse accepted`);
}

/** Index just after the string whose opening quote is at `i`. */
function skipString(s: string, i: number): number {
  let j = i;
  for (;;) {
    j = s.indexOf('"', j + 1);
    if (j < 0) unexpected('unterminated string');
    let k = j - 1;
    let backslashes = 0;
    while (s.charCodeAt(k) === BACKSLASH) {
      backslashes += 1;
      k -= 1;
    }
    if ((backslashes & 1) === 0) return j + 1;
  }
}

function skipWhitespace(s: string, i: number): number {
  let c = s.charCodeAt(i);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++i);
  return i;
}

/** Index just after the JSON value starting at `i` (the body is known to be JSON). */
function skipValue(s: string, i: number): number {
  let depth = 0;
  const n = s.length;
  const first = s.charCodeAt(i);
  if (first !== QUOTE && first !== OPEN_OBJ && first !== OPEN_ARR) {
    // A number, true, false or null: up to the next delimiter or white space.
    let c = first;
    while (i < n && c !== COMMA && c !== CLOSE_OBJ && c !== CLOSE_ARR && c !== 32 && c !== 10 && c !== 13 && c !== 9) c = s.charCodeAt(++i);
    return i;
  }
  for (;;) {
    if (i >= n) unexpected('truncated value');
    const c = s.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(s, i);
      if (depth === 0) return i;
      continue;
    }
    if (c === OPEN_OBJ || c === OPEN_ARR) depth += 1;
    else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
      if (depth === 0) return i;
      depth -= 1;
      if (depth === 0) return i + 1;
    } else if (c === COMMA && depth === 0) return i;
    i += 1;
  }
}

/** Whether the string token `s[a, b)` (quotes included) holds an escape. */
function hasEscape(s: string, a: number, b: number): boolean {
  for (let k = a + 1; k < b - 1; k += 1) if (s.charCodeAt(k) === BACKSLASH) return true;
  return false;
}

/**
 * Which of `names` the member name token `s[a, b)` is, after unescaping; -1 for none.
 * Names without escapes are compared in place (no allocation on the hot path).
 */
function nameIndex(s: string, a: number, b: number, names: readonly string[]): number {
  const length = b - a - 2;
  for (let n = 0; n < names.length; n += 1) {
    const name = names[n]!;
    if (name.length === length && s.startsWith(name, a + 1)) return n;
  }
  if (!hasEscape(s, a, b)) return -1;
  return names.indexOf(JSON.parse(s.slice(a, b)) as string);
}

/** A string token's value: unescaped, or the slice itself when it holds no escape. */
function stringValue(s: string, a: number, b: number): string {
  return hasEscape(s, a, b) ? (JSON.parse(s.slice(a, b)) as string) : s.slice(a + 1, b - 1);
}

/** Like DuckDB's `->>`: a string unescaped, null as null, any other value as its JSON text. */
function valueText(s: string, a: number, b: number): string | null {
  if (s.charCodeAt(a) === QUOTE) return stringValue(s, a, b);
  if (b - a === 4 && s.startsWith('null', a)) return null;
  return s.slice(a, b);
}

/**
 * Walk the members of the object whose `{` is at `i`, calling `member(nameStart, nameEnd,
 * valueStart, valueEnd)` for each; returns the index just after the `}`.
 */
function forEachMember(s: string, i: number, member: (ka: number, kb: number, va: number, vb: number) => void): number {
  if (s.charCodeAt(i) !== OPEN_OBJ) unexpected('object expected');
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_OBJ) return i + 1;
  for (;;) {
    if (s.charCodeAt(i) !== QUOTE) unexpected('member name expected');
    const ka = i;
    const kb = skipString(s, i);
    i = skipWhitespace(s, kb);
    if (s.charCodeAt(i) !== COLON) unexpected('colon expected');
    const va = skipWhitespace(s, i + 1);
    const vb = skipValue(s, va);
    member(ka, kb, va, vb);
    i = skipWhitespace(s, vb);
    const c = s.charCodeAt(i);
    if (c === CLOSE_OBJ) return i + 1;
    if (c !== COMMA) unexpected('comma expected');
    i = skipWhitespace(s, i + 1);
  }
}

const PAGE_NAMES = ['events', 'pagination'] as const;
const PAGINATION_NAMES = ['nextPage', 'hasNextPage'] as const;
const EVENT_NAMES = ['id', 'eventType', 'name', 'publishedTime', 'message'] as const;

/** Member name for messages: the names above only, never text from the body. */
function twice(where: string, names: readonly string[], index: number): UpstreamContractError {
  return contract(`${where} has the member "${names[index]}" more than once`);
}

/**
 * Read the events of the `events` array whose `[` is at `i`: {@link SLOTS} offsets each.
 * @throws {UpstreamContractError} an event that is not an object, without a usable id,
 *   with a non-string `eventType`, or with a read member given twice
 */
function readEvents(s: string, i: number): Int32Array {
  let at = new Int32Array(SLOTS * 64);
  let n = 0;
  /** Per read member (EVENT_NAMES order): start and end of its value, -1 when absent. */
  const v = new Int32Array(EVENT_NAMES.length * 2);
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_ARR) return at.subarray(0, 0);
  for (;;) {
    const start = i;
    if (s.charCodeAt(i) !== OPEN_OBJ) throw contract(`event ${n + 1} is not an object`);
    v.fill(-1);
    i = skipWhitespace(s, i + 1);
    if (s.charCodeAt(i) === CLOSE_OBJ) i += 1;
    else {
      for (;;) {
        if (s.charCodeAt(i) !== QUOTE) unexpected('member name expected');
        const ka = i;
        const kb = skipString(s, i);
        i = skipWhitespace(s, kb);
        if (s.charCodeAt(i) !== COLON) unexpected('colon expected');
        const va = skipWhitespace(s, i + 1);
        const vb = skipValue(s, va);
        const k = nameIndex(s, ka, kb, EVENT_NAMES);
        if (k >= 0) {
          if (v[2 * k]! >= 0) throw twice(`event ${n + 1}`, EVENT_NAMES, k);
          v[2 * k] = va;
          v[2 * k + 1] = vb;
        }
        i = skipWhitespace(s, vb);
        const c = s.charCodeAt(i);
        if (c === CLOSE_OBJ) {
          i += 1;
          break;
        }
        if (c !== COMMA) unexpected('comma expected');
        i = skipWhitespace(s, i + 1);
      }
    }
    const end = i;
    n += 1;
    const ia = v[0]!;
    const ib = v[1]!;
    if (ia < 0 || s.charCodeAt(ia) !== QUOTE || ib - ia < 3) throw contract(`event ${n} has no string id`);
    if (hasEscape(s, ia, ib)) {
      const id = JSON.parse(s.slice(ia, ib)) as string;
      if (id === '' || !id.isWellFormed()) throw contract(`event ${n} has an id that is empty or not valid Unicode`);
    }
    let ta = -1;
    let tb = -1;
    if (v[2]! >= 0 && !isNull(s, v[2]!, v[3]!)) {
      if (s.charCodeAt(v[2]!) !== QUOTE) throw contract(`event ${n} has a non-string eventType`);
      ta = v[2]!;
      tb = v[3]!;
    } else if (v[4]! >= 0 && s.charCodeAt(v[4]!) === QUOTE) {
      ta = v[4]!;
      tb = v[5]!;
    }
    if (at.length < n * SLOTS) {
      const grown = new Int32Array(at.length * 2);
      grown.set(at);
      at = grown;
    }
    const o = (n - 1) * SLOTS;
    at[o] = start;
    at[o + 1] = end;
    at[o + 2] = ia;
    at[o + 3] = ib;
    at[o + 4] = ta;
    at[o + 5] = tb;
    const pa = v[6]!;
    at[o + 6] = pa >= 0 && !isNull(s, pa, v[7]!) ? pa : -1;
    at[o + 7] = v[7]!;
    const ma = v[8]!;
    at[o + 8] = ma >= 0 && !isNull(s, ma, v[9]!) ? ma : -1;
    at[o + 9] = v[9]!;
    i = skipWhitespace(s, i);
    const c = s.charCodeAt(i);
    if (c === CLOSE_ARR) return at.slice(0, n * SLOTS);
    if (c !== COMMA) unexpected('comma expected between events');
    i = skipWhitespace(s, i + 1);
  }
}

/** Whether the value `s[a, b)` is the literal null. */
function isNull(s: string, a: number, b: number): boolean {
  return b - a === 4 && s.startsWith('null', a);
}

/**
 * Read an events response body (docs/upstream.md "Reading the stream") that `JSON.parse` has accepted.
 *
 * @param body the whole body, decoded strictly as UTF-8
 * @returns the events as columns of texts as sent, and the pagination
 * @throws {UpstreamContractError} (exit 6) when the body breaks the contract: not an object,
 *   `events` not an array or missing, `pagination` missing or not an object, `nextPage` not a
 *   well-formed string, `hasNextPage` not a boolean, a read member given twice, an event that
 *   is not an object, without a non-empty well-formed string `id`, or with a non-string
 *   `eventType`. The message never quotes the body.
 */
export function readEventsPage(body: string): PageContent {
  const s = body;
  const top = skipWhitespace(s, 0);
  if (s.charCodeAt(top) !== OPEN_OBJ) throw contract('(root): not an object');
  const found = [-1, -1, -1, -1];
  forEachMember(s, top, (ka, kb, va, vb) => {
    const k = nameIndex(s, ka, kb, PAGE_NAMES);
    if (k < 0) return;
    if (found[2 * k]! >= 0) throw twice('the page', PAGE_NAMES, k);
    found[2 * k] = va;
    found[2 * k + 1] = vb;
  });
  const [ea, , pa] = found as [number, number, number, number];
  if (ea < 0) throw contract('events: missing');
  if (s.charCodeAt(ea) !== OPEN_ARR) throw contract('events: not an array');
  if (pa < 0) throw contract('pagination: missing');
  if (s.charCodeAt(pa) !== OPEN_OBJ) throw contract('pagination: not an object');
  const p = [-1, -1, -1, -1];
  forEachMember(s, pa, (ka, kb, va, vb) => {
    const k = nameIndex(s, ka, kb, PAGINATION_NAMES);
    if (k < 0) return;
    if (p[2 * k]! >= 0) throw twice('pagination', PAGINATION_NAMES, k);
    p[2 * k] = va;
    p[2 * k + 1] = vb;
  });
  const [na, nb, ha, hb] = p as [number, number, number, number];
  if (na < 0 || s.charCodeAt(na) !== QUOTE) throw contract('pagination.nextPage: not a string');
  const nextPage = stringValue(s, na, nb);
  if (!nextPage.isWellFormed()) throw contract('pagination.nextPage: not valid Unicode');
  let hasNextPage: boolean;
  if (hb - ha === 4 && s.startsWith('true', ha)) hasNextPage = true;
  else if (hb - ha === 5 && s.startsWith('false', ha)) hasNextPage = false;
  else throw contract('pagination.hasNextPage: not a boolean');
  return { events: new PageEvents(s, readEvents(s, ea)), nextPage, hasNextPage };
}
