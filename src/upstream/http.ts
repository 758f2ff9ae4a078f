/**
 * The HTTP layer of the upstream client: one keep-alive undici `Agent` with connect, headers
 * and body timeouts and a response size limit, and one retry loop around
 * `Dispatcher.request` shared by every call.
 *
 * Why our own retry loop and not undici's `interceptors.retry` / `RetryAgent`
 * (docs/architecture.md "The upstream client and undici"): the contract needs things the retry handler cannot do.
 * - A connection reset in the middle of a body makes the handler resume with a `Range`
 *   request; a page must be fetched again whole from the same URL (the cursor).
 * - It cuts a long `Retry-After` silently to `maxTimeout`; we must fail loudly (exit 4)
 *   when the server asks for more than `maxRetryAfterMs`.
 * - Failures that only show once the whole body is read (truncated or unparseable JSON,
 *   invalid UTF-8, an HTML error page with status 200) are invisible to it, so a second
 *   loop would be needed anyway and the two budgets would multiply (6 x 6 attempts).
 * - Its backoff has no jitter, uses the real clock and cannot honour the run deadline.
 * Everything else is undici's: the pool, keep-alive, timeouts, `maxResponseSize`, and not
 * following redirects (undici 7 only follows them with the redirect interceptor, which we
 * do not install).
 *
 * Logs carry only: method, URL origin + path (never the query string), status, attempt,
 * delay ms, bytes, duration ms and a reason from our own vocabulary (docs/contracts.md guarantee 6).
 *
 * @module
 */
import { setTimeout as sleepTimer } from 'node:timers/promises';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { ConfigError, EtlError, UpstreamContractError, UpstreamUnavailableError } from '../errors.js';
import { silentLogger, type Logger } from '../log/logger.js';

/** Timeouts, retry budget and limits of every upstream request. All durations in milliseconds. */
export interface HttpPolicy {
  /** TCP + TLS connect timeout, ms. Default 10 000. */
  connectTimeoutMs: number;
  /** Time from sending the request until the whole response head has arrived, ms. Default 30 000. */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks, ms (not the whole body). Default 30 000. */
  bodyTimeoutMs: number;
  /**
   * Longest time for the whole response body, ms, counted from the arrival of the response
   * head. Default 120 000. A body still incomplete then (e.g. one byte every few seconds,
   * which never trips {@link HttpPolicy.bodyTimeoutMs}) is destroyed, its connection closed,
   * and the attempt fails like a body timeout: retried, then
   * {@link UpstreamUnavailableError} (exit 4). Clamped to the time left before the deadline.
   */
  bodyTotalTimeoutMs: number;
  /** Attempts for a GET, the first try included. Default 6 (1 try + 5 retries). */
  maxAttempts: number;
  /** Attempts for a POST (the token request), first try included. Default 4. */
  maxPostAttempts: number;
  /** Base of the exponential backoff, ms: attempt n waits uniform(0, min(max, base * 2^(n-1))). Default 500. */
  minRetryDelayMs: number;
  /** Cap of one backoff wait, ms. Default 30 000. */
  maxRetryDelayMs: number;
  /**
   * Longest `Retry-After` honoured, ms. Default 120 000. A longer request from the server is
   * not cut short: the call fails at once with {@link UpstreamUnavailableError} naming the wait.
   */
  maxRetryAfterMs: number;
  /**
   * Largest response body accepted, bytes (`--max-page-bytes`). Default 256 MiB: the body is
   * held once (one buffer) while its page is read (`docs/ingest.md` "Large pages"). A
   * bigger body fails at once with {@link UpstreamContractError} (exit 6) naming the option and
   * is NOT retried: the same URL returns the same page again, and the page size of a stream
   * is fixed by its cursor.
   */
  maxResponseBytes: number;
  /**
   * Whole-run deadline as absolute epoch ms (same clock as `now`). No request starts and no
   * retry wait is begun that would end after it; the call fails with
   * {@link UpstreamUnavailableError}. Per-request timeouts are clamped to the time left.
   */
  deadlineMs?: number;
}

