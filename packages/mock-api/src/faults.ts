/**
 * Fault injection for the simulator (the fault tests of docs/contracts.md "Guarantees"). A
 * {@link FaultRule} names an endpoint, a kind and its parameters; the server asks the
 * {@link FaultRegistry} at three phases of each request whether a rule fires:
 *
 * - `transport`: before anything else (status bursts, latency, hangs, stalls, resets,
 *   truncation, drip-feeding, non-JSON, HTML, oversized bodies, redirects) — an
 *   infrastructure fault in front of the API, counted on every request to the endpoint;
 * - `auth` (events only): after the bearer token was accepted (`revokeTokens`, `always401`);
 * - `content`: after a clean answer was computed — on events, a clean page (contract
 *   breaks, duplicates, hostile encodings, `nextPage` corruptions, padding); on the token
 *   endpoint, a parsed request (`echoSecret`) or a grant (`badToken`); on the site list, a
 *   200 answer (`loneSurrogate`) — counted only on requests the fault can apply to.
 *
 * A faulted response never changes the simulator's state: the stream, the visible count
 * and cursors are untouched, so the same cursor later returns the proper page.
 *
 * @module
 */
import { ConfigError } from './errors.js';

/** The endpoint a rule applies to: `/rpi/events`, `/oauth/token` or the site list. */
export type FaultEndpoint = 'events' | 'token' | 'sites';

/** What goes wrong. See {@link FaultRule} for each kind's parameters. */
export type FaultKind =
  | 'status'
  | 'latency'
  | 'headersNever'
  | 'bodyStall'
  | 'resetMidBody'
  | 'truncated'
  | 'nonJson'
  | 'html200'
  | 'oversized'
  | 'redirect'
  | 'revokeTokens'
  | 'always401'
  | 'missingPagination'
  | 'eventsNotArray'
  | 'eventWithoutId'
  | 'duplicateIdWithinPage'
  | 'duplicateIdAcrossPages'
  | 'sameIdOtherPayload'
  | 'nextPage'
  | 'loneSurrogate'
  | 'duplicateEventsKey'
  | 'escapedKeys'
  | 'duplicateIdKey'
  | 'reorderedRedelivery'
  | 'emptyPagesForever'
  | 'padEvents'
  | 'drip'
  | 'echoSecret'
  | 'badToken'
  | 'tokenLifetime';

/** Corruptions of `pagination.nextPage` (kind `nextPage`, parameter `variant`). */
export type NextPageVariant =
  'otherOrigin' | 'otherScheme' | 'otherPort' | 'userInfo' | 'relative' | 'unchanged' | 'cycle' | 'longCycle' | 'oversizedUrl';

/** Malformed access tokens (kind `badToken`, parameter `variant`). */
export type BadTokenVariant = 'crlf' | 'nonAscii' | 'tooLong';

/** When in a request a kind is decided (see the module comment). */
export type FaultPhase = 'transport' | 'auth' | 'content' | 'immediate';

