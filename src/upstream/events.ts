/**
 * The reporting event stream (docs/upstream.md "Reading the stream", "Event types and messages", "Versioning and open sets"; docs/contracts.md guarantees 4 and 5): one page at
 * a time with {@link EventsClient.fetchPage}, a whole stream with {@link pageStream}.
 *
 * The client builds only the first URL of a stream; every later URL is a `nextPage` taken
 * verbatim (docs/upstream.md "Reading the stream" rule 7). The bearer token goes only to the origin of `--base-url`.
 *
 * A page is read once, by {@link readEventsPage}: what is checked is what is stored.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { AuthError, ConfigError, EtlError, UpstreamContractError, UpstreamUnavailableError } from '../errors.js';
import { silentLogger, type Logger } from '../log/logger.js';
import type { TokenProvider } from './auth.js';
import { redactUrl, serverChosenUrl, type HttpClient, type HttpResponse } from './http.js';
import { notJson } from './json.js';
import { JsonSyntaxError, type PageContent, readEventsPage } from './page.js';

/** The query of a stream (docs/upstream.md "Reading the stream"): every trial id × every event type. */
export interface EventFilter {
  /** Trial ids, one `trialIds` parameter each; at least one. */
  trialIds: readonly string[];
  /** Event types, one `eventTypes` parameter each; at least one. */
  eventTypes: readonly string[];
  /** Events per page (`limit`); omitted → the server's default. A positive integer. */
  limit?: number;
}

/** Longest `nextPage` followed, in characters (16 KiB). */
export const MAX_CURSOR_LENGTH = 16 * 1024;
/** A page larger than this (4 MiB) is not fetched ahead of: see {@link PageStreamOptions.prefetch}. */
export const PREFETCH_MAX_BYTES = 4 * 1024 * 1024;
/** Default of {@link PageStreamOptions.maxEmptyPages} (`--max-empty-pages`). */
export const DEFAULT_MAX_EMPTY_PAGES = 1000;

/**
 * Parses and checks `--base-url`: absolute http(s), no user info, no query or fragment.
 *
 * @throws {ConfigError} (exit 2) otherwise
 */
export function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError('--base-url is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(`--base-url must be http or https, not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw new ConfigError('--base-url must not carry user info');
  if (url.search !== '' || url.hash !== '') throw new ConfigError('--base-url must not carry a query string or fragment');
  return url;
}

