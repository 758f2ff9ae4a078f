/**
 * Fault injection for the simulator (RELIABILITY.md "Tests worth having"). A
 * {@link FaultRule} names an endpoint, a kind and its parameters; the server asks the
 * {@link FaultRegistry} at three phases of each request whether a rule fires:
 *
 * - `transport`: before anything else (status bursts, latency, hangs, stalls, resets,
 *   truncation, non-JSON, HTML, oversized bodies, redirects) — an infrastructure fault in
 *   front of the API, counted on every request to the endpoint;
 * - `auth` (events only): after the bearer token was accepted (`revokeTokens`, `always401`);
 * - `content` (events only): after a clean page was computed (contract breaks, duplicates,
 *   `nextPage` corruptions) — counted only on requests that produce a page the fault can
 *   apply to.
 *
 * A faulted response never changes the simulator's state: the stream, the visible count
 * and cursors are untouched, so the same cursor later returns the proper page.
 *
 * @module
 */
import { ConfigError } from '../errors.js';

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
  | 'tokenLifetime';

/** Corruptions of `pagination.nextPage` (kind `nextPage`, parameter `variant`). */
export type NextPageVariant = 'otherOrigin' | 'otherScheme' | 'otherPort' | 'userInfo' | 'relative' | 'unchanged' | 'cycle' | 'oversizedUrl';

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
 *   URL of this filter, `hasNextPage: true`), `oversizedUrl` (`size` characters, default 100,000).
 * - `tokenLifetime` (token, `seconds`): applied at once when added: tokens issued from now
 *   on live `seconds` s (`expires_in`); not a per-request fault.
 */
export interface FaultRule {
  endpoint: FaultEndpoint;
  kind: FaultKind;
  /** How many requests it fires on; default 1 (`always401`: Infinity). */
  times?: number;
  /** Let the first `after` matching requests pass untouched; default 0. */
  after?: number;
  /** HTTP status code (kind `status`). */
  code?: number;
  /** `Retry-After`: delay in seconds, or an HTTP-date string (kind `status`). */
  retryAfter?: number | string;
  /** Response body text (kinds `status`, `nonJson`). */
  body?: string;
  /** Delay in milliseconds (kind `latency`). */
  ms?: number;
  /** Bytes of the body sent before the break (kinds `bodyStall`, `resetMidBody`, `truncated`). */
  at?: number;
  /** `truncated` with chunked transfer encoding instead of `Content-Length`. */
  chunked?: boolean;
  /** Size in bytes (`oversized`) or characters (`nextPage` `oversizedUrl`). */
  size?: number;
  /** Which `nextPage` corruption (kind `nextPage`). */
  variant?: NextPageVariant;
  /** Target URL (kinds `redirect`, `nextPage` `otherOrigin`). */
  url?: string;
  /** Port (kind `nextPage` `otherPort`). */
  port?: number;
  /** Token lifetime in seconds (kind `tokenLifetime`). */
  seconds?: number;
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
  variant?: NextPageVariant;
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
  /** Invalidates all tokens issued so far, now (spec §5.4: the next events request gets 401). */
  revokeTokens(): void;
  /** Sets the lifetime (seconds, `expires_in`) of tokens issued from now on (spec §2.2). */
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
  tokenLifetime: 'immediate',
};

const ENDPOINTS: readonly FaultEndpoint[] = ['events', 'token', 'sites'];
const VARIANTS: readonly NextPageVariant[] = ['otherOrigin', 'otherScheme', 'otherPort', 'userInfo', 'relative', 'unchanged', 'cycle', 'oversizedUrl'];
const NUMERIC_KEYS = new Set(['times', 'after', 'code', 'ms', 'at', 'size', 'port', 'seconds']);
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
};

const isNonNegInt = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;

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
  if ((phase === 'auth' || phase === 'content') && rule.endpoint !== 'events') bad('this kind applies to the events endpoint only');
  if (rule.kind === 'tokenLifetime' && rule.endpoint !== 'token') bad('tokenLifetime applies to the token endpoint');
  const times = rule.times ?? (rule.kind === 'always401' ? Infinity : 1);
  if (!(times === Infinity || (Number.isInteger(times) && times >= 1))) bad('times must be a positive integer or Infinity');
  const after = rule.after ?? 0;
  if (!isNonNegInt(after)) bad('after must be a non-negative integer');
  const out: FaultRule = { ...rule, times, after };
  switch (rule.kind) {
    case 'status':
      if (typeof rule.code !== 'number' || !Number.isInteger(rule.code) || rule.code < 100 || rule.code > 599) bad('code must be an HTTP status 100-599');
      if (rule.retryAfter !== undefined && !(isNonNegInt(rule.retryAfter) || (typeof rule.retryAfter === 'string' && rule.retryAfter.length > 0)))
        bad('retryAfter must be seconds (integer) or an HTTP-date');
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
    case 'nextPage':
      if (rule.variant === undefined || !VARIANTS.includes(rule.variant)) bad(`variant must be one of ${VARIANTS.join(', ')}`);
      if (rule.port !== undefined && !(isNonNegInt(rule.port) && rule.port <= 65535)) bad('port must be 0-65535');
      if (rule.size !== undefined && !isNonNegInt(rule.size)) bad('size must be a non-negative integer');
      break;
    case 'tokenLifetime':
      if (typeof rule.seconds !== 'number' || !Number.isInteger(rule.seconds) || rule.seconds < 1) bad('seconds must be a positive integer');
      break;
    default:
      break;
  }
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
 *   `tokenLifetime=2` (seconds);
 * - keys: `times` (integer or `inf`), `after`, `code`, `retryAfter` (seconds or HTTP-date),
 *   `body`, `ms`, `at`, `chunked` (`true`/`false`), `size`, `variant`, `url`, `port`, `seconds`.
 *   A value may contain `:` (URLs): a segment that does not start with `<known key>=`
 *   continues the previous value.
 *
 * Examples: `events:status=503:times=3`, `events:status=429:retryAfter=2`,
 * `token:status=503:times=2`, `events:truncated=100`, `events:resetMidBody`,
 * `events:nextPage=otherOrigin:url=http://127.0.0.1:9999`, `events:always401`,
 * `token:tokenLifetime=2`, `events:latency=1500:after=2:times=inf`.
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
  take(endpoint: FaultEndpoint, phase: FaultPhase, path: string, canApply: (rule: FaultRule) => boolean = () => true): FaultRule | undefined {
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