/**
 * Defaults of {@link HttpPolicy}, declared once: `src/config/config.ts` takes the defaults of
 * `--max-page-bytes` (`maxResponseBytes`), `--body-timeout` and `--max-retry-after` (in seconds) from here.
 */
export const DEFAULT_HTTP_POLICY: Readonly<HttpPolicy> = Object.freeze({
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  bodyTotalTimeoutMs: 120_000,
  maxAttempts: 6,
  maxPostAttempts: 4,
  minRetryDelayMs: 500,
  maxRetryDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
  maxResponseBytes: 256 * 1024 * 1024,
});

/** Construction options of {@link HttpClient}; everything is injectable for tests. */
export interface HttpClientOptions {
  /** Overrides of {@link DEFAULT_HTTP_POLICY}. */
  policy?: Partial<HttpPolicy>;
  /** pino logger (a child per stage is made here); default silent. */
  logger?: Logger;
  /** Clock, epoch ms; default `Date.now`. Used for `Retry-After` dates and the deadline. */
  now?: () => number;
  /** Wait `ms` milliseconds; must reject promptly when `signal` aborts. Default: node timers. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) source for the backoff jitter; default `Math.random`. */
  random?: () => number;
  /**
   * The dispatcher to send through. Default: a new keep-alive `Agent` built from the policy,
   * owned and closed by this client. An injected dispatcher is NOT closed by {@link HttpClient.close};
   * it should apply the policy's timeouts itself.
   */
  dispatcher?: Dispatcher;
}

/** A response handed back to the caller: the whole body has been read. */
export interface HttpResponse<T = never> {
  /** HTTP status code. */
  status: number;
  /** Response headers, lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  /** The body decoded as UTF-8 (strict: invalid UTF-8 is an unreadable body, retried). */
  bodyText: string;
  /** The body's bytes as received (absent in stubs that only carry text). */
  body?: Buffer;
  /** Body size in bytes as received. */
  bytes: number;
  /** The URL requested. */
  url: string;
  /** What {@link RequestOptions.parse} returned, for 2xx responses when a parser was given. */
  parsed?: T;
}

/** Per-call options of {@link HttpClient.getText} and {@link HttpClient.postText}. */
export interface RequestOptions<T = never> {
  /** Aborts the call (and any retry wait); the signal's reason is rethrown, no retry. */
  signal?: AbortSignal;
  /** A short name of the call for logs, e.g. `events`, `token`, `sites`. */
  label?: string;
  /**
   * How messages and logs name the URL: what the job asked for, never what the server chose
   * (`docs/ingest.md` "What messages name"). Default: origin + path ({@link redactUrl}), for a
   * URL built from the configuration. A URL the server chose (a `nextPage`) must be named by
   * its origin only ({@link serverChosenUrl}): its path may hold anything, a subject id too.
   */
  name?: string;
  /**
   * Parses a 2xx response inside the retry loop. Throw {@link TransientBodyError} for a body
   * that is unreadable (not JSON, truncated): the whole request is sent again to the same URL
   * and counts as an attempt. Any other error (e.g. {@link UpstreamContractError}) ends the
   * call at once. Not called for 4xx responses.
   */
  parse?: (response: HttpResponse) => T;
}

/**
 * Thrown by a {@link RequestOptions.parse} callback (or by the body reader) when a body is
 * unreadable in a way another try may fix. `reason` must not quote the body.
 */
export class TransientBodyError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'TransientBodyError';
  }
}

/** Network error codes that are worth another try (undici and Node socket codes). */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETDOWN',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_HEADERS_OVERFLOW',
]);