/**
 * One fault rule.
 *
 * Kinds and their parameters:
 * - `status`: answer `code` (e.g. 429, 500, 502, 503; on `token` also 400/401) with JSON
 *   body `{"error": …}` or `body`; `retryAfter` adds `Retry-After` (seconds as a number,
 *   or an HTTP-date string).
 * - `latency`: wait `ms` milliseconds, then answer normally.
 * - `headersNever`: accept the request and never answer (until the client gives up or
 *   the server closes).
 * - `bodyStall`: send headers (full `Content-Length`) and the first `at` bytes (default
 *   half the body), then stall forever.
 * - `resetMidBody`: send headers and the first `at` bytes (default half), then destroy the socket.
 * - `truncated`: send headers with the full `Content-Length` (or chunked with
 *   `chunked: true`) and only the first `at` bytes (default half), then end the
 *   connection cleanly (FIN, no terminating chunk).
 * - `nonJson`: 200, `application/json`, a body that is not JSON (`body` to choose it).
 * - `html200`: 200, `text/html`, an HTML error page.
 * - `oversized`: 200, `application/json`, a valid-looking events page of `size` bytes
 *   (default 64 MiB), streamed.
 * - `redirect`: 302 with `Location: url` (default `http://127.0.0.1:9/trap`).
 * - `revokeTokens` (events): all tokens issued so far become invalid, this request gets 401.
 * - `always401` (events): 401 even with a valid token; `times` defaults to `Infinity`.
 * - `missingPagination`, `eventsNotArray`, `eventWithoutId` (events): a page that parses
 *   but breaks the contract (no `pagination`; `events` an object; one event without `id`).
 * - `duplicateIdWithinPage` (events): one event of the page appears twice in it.
 * - `duplicateIdAcrossPages` (events): the page starts with an already-served matching
 *   event (the last one before the cursor), same payload.
 * - `sameIdOtherPayload` (events): an already-served id with a changed `message`.
 * - `nextPage` (events, `variant`): `otherOrigin` (to `url`'s origin, default
 *   `http://127.0.0.1:9`), `otherScheme` (https), `otherPort` (`port`, default port+1),
 *   `userInfo` (`http://user:pass@host:port/…`), `relative` (path and query only),
 *   `unchanged` (the requested URL, `hasNextPage: true`), `cycle` (an earlier requested
 *   URL of this filter, `hasNextPage: true`), `longCycle` (the page keeps its events and
 *   points to cursor URL A; A, B, C, … (`length` distinct URLs, default 3, at least 2)
 *   each answer `{"events":[],"pagination":{"nextPage":<the next one>,"hasNextPage":true}}`
 *   and the last points back to A — a cursor cycle longer than 1; those URLs answer so
 *   for as long as the server runs, whatever the rules), `oversizedUrl` (`size`
 *   characters, default 100,000).
 *
 * Hostile encodings of a page (events, content phase; the page is otherwise the clean one):
 * - `loneSurrogate` (events, `event`: 1-based index in the page, default 1): that event's
 *   message gets `"note":"x\ud800y"` as its last member — the 6 ASCII characters
 *   `\ud800` as JSON escape text: valid for `JSON.parse`, not valid Unicode.
 * - `duplicateEventsKey` (events): `{"events":[…the page…],"events":[],"pagination":…}`
 *   (`JSON.parse` keeps the empty array).
 * - `escapedKeys` (events): the keys spelt with `\u` escapes where it can: top-level
 *   `"\u0065vents"` and `"\u0070agination"`, each event's `"\u0069d"` and
 *   `"\u0065ventType"` (valid JSON, the same values).
 * - `duplicateIdKey` (events, `event`, default 1): that event carries `"id"` twice: its own
 *   first, then `"id":"<id>-dup"` as the envelope's last member.
 * - `reorderedRedelivery` (events): the page starts with the last matching event before
 *   it (already delivered) re-serialised with its keys in reverse order at every level
 *   and extra whitespace (`{ "k" : v , … }`): the same JSON value, other bytes. Applies
 *   only to a page that has a previous matching event.
 * - `emptyPagesForever` (events; `times` defaults to `Infinity`): the request gets 200
 *   `{"events":[],"pagination":{"nextPage":"<base URL>/rpi/events?c=<n>","hasNextPage":true}}`
 *   with a new `n` every time; a request to such a `?c=` URL gets the same answer for as
 *   long as the server runs, whatever the rules.
 * - `padEvents` (events, `bytes`, required): every event's message gets a last member
 *   `"pad":"xxx…"` so that the page is exactly `bytes` bytes (when the clean page is
 *   smaller; otherwise `"pad":""`). Sent in pieces over one shared pad buffer, so large
 *   pages (e.g. 30 × 20 MB with `times=30`) cost little memory and time.
 * - `drip` (any endpoint, transport phase; `ms`, default 5000): the clean answer with its
 *   full `Content-Length`, headers and first byte at once, then one byte every `ms` ms
 *   (no gap between bytes exceeds `ms`).
 *
 * Token endpoint (content phase):
 * - `echoSecret`: 400 `{"error":"invalid_client: <posted client_secret>","error_description":
 *   "client <posted client_id> with secret <posted client_secret> refused"}` (missing
 *   fields echo as empty text). Applies to requests whose body parsed to an object.
 * - `badToken` (`variant`: `crlf` | `nonAscii` | `tooLong`): 200 token response (as a
 *   grant: `expires_in`, `token_type`) whose `access_token` contains `"\r\n"`, contains
 *   `"é"`, or is 102,400 characters long. Applies to requests that would be granted; the
 *   token is not accepted by the events endpoint.
 * - `tokenLifetime` (token, `seconds`): applied at once when added: tokens issued from now
 *   on live `seconds` s (`expires_in`); not a per-request fault.
 *
 * Site list (content phase):
 * - `loneSurrogate` (sites): the first site record's `displayName` becomes `"x\ud800y"`
 *   (escape text, as above). Applies to 200 answers with at least one site.
 */
