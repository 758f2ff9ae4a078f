/**
 * The one reading of an events page (docs/upstream.md "Event envelope", "Reading the stream", "Versioning and open sets"): what the job checks and what it
 * stores come from this module. The rules are those of `docs/ingest.md` "How a page is read":
 *
 * 1. The body must be JSON (RFC 8259), exactly what `JSON.parse` accepts: checked here, in
 *    the same walk that reads the page, so no parsed copy of it is built. A body that is not
 *    JSON is unreadable (retried, exit 4), whatever else is wrong with it.
 * 2. The same walk reads the members the job uses, with one set of rules: names are
 *    compared after unescaping (`"\u0069d"` is `id`); a name the job reads (`events`,
 *    `pagination` at the top, `nextPage`, `hasNextPage` in `pagination`, `id`, `eventType`,
 *    `name`, `publishedTime`, `message` in an event) given twice in one object breaks the
 *    contract (exit 6), because JSON readers disagree on which one counts. Other members are
 *    an open set (docs/upstream.md "Versioning and open sets"), kept as sent.
 * 3. Each event is stored as the exact bytes the scanner found in the body (its offsets
 *    are turned into byte offsets of the body as received), so the stored envelope's `id` is
 *    the `id` checked here.
 *
 * Why a scanner and not the parsed objects: the writer needs each event's text as sent, and
 * re-serialising every parsed event costs more than the rest of the writer
 * (`docs/ingest.md` "Two workers").
 *
 * @module
 */
import { UpstreamContractError } from '../errors.js';
import { EVENT_SLOTS, PageEvents } from '../events/PageEvents.js';

/**
 * The most events a page may hold (2,000,000: 80 MB of offsets, {@link EVENT_SLOTS} a page).
 * A page's offsets cost 40 bytes an event, up to four times the page for events of 10 bytes,
 * so without it a hostile page of tiny events within `--max-page-bytes` would take gigabytes
 * (`docs/ingest.md` "Large pages"). A page of usual events (300–450 bytes) at the default
 * `--max-page-bytes` holds under 1,000,000.
 */
export const MAX_PAGE_EVENTS = 2_000_000;

/**
 * Turn the UTF-16 offsets the scanner found in `s` into byte offsets of its UTF-8 encoding
 * (after `base` bytes: a byte order mark the decoder removed), in place. Only for a body with
 * a character outside ASCII or a byte order mark (otherwise both are the same). The offsets
 * of an event lie within it, and events follow one another: one walk of the text.
 */