const REASON_BY_CODE: Readonly<Record<string, string>> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'response headers timeout',
  UND_ERR_BODY_TIMEOUT: 'body timeout (the body stalled)',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'body shorter or longer than its content-length',
};

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Origin + path of a URL, without query string or fragment: how a URL built from the
 * configuration is logged. A URL the server chose goes through {@link serverChosenUrl}.
 */
export function redactUrl(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The name of a URL the server chose (a `nextPage`, a redirect's `Location`) in messages and
 * logs: its origin only, or `(invalid URL)`; never its path or query, which may hold a subject
 * id (`docs/ingest.md` "What messages name").
 *
 * @param url absolute, or relative to `base`
 */
export function serverChosenUrl(url: string, base?: URL): string {
  try {
    const u = new URL(url, base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : `a ${u.protocol.replace(/[^a-z0-9+.-]/gi, '').slice(0, 20)} URL`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 *
 * @param value the header value
 * @param nowMs the current time, epoch ms (for HTTP-dates)
 * @returns the wait in ms (0 for a date in the past), or `undefined` when absent or invalid
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP-date in any of its three forms starts with a day name (RFC 9110 §5.6.7).
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return sleepTimer(ms, undefined, signal ? { signal } : undefined);
}

interface SendSpec<T> {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  maxAttempts: number;
  opts: RequestOptions<T>;
}

/** What one attempt ended with when it did not return. */
interface AttemptFailure {
  reason: string;
  retryAfterMs?: number;
  status?: number;
}

/** A call's URL, checked, and how logs and messages name it. */
interface Call {
  target: URL;
  /** Origin + path, or the caller's {@link RequestOptions.name}. */
  where: string;
  logFields: { method: string; url: string; label: string | undefined };
}

/** How one attempt ended: a response for the caller, or a failure to retry. */
type AttemptOutcome<T> = { response: HttpResponse<T> } | { failure: AttemptFailure };

/**
 * The upstream HTTP client: GET and POST with the retry policy of {@link HttpPolicy}.
 * It never adds an `Authorization` header on its own (docs/upstream.md "Site list"): callers pass every
 * header they want.
 */
export class HttpClient {
  /** The effective policy. */
  readonly policy: Readonly<HttpPolicy>;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;

  /** @param options see {@link HttpClientOptions}. */
  constructor(options: HttpClientOptions = {}) {
    this.policy = Object.freeze({ ...DEFAULT_HTTP_POLICY, ...options.policy });
    this.log = (options.logger ?? silentLogger()).child({ component: 'upstream.http' });
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    if (options.dispatcher) {
      this.dispatcher = options.dispatcher;
      this.ownsDispatcher = false;
    } else {
      this.dispatcher = new Agent({
        connect: { timeout: this.policy.connectTimeoutMs },
        headersTimeout: this.policy.headersTimeoutMs,
        bodyTimeout: this.policy.bodyTimeoutMs,
        // We send no accept-encoding and never decompress, so this counts body bytes.
        maxResponseSize: this.policy.maxResponseBytes,
      });
      this.ownsDispatcher = true;
    }
  }

  /**
   * GET with retries on 408, 429, 5xx, network errors, timeouts and unreadable bodies (reset
   * mid-body, truncated, invalid UTF-8, or a {@link TransientBodyError} from `opts.parse`):
   * each retry sends the whole request again to the same URL, never a `Range` request.
   * Redirects are not followed.
   *
   * @param url absolute http(s) URL, sent as is
   * @param headers every request header (nothing is added but `user-agent`)
   * @returns 2xx and 4xx (except 408 and 429) responses, body fully read, for the caller to interpret
   * @throws {UpstreamUnavailableError} (exit 4) once `maxAttempts` are spent, when `Retry-After`
   *   exceeds `maxRetryAfterMs`, or at the deadline; the message names method, origin + path
   *   (no query), the last status or error and the attempts
   * @throws {UpstreamContractError} (exit 6) on a 3xx (redirects are not followed), an
   *   unrequested content-encoding, or a body over `maxResponseBytes`
   * @throws the signal's reason when `opts.signal` aborts
   */
  getText<T = never>(url: string, headers: Record<string, string>, opts: RequestOptions<T> = {}): Promise<HttpResponse<T>> {
    return this.send({ method: 'GET', url, headers, maxAttempts: this.policy.maxAttempts, opts });
  }

  /**
   * POST a body serialised by the caller with the caller's headers (`content-type` among
   * them), with its own bounded retry (`maxPostAttempts`) on 5xx, 408, 429 and network
   * errors, never on other 4xx (a refusal stays a refusal). Sending the token request twice is
   * harmless: it only issues another token.
   *
   * @param url absolute http(s) URL
   * @param body never logged
   * @returns 2xx and 4xx (except 408 and 429) responses, body fully read
   * @throws as {@link HttpClient.getText}
   */
  postText<T = never>(url: string, body: string, headers: Record<string, string>, opts: RequestOptions<T> = {}): Promise<HttpResponse<T>> {
    return this.send({ method: 'POST', url, headers, body, maxAttempts: this.policy.maxPostAttempts, opts });
  }

  /** Closes the agent this client created (waits for requests in flight); an injected dispatcher is left open. */
  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /**
   * The retry loop every call goes through: attempts until one returns a response, an error
   * that is not retried ends it, or the attempts, the `Retry-After` limit or the deadline are
   * spent (see {@link HttpClient.getText} for what is retried and thrown).
   */
  private async send<T>(spec: SendSpec<T>): Promise<HttpResponse<T>> {
    const call = this.callOf(spec);
    const signal = spec.opts.signal;
    let last: AttemptFailure | undefined;
    for (let attempt = 1; ; attempt++) {
      this.throwIfAborted(signal);
      const remaining = this.remainingMs(spec.method, call.where, attempt, last);
      const outcome = await this.attempt(spec, call, attempt, remaining);
      if ('response' in outcome) return outcome.response;
      const failure = outcome.failure;
      last = failure;
      const delayMs = this.retryDelayMs(spec, call.where, attempt, failure);
      this.log.warn(
        { ...call.logFields, status: failure.status, reason: failure.reason, attempt, delayMs },
        'upstream request failed; retrying',
      );
      try {
        await this.sleep(delayMs, signal);
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        throw err;
      }
    }
  }

  /**
   * The URL of a call, checked, and how logs and messages name it.
   * @throws {ConfigError} when the URL is not an absolute http(s) URL
   */
  private callOf(spec: SendSpec<unknown>): Call {
    const { method, opts } = spec;
    let target: URL;
    try {
      target = new URL(spec.url);
    } catch {
      throw new ConfigError(`${opts.label ?? 'upstream'} URL is not a valid absolute URL`);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      throw new ConfigError(`${opts.label ?? 'upstream'} URL must be http or https, not ${target.protocol}`);
    }
    const where = opts.name ?? `${target.origin}${target.pathname}`;
    return { target, where, logFields: { method, url: where, label: opts.label } };
  }

  /**
   * One attempt: the request, its head within its own clock, then the answer ({@link HttpClient.answer}).
   * @returns the response, or the failure to retry
   * @throws what ends the call at once: the signal's reason, an {@link EtlError}, a bug
   */
  private async attempt<T>(spec: SendSpec<T>, call: Call, attempt: number, remaining: number): Promise<AttemptOutcome<T>> {
    const signal = spec.opts.signal;
    const started = this.now();
    // The head's own clock: undici's headersTimeout starts again at each informational (1xx)
    // response, so a server sending 103s for ever would hold the attempt for ever. The
    // caller's signal is forwarded by hand: AbortSignal.any would tie a signal per request
    // to the run's signal for as long as the run lasts.
    const attemptAbort = new AbortController();
    let headTimedOut = false;
    const headTimer = setTimeout(
      () => {
        headTimedOut = true;
        attemptAbort.abort();
      },
      Math.min(this.policy.headersTimeoutMs, remaining),
    );
    const forward = (): void => attemptAbort.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    try {
      const res = await this.dispatcher
        .request({
          origin: call.target.origin,
          path: `${call.target.pathname}${call.target.search}`,
          method: spec.method,
          headers: { 'user-agent': 'recruit-etl', ...spec.headers },
          body: spec.body ?? null,
          signal: attemptAbort.signal,
          headersTimeout: Math.min(this.policy.headersTimeoutMs, remaining),
          bodyTimeout: Math.min(this.policy.bodyTimeoutMs, remaining),
        })
        .finally(() => clearTimeout(headTimer));
      return await this.answer(spec, call, res, { attempt, started, remaining });
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      if (headTimedOut && !(err instanceof EtlError)) return { failure: { reason: REASON_BY_CODE['UND_ERR_HEADERS_TIMEOUT']! } };
      if (err instanceof TransientBodyError) return { failure: { reason: err.reason } };
      if (err instanceof EtlError) throw err;
      return { failure: this.networkFailure(err, spec.method, call.where) };
    } finally {
      clearTimeout(headTimer);
      signal?.removeEventListener('abort', forward);
    }
  }

  /**
   * What a response head means: a redirect is refused (exit 6), 408, 429 and 5xx are failures
   * to retry (their body discarded), anything else is read whole and parsed.
   */
  private async answer<T>(
    spec: SendSpec<T>,
    call: Call,
    res: Dispatcher.ResponseData,
    at: { attempt: number; started: number; remaining: number },
  ): Promise<AttemptOutcome<T>> {
    const { method, opts } = spec;
    const { where, target, logFields } = call;
    const { attempt, started } = at;
    const status = res.statusCode;
    const bodyMs = Math.min(this.policy.bodyTotalTimeoutMs, at.remaining);
    if (status >= 300 && status < 400) {
      await dump(res.body, bodyMs);
      const location = headerValue(res.headers.location);
      throw new UpstreamContractError(
        `${method} ${where} answered HTTP ${status}, a redirect${location ? ` to ${serverChosenUrl(location, target)}` : ''}; redirects are not followed`,
        { hint: 'check --base-url / --auth-url: the configured origin must answer directly' },
      );
    }
    if (status === 408 || status === 429 || status >= 500) {
      await dump(res.body, bodyMs);
      const retryAfterMs = parseRetryAfter(res.headers['retry-after'], this.now());
      this.log.debug({ ...logFields, status, attempt, durationMs: this.now() - started }, 'upstream response');
      return { failure: { reason: `HTTP ${status}`, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) } };
    }
    const { text, body, bytes } = await this.readBody(res, method, where, bodyMs);
    const response: HttpResponse<T> = { status, headers: res.headers, bodyText: text, body, bytes, url: spec.url };
    if (opts.parse && status < 300) response.parsed = opts.parse(response as HttpResponse);
    this.log.debug({ ...logFields, status, attempt, bytes, durationMs: this.now() - started }, 'upstream response');
    return { response };
  }

  /**
   * How long to wait before the next attempt, ms: the server's `Retry-After`, else the
   * jittered exponential backoff of {@link HttpPolicy.minRetryDelayMs}.
   * @throws {UpstreamUnavailableError} when the attempts are spent, the server asks for more
   *   than {@link HttpPolicy.maxRetryAfterMs}, or the wait would end after the deadline
   */
  private retryDelayMs(spec: SendSpec<unknown>, where: string, attempt: number, failure: AttemptFailure): number {
    const method = spec.method;
    if (attempt >= spec.maxAttempts) {
      throw new UpstreamUnavailableError(
        `${method} ${where} failed after ${attempt} attempt${attempt === 1 ? '' : 's'}; last: ${failure.reason}`,
        { hint: 'the upstream is unavailable or sends unreadable responses; try again later' },
      );
    }
    let delayMs: number;
    if (failure.retryAfterMs !== undefined) {
      if (failure.retryAfterMs > this.policy.maxRetryAfterMs) {
        throw new UpstreamUnavailableError(
          `${method} ${where} answered ${failure.reason} and the server asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s (Retry-After), more than the ${Math.round(this.policy.maxRetryAfterMs / 1000)} s this job waits`,
          { hint: 'try again later' },
        );
      }
      delayMs = failure.retryAfterMs;
    } else {
      const ceiling = Math.min(this.policy.maxRetryDelayMs, this.policy.minRetryDelayMs * 2 ** (attempt - 1));
      delayMs = Math.floor(this.random() * ceiling);
    }
    const deadline = this.policy.deadlineMs;
    if (deadline !== undefined && this.now() + delayMs >= deadline) {
      throw this.deadlineError(method, where, attempt, failure);
    }
    return delayMs;
  }

  /**
   * Reads the whole body with the size limit, strict UTF-8, within `totalMs` of the call.
   * @throws {TransientBodyError} when the body is not complete within `totalMs` (the stream
   *   is destroyed, so its connection is closed, not reused)
   */
  private async readBody(
    res: Dispatcher.ResponseData,
    method: string,
    where: string,
    totalMs: number,
  ): Promise<{ text: string; body: Buffer; bytes: number }> {
    const limit = this.policy.maxResponseBytes;
    const declared = Number(headerValue(res.headers['content-length']));
    if (Number.isFinite(declared) && declared > limit) {
      abandon(res.body);
      throw this.oversize(method, where);
    }
    const encoding = headerValue(res.headers['content-encoding']);
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      abandon(res.body);
      throw new UpstreamContractError(`${method} ${where} sent a ${encoding}-encoded body that was not asked for`);
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    // A declared length gets one buffer filled as chunks arrive: no second copy of a large body.
    const whole = Number.isSafeInteger(declared) && declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    let filled = 0;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      res.body.destroy(new TransientBodyError('body total timeout'));
    }, totalMs);
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        if (bytes + chunk.length > limit) throw this.oversize(method, where);
        if (whole !== undefined && chunks.length === 0 && bytes + chunk.length <= whole.length) filled += chunk.copy(whole, bytes);
        else chunks.push(chunk);
        bytes += chunk.length;
      }
    } catch (err) {
      if (timedOut)
        throw new TransientBodyError(
          `body total timeout (not complete within ${totalMs} ms of the response head; ${bytes} bytes received)`,
        );
      throw err;
    } finally {
      clearTimeout(timer);
      // Leaves nothing half read on the connection (a no-op once the body has ended).
      if (!res.body.readableEnded) abandon(res.body);
    }
    // undici fails a body longer or shorter than declared (retried); the rest is for safety.
    const head = whole === undefined ? [] : [whole.subarray(0, filled)];
    const body =
      chunks.length === 0
        ? (head[0] ?? Buffer.alloc(0))
        : head.length === 0 && chunks.length === 1
          ? chunks[0]!
          : Buffer.concat([...head, ...chunks], bytes);
    try {
      return { text: UTF8.decode(body), body, bytes };
    } catch {
      throw new TransientBodyError(`body is not valid UTF-8 (${bytes} bytes)`);
    }
  }

  /**
   * What a failed request (no response, or a response undici refused) is: a retried failure
   * with a reason from our vocabulary, or thrown at once. Every error undici raises is the
   * upstream's (`docs/ingest.md` "Framing"): malformed framing or headers (`HTTPParserError`,
   * whose `code` undici leaves empty), a length mismatch, a socket closed, are retried then
   * exit 4; a request undici refuses to build from a server-sent value (a cursor, a token:
   * `InvalidArgumentError`) is exit 6. Messages never quote the error's text or data.
   * @returns the failure to retry (the last one becomes {@link UpstreamUnavailableError}, exit 4)
   * @throws {UpstreamContractError} (exit 6) for a body over the limit or a request undici refuses
   * @throws `err` itself when it is neither undici's nor a socket's (a bug of ours: exit 1)
   */
  private networkFailure(err: unknown, method: string, where: string): AttemptFailure {
    const code = errorCode(err);
    if (err instanceof undiciErrors.HTTPParserError || (code !== undefined && code.startsWith('HPE_'))) {
      return { reason: 'malformed HTTP response (framing or headers not HTTP/1.1)' };
    }
    if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') throw this.oversize(method, where);
    if (code !== undefined && RETRYABLE_CODES.has(code)) return { reason: REASON_BY_CODE[code] ?? code };
    if (code === 'UND_ERR_INVALID_ARG' || err instanceof undiciErrors.InvalidArgumentError) {
      throw new UpstreamContractError(
        `${method} ${where} could not be sent: a value the upstream issued (a cursor or a token) is not valid in an HTTP request`,
        {
          hint: 'report it to the API provider; nothing was sent',
        },
      );
    }
    if (err instanceof undiciErrors.UndiciError || (code !== undefined && /^(UND_ERR_|E[A-Z]+$)/.test(code))) {
      return { reason: `network error ${safeCode(code)}` };
    }
    throw err;
  }

  /** Time left before the deadline, ms; throws when it has passed. */
  private remainingMs(method: string, where: string, attempt: number, last: AttemptFailure | undefined): number {
    const deadline = this.policy.deadlineMs;
    if (deadline === undefined) return Number.MAX_SAFE_INTEGER;
    const left = deadline - this.now();
    if (left <= 0) throw this.deadlineError(method, where, attempt - 1, last);
    return Math.max(1, left);
  }

  private deadlineError(method: string, where: string, attempts: number, last: AttemptFailure | undefined): UpstreamUnavailableError {
    return new UpstreamUnavailableError(
      `the run deadline was reached before ${method} ${where} succeeded (${attempts} attempt${attempts === 1 ? '' : 's'}${last ? `; last: ${last.reason}` : ''})`,
      { hint: 'try again later, or allow the run more time' },
    );
  }

  /**
   * A body over {@link HttpPolicy.maxResponseBytes}: exit 6, not retried. The same URL returns
   * the same page again, and the page size of a stream is fixed by its cursor, so only a
   * larger `--max-page-bytes` gets past it (`docs/ingest.md` "How a page is read").
   */
  private oversize(method: string, where: string): UpstreamContractError {
    return new UpstreamContractError(
      `${method} ${where} sent a body larger than --max-page-bytes (${this.policy.maxResponseBytes} bytes); not retried`,
      {
        hint: 'raise --max-page-bytes (RECRUIT_ETL_MAX_PAGE_BYTES) to read it: the page size of an existing stream is fixed by its cursor, so a smaller --page-size does not help',
      },
    );
  }

  private throwIfAborted(signal: AbortSignal | undefined): void {
    if (signal?.aborted) throw signal.reason;
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** An error code for a message: letters, digits and `_` only (never a control character). */
function safeCode(code: string | undefined): string {
  return (code ?? 'unknown').replace(/[^A-Za-z0-9_]/g, '').slice(0, 40) || 'unknown';
}

/**
 * Destroy a body the job will not read: its connection is closed, not reused. undici then
 * emits `RequestAbortedError` on it, which must not reach the process as an uncaught error.
 */
function abandon(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/**
 * Consumes and discards a body so the connection can be reused, or closes it when the body
 * is over 256 KiB or takes longer than `totalMs`.
 */
async function dump(body: Dispatcher.ResponseData['body'], totalMs: number): Promise<void> {
  const timer = setTimeout(() => body.destroy(), totalMs);
  try {
    await body.dump({ limit: 256 * 1024 });
  } catch {
    // A body that fails while being discarded changes nothing: the status decides.
  } finally {
    clearTimeout(timer);
  }
}