export interface FaultRule {
  endpoint: FaultEndpoint;
  kind: FaultKind;
  /** How many requests it fires on; default 1 (`always401`, `emptyPagesForever`: Infinity). */
  times?: number;
  /** Let the first `after` matching requests pass untouched; default 0. */
  after?: number;
  /** HTTP status code (kind `status`). */
  code?: number;
  /** `Retry-After`: delay in seconds, or an HTTP-date string (kind `status`). */
  retryAfter?: number | string;
  /** Response body text (kinds `status`, `nonJson`). */
  body?: string;
  /** Delay in milliseconds (kind `latency`), or between two bytes (kind `drip`, default 5000). */
  ms?: number;
  /** Bytes of the body sent before the break (kinds `bodyStall`, `resetMidBody`, `truncated`). */
  at?: number;
  /** `truncated` with chunked transfer encoding instead of `Content-Length`. */
  chunked?: boolean;
  /** Size in bytes (`oversized`) or characters (`nextPage` `oversizedUrl`). */
  size?: number;
  /** Which `nextPage` corruption (kind `nextPage`) or which malformed token (kind `badToken`). */
  variant?: NextPageVariant | BadTokenVariant;
  /** Target URL (kinds `redirect`, `nextPage` `otherOrigin`). */
  url?: string;
  /** Port (kind `nextPage` `otherPort`). */
  port?: number;
  /** Token lifetime in seconds (kind `tokenLifetime`). */
  seconds?: number;
  /** 1-based index of the event in the page (kinds `loneSurrogate`, `duplicateIdKey`; default 1). */
  event?: number;
  /** Number of distinct cursor URLs in the cycle (kind `nextPage` `longCycle`; default 3, at least 2). */
  length?: number;
  /** Page size to pad to, in bytes (kind `padEvents`). */
  bytes?: number;
}

/** A rule still able to fire, with its counters. */
export interface PendingFault {
  rule: FaultRule;
  /** Matching requests seen so far. */
  seen: number;
  /** Times fired so far. */
  fired: number;
  /** Times it can still fire (may be Infinity). */
  remaining: number;
}

/** One firing of a rule, in order. */
export interface FiredFault {
  endpoint: FaultEndpoint;
  kind: FaultKind;
  variant?: NextPageVariant | BadTokenVariant;
  /** Request path without query. */
  path: string;
  /** Epoch ms. */
  at: number;
}

/** Runtime fault control of a running simulator (`MockApi.faults`). */
export interface FaultController {
  /** Adds a rule (validated; throws {@link ConfigError} when invalid). Rules fire in the order added. */
  add(rule: FaultRule): void;
  /** Removes every rule (already hanging responses stay until the client or `close()` ends them). */
  clear(): void;
  /** Rules that can still fire. */
  pending(): PendingFault[];
  /** Every firing so far, oldest first (bounded to the last 10,000). */
  fired(): FiredFault[];
  /** Invalidates all tokens issued so far, now (docs/upstream.md "Tokens": the next events request gets 401). */
  revokeTokens(): void;
  /** Sets the lifetime (seconds, `expires_in`) of tokens issued from now on (docs/upstream.md "Tokens"). */
  setTokenLifetime(seconds: number): void;
}