function toByteOffsets(s: string, at: Int32Array, base: number): void {
  let unit = 0;
  let byte = base;
  const order: number[] = [];
  for (let o = 0; o < at.length; o += EVENT_SLOTS) {
    order.length = 0;
    for (let k = 0; k < EVENT_SLOTS; k += 1) if (at[o + k]! >= 0) order.push(k);
    order.sort((x, y) => at[o + x]! - at[o + y]!);
    for (const k of order) {
      const target = at[o + k]!;
      while (unit < target) {
        const c = s.charCodeAt(unit);
        // A surrogate is half of a 4-byte character (the text was decoded strictly: no lone ones).
        byte += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 2 : 3;
        unit += 1;
      }
      at[o + k] = byte;
    }
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
const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const ZERO = 48;
const NINE = 57;

/**
 * The body is not JSON (RFC 8259): the first character that breaks its grammar is at
 * `position` (the length of the body when it ends too early). The message never quotes the body.
 */
export class JsonSyntaxError extends Error {
  constructor(readonly position: number) {
    super(`not JSON at character ${position}`);
    this.name = 'JsonSyntaxError';
  }
}

function syntax(at: number): never {
  throw new JsonSyntaxError(at);
}

/** Breaks of the contract found by the scanner; the message never quotes the body. */
function contract(what: string): UpstreamContractError {
  return new UpstreamContractError(`events response breaks the contract (${what})`);
}

/** Any control character: the usual body holds none, and one pass over it says so. */
const CONTROL = /[\u0000-\u001f]/;
/** Control characters JSON allows nowhere (white space aside, which it allows only outside strings). */
const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
const HEX = /^[0-9a-fA-F]{4}$/;

/**
 * The checks of the grammar that look at characters, not structure: no control character but
 * white space, and every backslash a valid escape. Escapes can only lie inside strings in a
 * body whose structure is valid, so one walk over the backslashes decides them.
 *
 * @returns whether the body holds a tab, CR or LF: white space that strings must not hold raw
 */
function checkCharacters(s: string): boolean {
  const control = CONTROL.exec(s);
  if (control !== null) {
    const bad = FORBIDDEN_CONTROL.exec(s.slice(control.index));
    if (bad) syntax(control.index + bad.index);
  }
  for (let i = s.indexOf('\\'); i >= 0;) {
    const c = s.charCodeAt(i + 1);
    if (c === 117) {
      if (!HEX.test(s.slice(i + 2, i + 6))) syntax(i);
      i = s.indexOf('\\', i + 6);
    } else if (c === QUOTE || c === BACKSLASH || c === 47 || c === 98 || c === 102 || c === 110 || c === 114 || c === 116) {
      i = s.indexOf('\\', i + 2);
    } else syntax(i);
  }
  return control !== null;
}

/**
 * Index just after the string whose opening quote is at `i`. With `strictWs` (a body that
 * holds a tab, CR or LF), the string must not hold one raw.
 */
function skipString(s: string, i: number, strictWs: boolean): number {
  let j = i;
  for (;;) {
    j = s.indexOf('"', j + 1);
    if (j < 0) syntax(s.length);
    let k = j - 1;
    let backslashes = 0;
    while (s.charCodeAt(k) === BACKSLASH) {
      backslashes += 1;
      k -= 1;
    }
    if ((backslashes & 1) === 0) break;
  }
  if (strictWs) {
    for (let k = i + 1; k < j; k += 1) {
      const c = s.charCodeAt(k);
      if (c === 9 || c === 10 || c === 13) syntax(k);
    }
  }
  return j + 1;
}

function skipWhitespace(s: string, i: number): number {
  let c = s.charCodeAt(i);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++i);
  return i;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** Index just after the number, `true`, `false` or `null` at `i`. */
function skipScalar(s: string, i: number): number {
  let c = s.charCodeAt(i);
  if (c === 116) return s.startsWith('true', i) ? i + 4 : syntax(i);
  if (c === 102) return s.startsWith('false', i) ? i + 5 : syntax(i);
  if (c === 110) return s.startsWith('null', i) ? i + 4 : syntax(i);
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  if (c === MINUS) c = s.charCodeAt(++i);
  if (c === ZERO) c = s.charCodeAt(++i);
  else if (c > ZERO && c <= NINE)
    do c = s.charCodeAt(++i);
    while (isDigit(c));
  else syntax(i);
  if (c === DOT) {
    c = s.charCodeAt(++i);
    if (!isDigit(c)) syntax(i);
    do c = s.charCodeAt(++i);
    while (isDigit(c));
  }
  if (c === 101 || c === 69) {
    c = s.charCodeAt(++i);
    if (c === PLUS || c === MINUS) c = s.charCodeAt(++i);
    if (!isDigit(c)) syntax(i);
    do c = s.charCodeAt(++i);
    while (isDigit(c));
  }
  return i;
}

/** Where the last member name read by {@link skipMemberName} ends (just after its closing quote). */
let nameEnd = 0;

/**
 * Start of the value after the member name whose opening quote should be at `i` (name, `:`,
 * white space); the name's end is left in {@link nameEnd}.
 */
function skipMemberName(s: string, i: number, ws: boolean): number {
  if (s.charCodeAt(i) !== QUOTE) syntax(i);
  nameEnd = skipString(s, i, ws);
  i = skipWhitespace(s, nameEnd);
  if (s.charCodeAt(i) !== COLON) syntax(i);
  return skipWhitespace(s, i + 1);
}

/**
 * Index just after the JSON value starting at `i`, checking its grammar at any depth (no
 * recursion: a stack of open containers).
 * @throws {JsonSyntaxError}
 */
function skipValue(s: string, i: number, ws: boolean): number {
  const open: number[] = [];
  for (;;) {
    // A value starts at i.
    const c = s.charCodeAt(i);
    if (c === QUOTE) i = skipString(s, i, ws);
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      const close = c === OPEN_OBJ ? CLOSE_OBJ : CLOSE_ARR;
      i = skipWhitespace(s, i + 1);
      if (s.charCodeAt(i) === close) i += 1;
      else {
        open.push(close);
        if (close === CLOSE_OBJ) i = skipMemberName(s, i, ws);
        continue;
      }
    } else i = skipScalar(s, i);
    // A value ended at i: close what it completes, or go on to the next one.
    for (;;) {
      if (open.length === 0) return i;
      i = skipWhitespace(s, i);
      const d = s.charCodeAt(i);
      const close = open[open.length - 1]!;
      if (d === COMMA) {
        i = skipWhitespace(s, i + 1);
        if (close === CLOSE_OBJ) i = skipMemberName(s, i, ws);
        break;
      }
      if (d !== close) syntax(i);
      open.pop();
      i += 1;
    }
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

/**
 * Walk the members of the object whose `{` is at `i`, calling `member(nameStart, nameEnd,
 * valueStart, valueEnd)` for each; returns the index just after the `}`. Values are checked
 * as {@link skipValue} checks them, unless `member` returns where one ends.
 */
function forEachMember(s: string, i: number, ws: boolean, member: (ka: number, kb: number, va: number) => number | undefined): number {
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_OBJ) return i + 1;
  for (;;) {
    const ka = i;
    const va = skipMemberName(s, i, ws);
    i = skipWhitespace(s, member(ka, nameEnd, va) ?? skipValue(s, va, ws));
    const c = s.charCodeAt(i);
    if (c === CLOSE_OBJ) return i + 1;
    if (c !== COMMA) syntax(i);
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

/** What {@link readEvents} found: offsets, where the array ends, the first break of the contract. */
interface EventsRead {
  at: Int32Array;
  end: number;
  problem?: UpstreamContractError;
}

/**
 * Read the events of the `events` array whose `[` is at `i`: {@link EVENT_SLOTS} UTF-16
 * offsets each, checking the grammar as it goes. A break of the contract (an event that is
 * not an object, without a usable id, with a non-string `eventType`, or with a read member
 * given twice) is noted, not thrown, so that a grammar error later in the body still decides.
 * @throws {JsonSyntaxError}
 */
function readEvents(s: string, i: number, ws: boolean): EventsRead {
  let at: Int32Array = new Int32Array(EVENT_SLOTS * 64);
  let n = 0;
  let problem: UpstreamContractError | undefined;
  /** Per read member (EVENT_NAMES order): start and end of its value, -1 when absent. */
  const v = new Int32Array(EVENT_NAMES.length * 2);
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_ARR) return { at: at.subarray(0, 0), end: i + 1 };
  for (;;) {
    const start = i;
    n += 1;
    if (n > MAX_PAGE_EVENTS) throw contract(`the page holds more than ${MAX_PAGE_EVENTS} events`);
    if (s.charCodeAt(i) !== OPEN_OBJ) {
      i = skipValue(s, i, ws);
      problem ??= contract(`event ${n} is not an object`);
    } else {
      i = readEventObject(s, i, ws, v);
      if (duplicateMember >= 0) problem ??= twice(`event ${n}`, EVENT_NAMES, duplicateMember);
      problem ??= eventProblem(s, v, n);
      if (problem === undefined) at = record(at, n, start, i, s, v);
    }
    i = skipWhitespace(s, i);
    const c = s.charCodeAt(i);
    // A view, not a copy: a copy would hold the offsets twice at the end of a large page.
    if (c === CLOSE_ARR) return { at: at.subarray(0, n * EVENT_SLOTS), end: i + 1, ...(problem ? { problem } : {}) };
    if (c !== COMMA) syntax(i);
    i = skipWhitespace(s, i + 1);
  }
}

/** The first read member given twice in the object last read by {@link readEventObject} (its {@link EVENT_NAMES} index), -1 for none. */
let duplicateMember = -1;

/**
 * Index just after the event object whose `{` is at `i`, checking its grammar: the start and
 * end of each read member's value are left in `v` ({@link EVENT_NAMES} order, -1 when
 * absent; the last one given counts), a read member given twice in {@link duplicateMember}.
 * @throws {JsonSyntaxError}
 */
function readEventObject(s: string, i: number, ws: boolean, v: Int32Array): number {
  v.fill(-1);
  duplicateMember = -1;
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_OBJ) return i + 1;
  for (;;) {
    const ka = i;
    const va = skipMemberName(s, i, ws);
    const kb = nameEnd;
    const vb = skipValue(s, va, ws);
    const k = nameIndex(s, ka, kb, EVENT_NAMES);
    if (k >= 0) {
      if (v[2 * k]! >= 0 && duplicateMember < 0) duplicateMember = k;
      v[2 * k] = va;
      v[2 * k + 1] = vb;
    }
    i = skipWhitespace(s, vb);
    const c = s.charCodeAt(i);
    if (c === CLOSE_OBJ) return i + 1;
    if (c !== COMMA) syntax(i);
    i = skipWhitespace(s, i + 1);
  }
}

/** What breaks the contract in the read members `v` of event `n`, if anything. */
function eventProblem(s: string, v: Int32Array, n: number): UpstreamContractError | undefined {
  const ia = v[0]!;
  const ib = v[1]!;
  if (ia < 0 || s.charCodeAt(ia) !== QUOTE || ib - ia < 3) return contract(`event ${n} has no string id`);
  if (hasEscape(s, ia, ib)) {
    const id = JSON.parse(s.slice(ia, ib)) as string;
    if (id === '' || !id.isWellFormed()) return contract(`event ${n} has an id that is empty or not valid Unicode`);
  }
  if (v[2]! >= 0 && !isNull(s, v[2]!, v[3]!) && s.charCodeAt(v[2]!) !== QUOTE) return contract(`event ${n} has a non-string eventType`);
  return undefined;
}

/** `at` with event `n`'s offsets (its span and read members `v`) set, grown when full. */
function record(at: Int32Array, n: number, start: number, end: number, s: string, v: Int32Array): Int32Array {
  if (at.length < n * EVENT_SLOTS) {
    // Half again, not twice: the old and the new array are both held while it grows.
    const grown = new Int32Array(Math.ceil((at.length * 1.5) / EVENT_SLOTS) * EVENT_SLOTS);
    grown.set(at);
    at = grown;
  }
  let ta = -1;
  let tb = -1;
  if (v[2]! >= 0 && !isNull(s, v[2]!, v[3]!)) {
    ta = v[2]!;
    tb = v[3]!;
  } else if (v[4]! >= 0 && s.charCodeAt(v[4]!) === QUOTE) {
    ta = v[4]!;
    tb = v[5]!;
  }
  const o = (n - 1) * EVENT_SLOTS;
  at[o] = start;
  at[o + 1] = end;
  at[o + 2] = v[0]!;
  at[o + 3] = v[1]!;
  at[o + 4] = ta;
  at[o + 5] = tb;
  const pa = v[6]!;
  at[o + 6] = pa >= 0 && !isNull(s, pa, v[7]!) ? pa : -1;
  at[o + 7] = v[7]!;
  const ma = v[8]!;
  at[o + 8] = ma >= 0 && !isNull(s, ma, v[9]!) ? ma : -1;
  at[o + 9] = v[9]!;
  return at;
}

/** Whether the value `s[a, b)` is the literal null. */
function isNull(s: string, a: number, b: number): boolean {
  return b - a === 4 && s.startsWith('null', a);
}

/**
 * Read an events response body (docs/upstream.md "Reading the stream"): the grammar check
 * (RFC 8259, what `JSON.parse` accepts) and the reading of the members the job uses, in one
 * walk.
 *
 * @param body the whole body, decoded strictly as UTF-8
 * @param bytes the same body as received (its UTF-8 bytes); encoded from `body` when not given
 * @returns the events as byte offsets into `bytes` (texts as sent), and the pagination
 * @throws {JsonSyntaxError} when the body is not JSON (an unreadable body: retried)
 * @throws {UpstreamContractError} (exit 6) when the body is JSON but breaks the contract: not
 *   an object, `events` not an array or missing, `pagination` missing or not an object,
 *   `nextPage` not a well-formed string, `hasNextPage` not a boolean, a read member given
 *   twice, an event that is not an object, without a non-empty well-formed string `id`, or
 *   with a non-string `eventType`. The message never quotes the body.
 */
export function readEventsPage(body: string, bytes?: Buffer): PageContent {
  const s = body;
  const ws = checkCharacters(s);
  let i = skipWhitespace(s, 0);
  if (i >= s.length) syntax(i);
  // Breaks of the contract are thrown once the whole body is known to be JSON.
  let problem: UpstreamContractError | undefined;
  let events: EventsRead | undefined;
  /** Where the value of `events` and of `pagination` starts, -1 when absent. */
  const found = [-1, -1];
  if (s.charCodeAt(i) !== OPEN_OBJ) {
    i = skipValue(s, i, ws);
    problem = contract('(root): not an object');
  } else {
    i = forEachMember(s, i, ws, (ka, kb, va) => {
      const k = nameIndex(s, ka, kb, PAGE_NAMES);
      if (k < 0) return undefined;
      if (found[k]! >= 0) {
        problem ??= twice('the page', PAGE_NAMES, k);
        return undefined;
      }
      found[k] = va;
      if (k === 0 && s.charCodeAt(va) === OPEN_ARR) {
        events = readEvents(s, va, ws);
        return events.end;
      }
      return undefined;
    });
  }
  if (skipWhitespace(s, i) < s.length) syntax(skipWhitespace(s, i));
  if (problem) throw problem;
  const [ea, pa] = found as [number, number];
  if (ea < 0) throw contract('events: missing');
  if (events === undefined) throw contract('events: not an array');
  if (pa < 0) throw contract('pagination: missing');
  if (s.charCodeAt(pa) !== OPEN_OBJ) throw contract('pagination: not an object');
  const p = [-1, -1, -1, -1];
  forEachMember(s, pa, ws, (ka, kb, va) => {
    const k = nameIndex(s, ka, kb, PAGINATION_NAMES);
    const vb = skipValue(s, va, ws);
    if (k < 0) return vb;
    if (p[2 * k]! >= 0) throw twice('pagination', PAGINATION_NAMES, k);
    p[2 * k] = va;
    p[2 * k + 1] = vb;
    return vb;
  });
  const [na, nb, ha, hb] = p as [number, number, number, number];
  if (na < 0 || s.charCodeAt(na) !== QUOTE) throw contract('pagination.nextPage: not a string');
  // A copy, not a slice: the cursor outlives the page, and a slice keeps the whole body alive.
  const nextPage = Buffer.from(stringValue(s, na, nb), 'utf16le').toString('utf16le');
  if (!nextPage.isWellFormed()) throw contract('pagination.nextPage: not valid Unicode');
  let hasNextPage: boolean;
  if (hb - ha === 4 && s.startsWith('true', ha)) hasNextPage = true;
  else if (hb - ha === 5 && s.startsWith('false', ha)) hasNextPage = false;
  else throw contract('pagination.hasNextPage: not a boolean');
  if (events.problem) throw events.problem;
  const at = events.at;
  const raw = bytes ?? Buffer.from(s, 'utf8');
  // The UTF-8 decoder drops a leading byte order mark: the bytes keep it.
  const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf && s.charCodeAt(0) !== 0xfeff ? 3 : 0;
  if (raw.length !== s.length) toByteOffsets(s, at, bom);
  return { events: new PageEvents(raw, at), nextPage, hasNextPage };
}
