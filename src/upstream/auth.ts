/**
 * OAuth 2.0 client-credentials token cache (docs/upstream.md "Tokens", "Token requests",
 * "Token errors"; docs/contracts.md
 * guarantees 5 and 6): one token per lifetime, refreshed shortly before it expires and once
 * after a 401, one request in flight however many callers wait.
 *
 * The token and the client secret never appear in a log line or an error message: both are
 * registered in the run's {@link SecretRegistry} (the secret at construction, each token as
 * it is issued), and this module's own messages are scrubbed of them too (docs/security.md).
 *
 * @module
 */
import { z } from 'zod';
import { AuthError, ConfigError, UpstreamContractError } from '../errors.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { SecretRegistry } from '../log/secrets.js';
import { redactUrl, type HttpClient, type HttpResponse } from './http.js';
import { parseJsonBody } from './json.js';

/** The client credentials of one environment (docs/upstream.md "Tokens", "Services and identifiers"). */
export interface ClientCredentials {
  /** The API's `{auth_url}` (docs/upstream.md "Tokens"); the token is requested from `{authUrl}/oauth/token`. */
  authUrl: string;
  /** `client_id`. */
  clientId: string;
  /** `client_secret`; sent in the body or the `Authorization` header ({@link ClientCredentials.clientAuth}), never logged. */
  clientSecret: string;
  /** `audience`: the identifier of the requested API. */
  audience: string;
  /** How the token request body is encoded (`--token-request-format`); default `json`. */
  requestFormat?: TokenRequestFormat;
  /** Where the client authenticates (`--token-client-auth`); default `body`. */
  clientAuth?: TokenClientAuth;
  /** The request parameter that carries {@link ClientCredentials.audience} (`--token-audience-parameter`); default `audience`. */
  audienceParameter?: TokenAudienceParameter;
}

/**
 * Encoding of the token request body (docs/upstream.md "Token requests"): `json`, the
 * upstream's documented form, or `form`, `application/x-www-form-urlencoded` as RFC 6749 §4.4
 * specifies it (what strict OAuth 2.0 servers accept).
 */
export const TOKEN_REQUEST_FORMATS = ['json', 'form'] as const;
/** One of {@link TOKEN_REQUEST_FORMATS}. */
export type TokenRequestFormat = (typeof TOKEN_REQUEST_FORMATS)[number];

/**
 * Client authentication at the token endpoint (RFC 6749 §2.3.1): `body`, `client_id` and
 * `client_secret` among the request's fields (`client_secret_post`), or `basic`, HTTP Basic
 * with both form-urlencoded first (`client_secret_basic`).
 */
export const TOKEN_CLIENT_AUTHS = ['body', 'basic'] as const;
/** One of {@link TOKEN_CLIENT_AUTHS}. */
export type TokenClientAuth = (typeof TOKEN_CLIENT_AUTHS)[number];

/**
 * The request parameter naming the API: `audience` (the upstream's documented parameter) or
 * `resource` (RFC 8707 resource indicator, e.g. oidc-provider's `resourceIndicators`).
 */
export const TOKEN_AUDIENCE_PARAMETERS = ['audience', 'resource'] as const;
/** One of {@link TOKEN_AUDIENCE_PARAMETERS}. */
export type TokenAudienceParameter = (typeof TOKEN_AUDIENCE_PARAMETERS)[number];

/**
 * Lifetime assumed, in seconds, when a token response has no `expires_in` (RFC 6749 §5.1 only
 * recommends it): 300 s, so the token is refreshed every 4.5 minutes (margin 30 s), and a
 * token the server expires earlier is replaced after its first 401 (docs/upstream.md "Tokens").
 */
export const DEFAULT_TOKEN_LIFETIME_S = 300;

/** Longest `error_description` quoted in a message, in characters; longer is cut with `…`. */
export const MAX_ERROR_DESCRIPTION_LENGTH = 200;

/** `value` form-urlencoded (WHATWG `application/x-www-form-urlencoded`, as RFC 6749 Appendix B). */
function formUrlEncode(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1);
}

/**
 * The token request of `credentials` (docs/upstream.md "Token requests"): body and headers.
 * `grant_type=client_credentials`, the audience under its parameter, and the client's id and
 * secret in the body (`body`) or as `Authorization: Basic base64(urlencode(id):urlencode(secret))`
 * (`basic`, RFC 6749 §2.3.1). The result holds the secret: never log it.
 */