/** Phase of each kind. */
export const FAULT_PHASE: Readonly<Record<FaultKind, FaultPhase>> = {
  status: 'transport',
  latency: 'transport',
  headersNever: 'transport',
  bodyStall: 'transport',
  resetMidBody: 'transport',
  truncated: 'transport',
  nonJson: 'transport',
  html200: 'transport',
  oversized: 'transport',
  redirect: 'transport',
  revokeTokens: 'auth',
  always401: 'auth',
  missingPagination: 'content',
  eventsNotArray: 'content',
  eventWithoutId: 'content',
  duplicateIdWithinPage: 'content',
  duplicateIdAcrossPages: 'content',
  sameIdOtherPayload: 'content',
  nextPage: 'content',
  loneSurrogate: 'content',
  duplicateEventsKey: 'content',
  escapedKeys: 'content',
  duplicateIdKey: 'content',
  reorderedRedelivery: 'content',
  emptyPagesForever: 'content',
  padEvents: 'content',
  drip: 'transport',
  echoSecret: 'content',
  badToken: 'content',
  tokenLifetime: 'immediate',
};

const ENDPOINTS: readonly FaultEndpoint[] = ['events', 'token', 'sites'];

/** Endpoints each kind applies to; a kind not listed here applies to every endpoint (transport kinds). */
const KIND_ENDPOINTS: Partial<Record<FaultKind, readonly FaultEndpoint[]>> = {
  revokeTokens: ['events'],
  always401: ['events'],
  missingPagination: ['events'],
  eventsNotArray: ['events'],
  eventWithoutId: ['events'],
  duplicateIdWithinPage: ['events'],
  duplicateIdAcrossPages: ['events'],
  sameIdOtherPayload: ['events'],
  nextPage: ['events'],
  loneSurrogate: ['events', 'sites'],
  duplicateEventsKey: ['events'],
  escapedKeys: ['events'],
  duplicateIdKey: ['events'],
  reorderedRedelivery: ['events'],
  emptyPagesForever: ['events'],
  padEvents: ['events'],
  echoSecret: ['token'],
  badToken: ['token'],
  tokenLifetime: ['token'],
};

/** Kinds whose `times` defaults to `Infinity` instead of 1. */
const FOREVER_KINDS: ReadonlySet<FaultKind> = new Set(['always401', 'emptyPagesForever']);

const VARIANTS: readonly NextPageVariant[] = [
  'otherOrigin',
  'otherScheme',
  'otherPort',
  'userInfo',
  'relative',
  'unchanged',
  'cycle',
  'longCycle',
  'oversizedUrl',
];
const TOKEN_VARIANTS: readonly BadTokenVariant[] = ['crlf', 'nonAscii', 'tooLong'];
const NUMERIC_KEYS = new Set(['times', 'after', 'code', 'ms', 'at', 'size', 'port', 'seconds', 'event', 'length', 'bytes']);
const STRING_KEYS = new Set(['body', 'variant', 'url']);
const ALL_KEYS = new Set([...NUMERIC_KEYS, ...STRING_KEYS, 'retryAfter', 'chunked']);
const MAIN_PARAM: Partial<Record<FaultKind, keyof FaultRule>> = {
  status: 'code',
  latency: 'ms',
  bodyStall: 'at',
  resetMidBody: 'at',
  truncated: 'at',
  oversized: 'size',
  nextPage: 'variant',
  redirect: 'url',
  nonJson: 'body',
  tokenLifetime: 'seconds',
  loneSurrogate: 'event',
  duplicateIdKey: 'event',
  padEvents: 'bytes',
  drip: 'ms',
  badToken: 'variant',
};