/** `{base_url}` joined with an absolute path, keeping any path prefix of the base. */
export function joinBasePath(base: URL, path: string): string {
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}${path}`;
}

/**
 * Builds ONLY the first request URL of a stream:
 * `{base_url}/rpi/events?eventTypes=..&eventTypes=..&trialIds=..&limit=..` (docs/upstream.md "Reading the stream"), every
 * value percent-encoded with `encodeURIComponent`. Every later URL is a `nextPage` taken
 * verbatim (docs/upstream.md "Reading the stream" rule 7).
 *
 * @throws {ConfigError} (exit 2) for a bad base URL, an empty list or a bad limit
 */
export function firstPageUrl(baseUrl: string, filter: EventFilter): string {
  const base = parseBaseUrl(baseUrl);
  if (filter.eventTypes.length === 0) throw new ConfigError('at least one event type is required (docs/upstream.md "Reading the stream")');
  if (filter.trialIds.length === 0) throw new ConfigError('at least one trial id is required (docs/upstream.md "Reading the stream")');
  if (filter.limit !== undefined && !(Number.isSafeInteger(filter.limit) && filter.limit > 0)) {
    throw new ConfigError('--page-size must be a positive integer');
  }
  const params: string[] = [];
  for (const t of filter.eventTypes) params.push(`eventTypes=${encodeURIComponent(t)}`);
  for (const t of filter.trialIds) params.push(`trialIds=${encodeURIComponent(t)}`);
  if (filter.limit !== undefined) params.push(`limit=${filter.limit}`);
  return `${joinBasePath(base, '/rpi/events')}?${params.join('&')}`;
}

/** One page of the stream, read by {@link readEventsPage} (`docs/ingest.md` "How a page is read"). */
export interface EventsPage extends PageContent {
  /** The URL requested. */
  url: string;
  /** Body size in bytes as received. */
  bytes: number;
}

/** The one reading of a page, its grammar check included; a body that is not JSON is unreadable (retried). */
function parsePage(res: HttpResponse): PageContent {
  try {
    return readEventsPage(res.bodyText, res.body);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw notJson(res, err.position);
    throw err;
  }
}

/**
 * Why a URL may not receive the bearer token, or undefined when it may: absolute, http(s),
 * no user info, exactly the origin (scheme, host, port) of the base URL.
 */
export function cursorProblem(url: string, origin: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  if (u.username !== '' || u.password !== '') return 'carries user info';
  // Origin (or scheme) only: the path of a URL the server chose may hold a subject id.
  if (u.origin !== origin)
    return `is on origin ${u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol}, not the configured ${origin}`;
  return undefined;
}

/** Reads pages of the event stream (docs/upstream.md "Reading the stream"). */
export class EventsClient {
  /** The origin (scheme, host, port) of `--base-url`: the only one that receives the token. */
  readonly origin: string;
  private readonly http: HttpClient;
  private readonly tokens: TokenProvider;
  private readonly log: Logger;

  /**
   * @param opts.baseUrl the API's `{base_url}` (docs/upstream.md)
   * @throws {ConfigError} for an invalid base URL
   */
  constructor(opts: { baseUrl: string; http: HttpClient; tokens: TokenProvider; logger?: Logger }) {
    this.origin = parseBaseUrl(opts.baseUrl).origin;
    this.http = opts.http;
    this.tokens = opts.tokens;
    this.log = (opts.logger ?? silentLogger()).child({ component: 'upstream.events' });
  }

  /**
   * Fetches one page.
   *
   * The URL is checked BEFORE anything is sent: it must have exactly the origin of the base
   * URL and no user info. Headers: `Authorization: Bearer`, `Content-Type: application/json`
   * (docs/upstream.md "Reading the stream"). An unreadable body (not JSON, truncated, invalid UTF-8, reset mid-body) is
   * fetched again whole from the same URL within the HTTP retry budget.
   *
   * @param url a first-page URL or a `nextPage`, sent verbatim
   * @param opts.firstOfNewStream the URL is the first request of a new stream, built from
   *   `--base-url`: a 404 then means the base URL is wrong, not that the upstream broke a cursor
   * @throws {ConfigError} (exit 2) on a 404 to the first request of a new stream, pointing at
   *   `RECRUIT_ETL_BASE_URL` (docs/contracts.md "Exit codes")
   * @throws {UpstreamContractError} (exit 6) for a URL on another origin or with user info (nothing
   *   sent), a 3xx, a 400/404/other 4xx, or a body that parses but breaks the contract
   * @throws {AuthError} (exit 3) on 403, or on a 401 that persists after one token refresh
   * @throws {UpstreamUnavailableError} (exit 4) when retries are spent (429, 5xx, network,
   *   timeouts, unreadable bodies)
   */
  /** Whether `text` (a cursor) holds the client secret or an access token this run was issued: it would be stored. */
  carriesSecret(text: string): boolean {
    return this.tokens.carriesSecret(text);
  }

  async fetchPage(url: string, signal?: AbortSignal, opts: { firstOfNewStream?: boolean } = {}): Promise<EventsPage> {
    const problem = cursorProblem(url, this.origin);
    if (problem !== undefined) {
      throw new UpstreamContractError(`refusing to send the token: the page URL ${problem}`);
    }
    // A URL built from the configuration is named by origin + path; a cursor, which the
    // server chose, by its origin only (docs/ingest.md "What messages name").
    const where = opts.firstOfNewStream === true ? redactUrl(url) : `${serverChosenUrl(url)} (the stream's cursor)`;
    for (let authAttempt = 1; ; authAttempt++) {
      const token = await this.tokens.getToken(signal);
      const res = await this.http.getText(
        url,
        { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        { label: 'events', name: where, parse: parsePage, ...(signal ? { signal } : {}) },
      );
      if (res.status === 401) {
        this.tokens.invalidate(token);
        if (authAttempt >= 2) {
          throw new AuthError(`GET ${where} answered HTTP 401 again with a freshly issued token`, {
            hint: 'the credentials are valid at the token endpoint but not accepted by the events endpoint: check RECRUIT_ETL_AUDIENCE and the environment',
          });
        }
        this.log.info({ url: where, status: 401, attempt: authAttempt }, 'token refused; requesting a new one');
        continue;
      }
      if (res.status === 403) {
        throw new AuthError(`GET ${where} answered HTTP 403: the client may not read these events`, {
          hint: 'check that the client is allowed the configured trial ids and event types',
        });
      }
      if (res.status === 404 && opts.firstOfNewStream === true) {
        throw new ConfigError(`GET ${where} answered HTTP 404 on the first request of a new stream: no events endpoint at that URL`, {
          hint: 'check --base-url (RECRUIT_ETL_BASE_URL): the events are read at {base_url}/rpi/events, so the base URL ends before /rpi',
        });
      }
      if (res.status >= 400) {
        throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status}`);
      }
      const parsed = res.parsed;
      if (parsed === undefined) throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status} without a page`);
      return { url, bytes: res.bytes, ...parsed };
    }
  }
}