export function tokenRequest(credentials: ClientCredentials): { body: string; headers: Record<string, string> } {
  const { clientId, clientSecret, audience } = credentials;
  const fields: Record<string, string> = { grant_type: 'client_credentials', [credentials.audienceParameter ?? 'audience']: audience };
  const headers: Record<string, string> = { accept: 'application/json' };
  if ((credentials.clientAuth ?? 'body') === 'basic') {
    const pair = `${formUrlEncode(clientId)}:${formUrlEncode(clientSecret)}`;
    headers['authorization'] = `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
  } else {
    fields['client_id'] = clientId;
    fields['client_secret'] = clientSecret;
  }
  if ((credentials.requestFormat ?? 'json') === 'form') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    return { body: new URLSearchParams(fields).toString(), headers };
  }
  headers['content-type'] = 'application/json';
  return { body: JSON.stringify(fields), headers };
}

/** Longest `access_token` accepted, in characters (16 KiB): longer is a contract break. */
export const MAX_ACCESS_TOKEN_LENGTH = 16 * 1024;

/**
 * RFC 6750 §2.1 `b64token`: the only syntax a bearer token may have. It keeps a token out of
 * trouble in an `Authorization` header (no CR/LF, no space, no non-ASCII) (docs/security.md).
 */
export const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * What is wrong with an `access_token`'s syntax, or `undefined` when it is a valid b64token
 * of at most {@link MAX_ACCESS_TOKEN_LENGTH} characters. Never quotes the value.
 */
export function accessTokenProblem(token: string): string | undefined {
  if (token.length > MAX_ACCESS_TOKEN_LENGTH) return `is ${token.length} characters long, more than ${MAX_ACCESS_TOKEN_LENGTH}`;
  if (B64TOKEN.test(token)) return undefined;
  if (/[\r\n]/.test(token)) return 'contains a line break (CR or LF)';
  // eslint-disable-next-line no-control-regex
  if (/[^\x00-\x7f]/.test(token)) return 'contains non-ASCII characters';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(token)) return 'contains control characters';
  if (/\s/.test(token)) return 'contains spaces';
  return 'is not an RFC 6750 b64token (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)';
}

/**
 * `expires_in`: a positive finite number of seconds, or the same as a string of digits
 * (`"3600"`, as some servers send it); absent means {@link DEFAULT_TOKEN_LIFETIME_S}. Zero,
 * negative, `null` or any other text is a contract break (exit 6) (docs/security.md "Token responses").
 */
const ExpiresIn = z.union([
  z.number().positive().finite(),
  z
    .string()
    .regex(/^[0-9]{1,9}$/)
    .transform(Number)
    .refine((n) => n > 0),
]);

/** Token response (docs/upstream.md "Tokens"), open set: unknown keys are kept and ignored. */
const TokenResponse = z.looseObject({
  access_token: z.string().min(1),
  expires_in: ExpiresIn.optional(),
  token_type: z.string().refine((t) => t.toLowerCase() === 'bearer'),
});

/** OAuth error body (RFC 6749 §5.2); only a token-shaped `error` code is ever quoted. */
const OAuthError = z.looseObject({
  error: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  error_description: z.string().optional().catch(undefined),
});

/** Refresh margin in ms for a lifetime in ms: a tenth of it, at most 60 s (docs/contracts.md guarantee 5). */
export function refreshMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, lifetimeMs / 10);
}

interface CachedToken {
  token: string;
  /** Epoch ms at which the request that issued it was sent (conservative). */
  issuedAt: number;
  /** expires_in in ms. */
  lifetimeMs: number;
}

/**
 * Issues and caches bearer tokens.
 *
 * A token is reused until `now >= issuedAt + expires_in - margin`, with
 * `margin = min(60 s, expires_in / 10)` and `issuedAt` the time the token request was sent.
 */
export class TokenProvider {
  /** Counters: `requests` = token requests made (logical requests; HTTP retries not counted). */
  readonly stats = { requests: 0 };
  private readonly credentials: ClientCredentials;
  private readonly http: HttpClient;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly tokenUrl: string;
  /** Origin + path of the token endpoint: the only form named in messages. */
  private readonly where: string;
  private readonly secrets: SecretRegistry;
  private cached: CachedToken | undefined;
  private inFlight: Promise<string> | undefined;

  /**
   * @param opts.credentials the environment's client credentials
   * @param opts.http the shared {@link HttpClient}
   * @param opts.now clock, epoch ms (default `Date.now`)
   * @param opts.logger pino logger (default silent)
   * @param opts.secrets the run's secret registry: the client secret is registered now and
   *   every token as it is issued, so logs, errors and run records are scrubbed of them
   *   (default: a private registry, used for this provider's own messages only)
   */
  constructor(opts: { credentials: ClientCredentials; http: HttpClient; now?: () => number; logger?: Logger; secrets?: SecretRegistry }) {
    this.credentials = opts.credentials;
    this.http = opts.http;
    this.now = opts.now ?? Date.now;
    this.log = (opts.logger ?? silentLogger()).child({ component: 'upstream.auth' });
    this.tokenUrl = `${opts.credentials.authUrl.replace(/\/+$/, '')}/oauth/token`;
    this.where = redactUrl(this.tokenUrl);
    this.secrets = opts.secrets ?? new SecretRegistry();
    this.secrets.addSecret(opts.credentials.clientSecret);
    // The forms the secret travels in: form-urlencoded, and the Basic credentials (base64 of id:secret).
    this.secrets.addSecret(formUrlEncode(opts.credentials.clientSecret));
    this.secrets.addSecret(tokenRequest(opts.credentials).headers['authorization']?.replace(/^Basic /, ''));
  }

  /**
   * A valid bearer token: the cached one, or a new one. Concurrent callers share ONE request.
   *
   * @param signal aborts this caller's wait (the shared request goes on for the others)
   * @throws {AuthError} (exit 3) when the token endpoint refuses the credentials (400/401/403),
   *   quoting its `error` and cleaned `error_description` (docs/upstream.md "Token errors")
   * @throws {ConfigError} (exit 2) when the token endpoint does not exist at `{authUrl}` (404/405),
   *   or cannot read the request (`invalid_request`, `unsupported_grant_type`)
   * @throws {UpstreamUnavailableError} (exit 4) when it stays unavailable after retries (5xx, 429, network)
   * @throws {UpstreamContractError} (exit 6) when its answer is not a valid token response
   */
  getToken(signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const cached = this.cached;
    if (cached && this.now() < cached.issuedAt + cached.lifetimeMs - refreshMarginMs(cached.lifetimeMs)) {
      return Promise.resolve(cached.token);
    }
    if (!this.inFlight) {
      const request = this.requestToken();
      this.inFlight = request;
      const clear = (): void => {
        if (this.inFlight === request) this.inFlight = undefined;
      };
      request.then(clear, clear);
    }
    return signal ? raceAbort(this.inFlight, signal) : this.inFlight;
  }

  /**
   * Whether `text` holds the client secret or a token this provider issued, as is or
   * percent-encoded (docs/security.md): such a text must not be stored.
   */
  carriesSecret(text: string): boolean {
    if (this.secrets.contains(text)) return true;
    try {
      return this.secrets.contains(decodeURIComponent(text));
    } catch {
      return false;
    }
  }

  /**
   * Drops `token` if it is still the cached one (after a 401 on it), so the next
   * {@link TokenProvider.getToken} requests a new one; many 401s on the same token cause one refresh.
   */
  invalidate(token: string): void {
    if (this.cached?.token === token) {
      this.cached = undefined;
      this.log.info({}, 'token invalidated after HTTP 401');
    }
  }

  private async requestToken(): Promise<string> {
    try {
      return await this.requestTokenOnce();
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  /** `err` with registered secret values removed from its message and hint (same class, same cause). */
  private scrubbed(err: unknown): unknown {
    if (!(err instanceof Error) || this.secrets.size === 0) return err;
    const hint = (err as { hint?: unknown }).hint;
    const dirty = this.secrets.contains(err.message) || (typeof hint === 'string' && this.secrets.contains(hint));
    if (!dirty) return err;
    err.message = this.secrets.scrub(err.message);
    if (typeof hint === 'string') Object.defineProperty(err, 'hint', { value: this.secrets.scrub(hint) });
    if (err.stack) err.stack = this.secrets.scrub(err.stack);
    return err;
  }

  private async requestTokenOnce(): Promise<string> {
    this.stats.requests += 1;
    const sentAt = this.now();
    const request = tokenRequest(this.credentials);
    const res = await this.http.postText(this.tokenUrl, request.body, request.headers, { label: 'token' });
    if (res.status < 200 || res.status >= 300) throw this.refusal(res);
    let body: unknown;
    try {
      body = parseJsonBody(res);
    } catch (err) {
      throw new UpstreamContractError(
        `the token endpoint ${this.where} answered HTTP ${res.status} with an unreadable body: ${(err as Error).message}`,
      );
    }
    const parsed = TokenResponse.safeParse(body);
    if (!parsed.success) {
      const fields = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? '(root)')))].join(', ');
      throw new UpstreamContractError(
        `the token endpoint ${this.where} answered HTTP ${res.status} without a valid token response (bad or missing: ${fields})`,
      );
    }
    const problem = accessTokenProblem(parsed.data.access_token);
    if (problem !== undefined) {
      throw new UpstreamContractError(
        `the token endpoint ${this.where} answered HTTP ${res.status} with an access_token that ${problem}; it is not used`,
      );
    }
    // Registered before anything can log or raise it.
    this.secrets.addToken(parsed.data.access_token);
    const expiresInS = parsed.data.expires_in ?? DEFAULT_TOKEN_LIFETIME_S;
    const lifetimeMs = expiresInS * 1000;
    this.cached = { token: parsed.data.access_token, issuedAt: sentAt, lifetimeMs };
    const assumed = parsed.data.expires_in === undefined ? { expiresInAssumed: true } : {};
    this.log.info({ expiresInS, ...assumed, durationMs: this.now() - sentAt }, 'token issued');
    return parsed.data.access_token;
  }

  private refusal(res: HttpResponse): Error {
    const where = this.where;
    if (res.status === 400 || res.status === 401 || res.status === 403) return this.oauthRefusal(res);
    if (res.status === 404 || res.status === 405) {
      return new ConfigError(`no token endpoint at ${where} (HTTP ${res.status}); check RECRUIT_ETL_AUTH_URL`);
    }
    return new UpstreamContractError(
      `the token endpoint ${where} answered HTTP ${describeOAuthError(res.status, this.oauthError(res.bodyText))}`,
    );
  }

  /**
   * The RFC 6749 §5.2 error of a refusal, with a hint that matches it (docs/upstream.md
   * "Token errors"): a malformed request (`invalid_request`, `unsupported_grant_type`) is the
   * request format's fault, exit 2; `invalid_client` and any other code are refused
   * credentials, exit 3; `invalid_target`/`invalid_scope` name the audience, exit 3.
   */
  private oauthRefusal(res: HttpResponse): Error {
    const err = this.oauthError(res.bodyText);
    const what = describeOAuthError(res.status, err);
    const code = err.code;
    if (code === 'invalid_request' || code === 'unsupported_grant_type') {
      return new ConfigError(
        `the token endpoint ${this.where} refused the token request as malformed (${what}); check --token-request-format (json|form), --token-client-auth (body|basic) and --token-audience-parameter (audience|resource) against what this server accepts`,
      );
    }
    if (code === 'invalid_client') {
      return new AuthError(
        `the token endpoint refused the client credentials (${what}); check RECRUIT_ETL_CLIENT_ID / _SECRET for this environment, and --token-client-auth (body|basic) if the server expects the other method`,
      );
    }
    if (code === 'invalid_target' || code === 'invalid_scope') {
      return new AuthError(
        `the token endpoint refused the audience (${what}); check RECRUIT_ETL_AUDIENCE and --token-audience-parameter (audience|resource) for this environment`,
      );
    }
    return new AuthError(
      `the token endpoint refused the client credentials (${what}); check RECRUIT_ETL_CLIENT_ID / _SECRET / _AUDIENCE for this environment`,
    );
  }

  /** `error` (token-shaped, holding no registered secret) and the cleaned `error_description` of a body, when it is an RFC 6749 §5.2 error. */
  private oauthError(bodyText: string): OAuthErrorReport {
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      return {}; // Not JSON: the status alone is reported.
    }
    const err = OAuthError.safeParse(body);
    if (!err.success) return {};
    const out: OAuthErrorReport = {};
    // A code that holds a registered secret (an endpoint echoing what was posted) is not quoted at all.
    if (!this.secrets.contains(err.data.error)) out.code = err.data.error;
    const description =
      err.data.error_description === undefined ? undefined : cleanErrorDescription(err.data.error_description, this.secrets);
    if (description !== undefined) out.description = description;
    return out;
  }
}

/** What a refusal's body said (RFC 6749 §5.2), ready to quote. */
interface OAuthErrorReport {
  code?: string;
  description?: string;
}

/** `HTTP 400 invalid_request: "description"`, leaving out what is unknown. */
function describeOAuthError(status: number, err: OAuthErrorReport): string {
  return `HTTP ${status}${err.code ? ` ${err.code}` : ''}${err.description ? `: "${err.description}"` : ''}`;
}

/**
 * An `error_description` made safe to quote in one log line or error (docs/security.md
 * "Token responses"): every registered secret replaced by `[redacted]` (before anything else,
 * so a secret is never cut in half), control, format and separator characters and lone
 * surrogates removed, `"` and `\` replaced by `'` and `/`, whitespace collapsed, at most
 * {@link MAX_ERROR_DESCRIPTION_LENGTH} characters (then `…`). `undefined` when nothing is left.
 */
export function cleanErrorDescription(text: string, secrets: SecretRegistry): string | undefined {
  const out = secrets
    .scrub(text)
    .toWellFormed()
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\uFFFD]+/gu, ' ')
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/\s+/g, ' ')
    .trim();
  const chars = [...out];
  if (chars.length === 0) return undefined;
  return chars.length > MAX_ERROR_DESCRIPTION_LENGTH ? `${chars.slice(0, MAX_ERROR_DESCRIPTION_LENGTH).join('')}…` : out;
}

/** Resolves like `promise` unless `signal` aborts first (then rejects with its reason). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