const isNonNegInt = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** The parameters of a `status` fault: an HTTP status code, and a `Retry-After` value if any. */
function checkStatusFault(rule: FaultRule, bad: (why: string) => never): void {
  if (typeof rule.code !== 'number' || !Number.isInteger(rule.code) || rule.code < 100 || rule.code > 599)
    bad('code must be an HTTP status 100-599');
  if (
    rule.retryAfter !== undefined &&
    !(isNonNegInt(rule.retryAfter) || (typeof rule.retryAfter === 'string' && rule.retryAfter.length > 0))
  )
    bad('retryAfter must be seconds (integer) or an HTTP-date');
}

/** The parameters of a fault on the response (status, timing, body, token): `bad` throws. */
function checkResponseFault(rule: FaultRule, out: FaultRule, bad: (why: string) => never): void {
  switch (rule.kind) {
    case 'status':
      checkStatusFault(rule, bad);
      break;
    case 'latency':
      if (!isNonNegInt(rule.ms)) bad('ms must be a non-negative integer');
      break;
    case 'bodyStall':
    case 'resetMidBody':
    case 'truncated':
      if (rule.at !== undefined && !isNonNegInt(rule.at)) bad('at must be a non-negative integer');
      break;
    case 'oversized':
      if (rule.size !== undefined && !(isNonNegInt(rule.size) && rule.size >= 1024)) bad('size must be an integer ≥ 1024');
      break;
    case 'drip':
      if (rule.ms !== undefined && !(isNonNegInt(rule.ms) && rule.ms >= 1)) bad('ms must be a positive integer');
      out.ms = rule.ms ?? 5000;
      break;
    case 'badToken':
      if (rule.variant === undefined || !(TOKEN_VARIANTS as readonly string[]).includes(rule.variant))
        bad(`variant must be one of ${TOKEN_VARIANTS.join(', ')}`);
      break;
    case 'tokenLifetime':
      if (typeof rule.seconds !== 'number' || !Number.isInteger(rule.seconds) || rule.seconds < 1)
        bad('seconds must be a positive integer');
      break;
    default:
      break;
  }
}

/** The parameters of a fault on the events page (its events or its pagination), defaults into `out`: `bad` throws. */
function checkPageFault(rule: FaultRule, out: FaultRule, bad: (why: string) => never): void {
  switch (rule.kind) {
    case 'nextPage':
      if (rule.variant === undefined || !(VARIANTS as readonly string[]).includes(rule.variant))
        bad(`variant must be one of ${VARIANTS.join(', ')}`);
      if (rule.port !== undefined && !(isNonNegInt(rule.port) && rule.port <= 65535)) bad('port must be 0-65535');
      if (rule.size !== undefined && !isNonNegInt(rule.size)) bad('size must be a non-negative integer');
      if (rule.length !== undefined && !(isNonNegInt(rule.length) && rule.length >= 2)) bad('length must be an integer ≥ 2');
      if (rule.variant === 'longCycle') out.length = rule.length ?? 3;
      break;
    case 'loneSurrogate':
    case 'duplicateIdKey':
      if (rule.event !== undefined && !(isNonNegInt(rule.event) && rule.event >= 1))
        bad('event must be a positive integer (1-based index in the page)');
      if (rule.endpoint === 'events') out.event = rule.event ?? 1;
      break;
    case 'padEvents':
      if (!(isNonNegInt(rule.bytes) && rule.bytes! >= 1)) bad('bytes must be a positive integer');
      break;
    default:
      break;
  }
}

/**
 * Validates a rule and fills defaults.
 *
 * @throws ConfigError naming the problem
 */