/** Options of {@link pageStream}. */
export interface PageStreamOptions {
  /** Aborts the stream (the request in flight included); its reason is rethrown. */
  signal?: AbortSignal;
  /** Stream name used in error messages and logs; default `events`. */
  label?: string;
  /** Fetch page n+1 while the caller handles page n (not after a page over {@link PREFETCH_MAX_BYTES}). Default true. */
  prefetch?: boolean;
  /**
   * Consecutive pages without an event, `hasNextPage` true, after which the stream breaks the
   * contract (`--max-empty-pages`). Default {@link DEFAULT_MAX_EMPTY_PAGES}.
   */
  maxEmptyPages?: number;
  /**
   * `startUrl` is the first page of a new stream (no stored cursor): a 404 to it is a wrong
   * `--base-url` (exit 2), see {@link EventsClient.fetchPage}. Default false.
   */
  newStream?: boolean;
}

/**
 * Every URL requested in one run, as 48-bit digests (numbers: about 40 bytes a page), so that
 * a cursor cycle of any length is refused (`docs/ingest.md` "Bounded time").
 */
class RequestedUrls {
  private readonly seen = new Set<number>();
  private static key(url: string): number {
    return createHash('sha256').update(url).digest().readUIntBE(0, 6);
  }
  /** Adds `url`; false when it was there already. */
  add(url: string): boolean {
    const k = RequestedUrls.key(url);
    if (this.seen.has(k)) return false;
    this.seen.add(k);
    return true;
  }
}

/** Re-labels an error with the stream and page number (docs/contracts.md guarantee 4), keeping its class. */
function annotate(err: unknown, label: string, pageNo: number): unknown {
  if (!(err instanceof EtlError)) return err;
  const message = `stream ${label}, page ${pageNo}: ${err.message}`;
  const options = { cause: err, ...(err.hint === undefined ? {} : { hint: err.hint }) };
  if (err instanceof UpstreamContractError) return new UpstreamContractError(message, options);
  if (err instanceof UpstreamUnavailableError) return new UpstreamUnavailableError(message, options);
  if (err instanceof AuthError) return new AuthError(message, options);
  if (err instanceof ConfigError) return new ConfigError(message, options);
  return err;
}