export function validateFaultRule(rule: FaultRule): FaultRule {
  const bad = (why: string): never => {
    throw new ConfigError(`invalid fault rule (${rule.endpoint}:${rule.kind}): ${why}`);
  };
  if (!ENDPOINTS.includes(rule.endpoint)) bad(`endpoint must be one of ${ENDPOINTS.join(', ')}`);
  const phase = FAULT_PHASE[rule.kind];
  if (phase === undefined) bad(`unknown kind; one of ${Object.keys(FAULT_PHASE).join(', ')}`);
  const endpoints = KIND_ENDPOINTS[rule.kind];
  if (endpoints !== undefined && !endpoints.includes(rule.endpoint))
    bad(`this kind applies to the ${endpoints.join(' and ')} endpoint only`);
  const times = rule.times ?? (FOREVER_KINDS.has(rule.kind) ? Infinity : 1);
  if (!(times === Infinity || (Number.isInteger(times) && times >= 1))) bad('times must be a positive integer or Infinity');
  const after = rule.after ?? 0;
  if (!isNonNegInt(after)) bad('after must be a non-negative integer');
  const out: FaultRule = { ...rule, times, after };
  checkResponseFault(rule, out, bad);
  checkPageFault(rule, out, bad);
  if (rule.url !== undefined) {
    try {
      new URL(rule.url);
    } catch {
      bad('url must be an absolute URL');
    }
  }
  return out;
}

/**
 * Parses a `--fault` flag value into a rule (not yet validated; {@link FaultController.add} validates).
 *
 * Format: `<endpoint>:<kind>[=<main>][:<key>=<value>]…`
 * - endpoint: `events` | `token` | `sites`; kind: a {@link FaultKind};
 * - `=<main>` sets the kind's main parameter: `status=503` (code), `latency=2000` (ms),
 *   `truncated=120` / `bodyStall=…` / `resetMidBody=…` (at), `oversized=…` (size),
 *   `nextPage=otherOrigin` (variant), `redirect=<url>` (url), `nonJson=<text>` (body),
 *   `tokenLifetime=2` (seconds), `loneSurrogate=2` / `duplicateIdKey=2` (event),
 *   `padEvents=20000000` (bytes), `drip=50` (ms), `badToken=crlf` (variant);
 * - keys: `times` (integer or `inf`), `after`, `code`, `retryAfter` (seconds or HTTP-date),
 *   `body`, `ms`, `at`, `chunked` (`true`/`false`), `size`, `variant`, `url`, `port`, `seconds`,
 *   `event`, `length`, `bytes`.
 *   A value may contain `:` (URLs): a segment that does not start with `<known key>=`
 *   continues the previous value.
 *
 * Examples: `events:status=503:times=3`, `events:status=429:retryAfter=2`,
 * `token:status=503:times=2`, `events:truncated=100`, `events:resetMidBody`,
 * `events:nextPage=otherOrigin:url=http://127.0.0.1:9999`, `events:always401`,
 * `token:tokenLifetime=2`, `events:latency=1500:after=2:times=inf`,
 * `events:loneSurrogate:event=3`, `events:nextPage=longCycle:length=4`,
 * `events:padEvents=20000000:times=30`, `events:drip=200`, `events:emptyPagesForever`,
 * `token:echoSecret`, `token:badToken=tooLong`, `sites:loneSurrogate`.
 *
 * @throws ConfigError when the text cannot be parsed
 */
export function parseFaultSpec(text: string): FaultRule {
  const bad = (why: string): never => {
    throw new ConfigError(`invalid fault spec "${text.slice(0, 200)}": ${why}`, {
      hint: 'format <endpoint>:<kind>[=<value>][:<key>=<value>]..., e.g. events:status=503:times=3',
    });
  };
  const parts = text.trim().split(':');
  const endpoint = parts[0] as FaultEndpoint;
  if (!ENDPOINTS.includes(endpoint)) bad(`endpoint must be one of ${ENDPOINTS.join(', ')}`);
  const kindPart = parts[1] ?? bad('missing kind');
  const eq = kindPart.indexOf('=');
  const kind = (eq < 0 ? kindPart : kindPart.slice(0, eq)) as FaultKind;
  if (FAULT_PHASE[kind] === undefined) bad(`unknown kind "${kind}"`);
  const pairs: Array<[string, string]> = [];
  let main: string | undefined = eq < 0 ? undefined : kindPart.slice(eq + 1);
  for (const seg of parts.slice(2)) {
    const m = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/s.exec(seg);
    if (m && ALL_KEYS.has(m[1]!)) pairs.push([m[1]!, m[2]!]);
    else if (pairs.length > 0) pairs[pairs.length - 1]![1] += `:${seg}`;
    else if (main !== undefined) main += `:${seg}`;
    else bad(`unexpected segment "${seg.slice(0, 50)}"`);
  }
  const rule: FaultRule = { endpoint, kind };
  const set = (key: string, value: string): void => {
    const r = rule as unknown as Record<string, unknown>;
    if (key === 'times' && /^(inf|infinity)$/i.test(value)) r[key] = Infinity;
    else if (NUMERIC_KEYS.has(key)) {
      if (!/^\d+$/.test(value)) bad(`${key} must be a non-negative integer`);
      r[key] = Number(value);
    } else if (key === 'retryAfter') r[key] = /^\d+$/.test(value) ? Number(value) : value;
    else if (key === 'chunked') {
      if (value !== 'true' && value !== 'false') bad('chunked must be true or false');
      r[key] = value === 'true';
    } else r[key] = value;
  };
  if (main !== undefined) {
    const key = MAIN_PARAM[kind] ?? bad(`kind ${kind} takes no main value`);
    set(key, main);
  }
  for (const [k, v] of pairs) set(k, v);
  return rule;
}

interface Slot {
  rule: FaultRule;
  seen: number;
  fired: number;
}

/** Hooks the registry calls for immediate rules. */
export interface FaultHooks {
  revokeTokens(): void;
  setTokenLifetime(seconds: number): void;
  now(): number;
}

/** The simulator's {@link FaultController}, plus the server-side `take`. */
export class FaultRegistry implements FaultController {
  private slots: Slot[] = [];
  private readonly history: FiredFault[] = [];

  constructor(private readonly hooks: FaultHooks) {}

  add(rule: FaultRule): void {
    const r = validateFaultRule(rule);
    if (r.kind === 'tokenLifetime') {
      this.hooks.setTokenLifetime(r.seconds!);
      return;
    }
    this.slots.push({ rule: r, seen: 0, fired: 0 });
  }

  clear(): void {
    this.slots = [];
  }

  pending(): PendingFault[] {
    return this.slots.map((s) => ({ rule: { ...s.rule }, seen: s.seen, fired: s.fired, remaining: (s.rule.times ?? 1) - s.fired }));
  }

  fired(): FiredFault[] {
    return [...this.history];
  }

  revokeTokens(): void {
    this.hooks.revokeTokens();
  }

  setTokenLifetime(seconds: number): void {
    if (!Number.isInteger(seconds) || seconds < 1) throw new ConfigError('token lifetime must be a positive integer (seconds)');
    this.hooks.setTokenLifetime(seconds);
  }

  /**
   * Counts a request at `phase` and returns the first rule that fires, if any. Every rule
   * of that endpoint and phase that could apply (per `canApply`) counts the request.
   */
  take(
    endpoint: FaultEndpoint,
    phase: FaultPhase,
    path: string,
    canApply: (rule: FaultRule) => boolean = () => true,
  ): FaultRule | undefined {
    let chosen: Slot | undefined;
    for (const s of this.slots) {
      if (s.rule.endpoint !== endpoint || FAULT_PHASE[s.rule.kind] !== phase || !canApply(s.rule)) continue;
      s.seen++;
      if (chosen === undefined && s.seen > (s.rule.after ?? 0) && s.fired < (s.rule.times ?? 1)) chosen = s;
    }
    if (chosen === undefined) return undefined;
    chosen.fired++;
    if (chosen.fired >= (chosen.rule.times ?? 1)) this.slots = this.slots.filter((s) => s !== chosen);
    const entry: FiredFault = { endpoint, kind: chosen.rule.kind, path, at: this.hooks.now() };
    if (chosen.rule.variant !== undefined) entry.variant = chosen.rule.variant;
    this.history.push(entry);
    if (this.history.length > 10_000) this.history.splice(0, this.history.length - 10_000);
    return chosen.rule;
  }
}