/**
 * Follows `nextPage` from `startUrl` until `hasNextPage` is false (docs/upstream.md "Reading the stream" rule 3),
 * yielding each page in order. The last page's `nextPage` is the cursor to store (rule 4).
 *
 * Cursor safety, checked on every page BEFORE it is yielded (so nothing of it is committed):
 * its `nextPage` must be at most {@link MAX_CURSOR_LENGTH} characters, absolute, on the
 * origin of the base URL, without user info; while `hasNextPage` is true it must differ from
 * every URL requested in this run (a cycle of any length). An empty poll (`hasNextPage`
 * false, `nextPage` equal to the URL requested) is normal; `maxEmptyPages` empty pages in a
 * row while `hasNextPage` stays true are not (`docs/ingest.md` "Bounded time").
 *
 * @throws {UpstreamContractError} (exit 6) for a cursor violation or an invalid page, and the
 *   errors of {@link EventsClient.fetchPage}; every message starts `stream <label>, page <n>:`
 */
export async function* pageStream(client: EventsClient, startUrl: string, opts: PageStreamOptions = {}): AsyncGenerator<EventsPage> {
  const label = opts.label ?? 'events';
  const prefetch = opts.prefetch ?? true;
  // Aborts a prefetch nobody will read once the caller stops early.
  const own = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, own.signal]) : own.signal;
  const maxEmpty = opts.maxEmptyPages ?? DEFAULT_MAX_EMPTY_PAGES;
  const seen = new RequestedUrls();
  seen.add(startUrl);
  let emptyRun = 0;

  const fetchNumbered = (url: string, pageNo: number): Promise<EventsPage> => {
    const p = client.fetchPage(url, signal, { firstOfNewStream: opts.newStream === true && pageNo === 1 }).catch((err: unknown) => {
      throw annotate(err, label, pageNo);
    });
    p.catch(() => undefined); // observed later (or never, when the caller stops early)
    return p;
  };
  const refuse = (pageNo: number, why: string): UpstreamContractError =>
    new UpstreamContractError(`stream ${label}, page ${pageNo}: nextPage ${why}; the page is refused`, {
      hint: 'the upstream sent an unsafe or non-advancing cursor; nothing of this page was stored',
    });

  let pageNo = 1;
  let pending = fetchNumbered(startUrl, pageNo);
  try {
    for (;;) {
      const page = await pending;
      const next = page.nextPage;
      if (next.length > MAX_CURSOR_LENGTH) throw refuse(pageNo, `is ${next.length} characters long, more than ${MAX_CURSOR_LENGTH}`);
      const problem = cursorProblem(next, client.origin);
      if (problem !== undefined) throw refuse(pageNo, problem);
      // The cursor is stored as sent (etl.streams, and the published copy): never a credential.
      if (client.carriesSecret?.(next) === true) throw refuse(pageNo, 'carries the access token or the client secret');
      if (!page.hasNextPage) {
        yield page;
        return;
      }
      if (next === page.url) throw refuse(pageNo, 'equals the URL just requested while hasNextPage is true');
      if (!seen.add(next)) throw refuse(pageNo, 'repeats a URL already requested in this run (a cycle)');
      emptyRun = page.events.count === 0 ? emptyRun + 1 : 0;
      if (emptyRun >= maxEmpty) {
        throw new UpstreamContractError(
          `stream ${label}, page ${pageNo}: ${emptyRun} pages in a row brought no event while hasNextPage stayed true (limit --max-empty-pages ${maxEmpty})`,
          { hint: 'the upstream keeps announcing more events without sending any; report it. Every page before these was stored' },
        );
      }
      const nextNo = pageNo + 1;
      // A large page is not fetched ahead of: two of them at once would double the memory.
      const ahead = prefetch && page.bytes <= PREFETCH_MAX_BYTES;
      if (ahead) pending = fetchNumbered(next, nextNo);
      yield page;
      if (!ahead) pending = fetchNumbered(next, nextNo);
      pageNo = nextNo;
    }
  } finally {
    own.abort(new Error('page stream closed'));
  }
}
