/**
 * The simulator's HTTP server (`node:http`): the token endpoint (spec §4.1), the
 * study-website site list (spec §4.2) and the reporting events stream (spec §4.3), with
 * the fault phases of faults.ts.
 *
 * @module
 */
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { decodeCursor, encodeCursor } from './cursor.js';
import { eventIndexOfId } from './eventIds.js';
import type { ResolvedMockApiOptions } from './options.js';
import type { EventStore, StreamFilter } from './eventStore.js';
import type { BadTokenVariant, FaultEndpoint, FaultRegistry, FaultRule } from './faults.js';
import { LONE_SURROGATE, reorderedJson, splitAtMessageEnd, withDuplicateIdKey, withEscapedKeys, withLoneSurrogateNote } from './hostileJson.js';
import type { SiteRecord } from './types.js';

/** One entry of {@link MockApiStats.requestLog}. */
export interface RequestLogEntry {
  method: string;
  /** Path without query string. */
  path: string;
  /** True when the request carried an `Authorization` header (its value is never kept). */
  hasAuthorization: boolean;
  /** The `Origin` header, when sent. */
  origin?: string;
  /** Status sent, or 0 while/when no headers were sent (hanging, reset before headers). */
  status: number;
}

/** Request counters of a running simulator. */
export interface MockApiStats {
  /** Requests to `/oauth/token`. */
  tokenRequests: number;
  /** Requests to `/rpi/events`. */
  eventRequests: number;
  /** Requests to the site list. */
  siteRequests: number;
  /** Requests to any other path. */
  otherRequests: number;
  /** Tokens issued (successful grants). */
  tokensIssued: number;
  /** Events sent in clean (not faulted) events pages. */
  eventsServed: number;
  /** The last 1,000 requests, oldest first. */
  requestLog: RequestLogEntry[];
}

/** Settings the server reads (mutable ones live on the server). */
export type ServerSettings = Pick<
  ResolvedMockApiOptions,
  'host' | 'port' | 'clientId' | 'clientSecret' | 'audience' | 'tokenLifetimeSeconds' | 'defaultLimit' | 'maxLimit' | 'micrositeId' | 'allowedOrigins'
>;

interface Prepared {
  status: number;
  headers: Record<string, string>;
  /** One buffer, or pieces sent one after the other (large padded pages). */
  body: Buffer | Buffer[];
}

/** A token request that parsed, before the grant. */
interface TokenRequest {
  /** The posted fields (form or JSON). */
  fields: Record<string, unknown>;
  /** The refusal, when the request would not be granted. */
  refusal?: Prepared;
}

/** The body as one buffer. */
const flat = (p: Prepared): Buffer => (Array.isArray(p.body) ? Buffer.concat(p.body) : p.body);

/** Body length in bytes. */
const bodyLength = (p: Prepared): number => (Array.isArray(p.body) ? p.body.reduce((n, b) => n + b.length, 0) : p.body.length);

interface PageModel {
  filter: StreamFilter;
  after: number;
  limit: number;
  indexes: number[];
  nextPage: string;
  hasNextPage: boolean;
  requestUrl: string;
  filterKey: string;
}

/** `pagination` of an events page (spec §4.3). */
interface Pagination {
  nextPage: string;
  hasNextPage: boolean;
}

/** How {@link MockServer} frames a page's events (clean: all false). */
interface PageShape {
  /** `events` is an object `{"items":[…]}` (kind `eventsNotArray`). */
  eventsNotArray?: boolean;
  /** A second `"events":[]` after the real array (kind `duplicateEventsKey`). */
  duplicateEventsKey?: boolean;
  /** Top-level keys spelt `"\u0065vents"`, `"\u0070agination"` (kind `escapedKeys`). */
  escapedKeys?: boolean;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const COMMA = Buffer.from(',');
const LOG_MAX = 1000;

const jsonBody = (status: number, value: unknown, headers: Record<string, string> = {}): Prepared => ({
  status,
  headers: { 'content-type': JSON_TYPE, ...headers },
  body: Buffer.from(JSON.stringify(value)),
});

const errorBody = (status: number, error: string, description: string, headers: Record<string, string> = {}): Prepared =>
  jsonBody(status, { error, error_description: description }, headers);

/**
 * The access token of kind `badToken`: a JWT-shaped token followed by `\r\n` and a header
 * line (`crlf`), with an `é` in it (`nonAscii`), or 102,400 characters long (`tooLong`).
 */
export function badToken(variant: BadTokenVariant): string {
  const jwt = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJtb2NrIn0.c2lnbmF0dXJl';
  switch (variant) {
    case 'crlf':
      return `${jwt}\r\nX-Injected: 1`;
    case 'nonAscii':
      return `${jwt}é`;
    case 'tooLong':
      return `${jwt}.${'A'.repeat(100 * 1024 - jwt.length - 1)}`;
  }
}

const DEFAULT_ERROR: Record<number, string> = {
  400: 'invalid_request',
  401: 'access_denied',
  403: 'access_denied',
  404: 'not_found',
  408: 'request_timeout',
  429: 'too_many_requests',
  500: 'server_error',
  502: 'bad_gateway',
  503: 'temporarily_unavailable',
  504: 'gateway_timeout',
};

/** The server and its mutable state. */
export class MockServer {
  /** Set once listening: `http://host:port`. */
  baseUrl = '';
  readonly stats: MockApiStats = {
    tokenRequests: 0,
    eventRequests: 0,
    siteRequests: 0,
    otherRequests: 0,
    tokensIssued: 0,
    eventsServed: 0,
    requestLog: [],
  };
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private tokens = new Map<string, number>();
  private tokenSerial = 0;
  private readonly signingKey = randomBytes(32);
  private readonly history: Array<{ url: string; filterKey: string }> = [];
  private closed = false;
  /** Serial of `emptyPagesForever` URLs and of `longCycle` cycles. */
  private specialSerial = 0;
  /** Shared `x` bytes the `padEvents` pages slice their pads from. */
  private padBytes: Buffer = Buffer.alloc(0);

  constructor(
    readonly settings: ServerSettings,
    private readonly store: EventStore,
    private readonly sites: Record<string, SiteRecord[]>,
    private readonly visible: () => number,
    private readonly faults: FaultRegistry,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {
    this.server = createServer({ keepAlive: true }, (req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        this.logger.error({ err, path: (req.url ?? '').split('?')[0] }, 'mock-api handler failed');
        if (!res.headersSent) this.send(res, errorBody(500, 'server_error', 'internal simulator error'));
        else res.destroy();
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    this.server.listen(this.settings.port, this.settings.host);
    await once(this.server, 'listening');
    const addr = this.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('mock-api: no TCP address');
    const host = this.settings.host.includes(':') ? `[${this.settings.host}]` : this.settings.host;
    this.baseUrl = `http://${host}:${addr.port}`;
    return addr.port;
  }

  /** Closes the server and destroys every socket, hanging ones included. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const done = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    await done;
  }

  /** Invalidates every token issued so far (spec §5.4: later calls get 401). */
  revokeTokens(): void {
    this.tokens = new Map();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  private send(res: ServerResponse, p: Prepared): void {
    res.writeHead(p.status, { ...p.headers, 'content-length': String(bodyLength(p)) });
    if (Array.isArray(p.body)) {
      for (const b of p.body) res.write(b);
      res.end();
    } else res.end(p.body);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const method = req.method ?? 'GET';
    const entry: RequestLogEntry = { method, path, hasAuthorization: req.headers.authorization !== undefined, status: 0 };
    const origin = req.headers.origin;
    if (typeof origin === 'string') entry.origin = origin;
    this.stats.requestLog.push(entry);
    if (this.stats.requestLog.length > LOG_MAX) this.stats.requestLog.splice(0, this.stats.requestLog.length - LOG_MAX);
    const started = this.now();
    res.on('close', () => {
      entry.status = res.headersSent ? res.statusCode : 0;
      this.logger.debug({ method, path, status: entry.status, ms: this.now() - started }, 'mock-api request');
    });

    if (path === '/oauth/token') {
      this.stats.tokenRequests++;
      if (method !== 'POST') return this.methodNotAllowed(req, res, 'POST');
      return this.handleToken(req, res, path);
    }
    if (path === '/rpi/events') {
      this.stats.eventRequests++;
      req.resume();
      if (method !== 'GET') return this.send(res, errorBody(405, 'method_not_allowed', 'use GET', { allow: 'GET' }));
      return this.handleEvents(req, res, path);
    }
    const m = /^\/microsites-api\/v1\/([^/]+)\/sites\/([^/]+)\/?$/.exec(path);
    if (m) {
      this.stats.siteRequests++;
      req.resume();
      if (method !== 'GET') return this.send(res, errorBody(405, 'method_not_allowed', 'use GET', { allow: 'GET' }));
      return this.handleSites(req, res, path, m[1]!, m[2]!);
    }
    this.stats.otherRequests++;
    req.resume();
    this.send(res, errorBody(404, 'not_found', 'no such endpoint'));
  }

  private methodNotAllowed(req: IncomingMessage, res: ServerResponse, allow: string): void {
    req.resume();
    this.send(res, errorBody(405, 'method_not_allowed', `use ${allow}`, { allow }));
  }

  // ---- faults of the transport phase ------------------------------------------------

  /**
   * Applies a transport-phase fault when one fires. Returns true when the response is
   * taken care of (sent, broken or hanging), false to continue normally.
   */
  private async transport(endpoint: FaultEndpoint, res: ServerResponse, path: string, clean: () => Promise<Prepared>): Promise<boolean> {
    const rule = this.faults.take(endpoint, 'transport', path);
    if (rule === undefined) return false;
    switch (rule.kind) {
      case 'status': {
        const code = rule.code!;
        const headers: Record<string, string> = {};
        if (rule.retryAfter !== undefined) headers['retry-after'] = String(rule.retryAfter);
        if (code === 401 && endpoint === 'events') headers['www-authenticate'] = 'Bearer error="invalid_token"';
        if (rule.body !== undefined) this.send(res, { status: code, headers: { 'content-type': JSON_TYPE, ...headers }, body: Buffer.from(rule.body) });
        else this.send(res, errorBody(code, DEFAULT_ERROR[code] ?? 'error', `simulated HTTP ${code}`, headers));
        return true;
      }
      case 'latency':
        await this.sleep(rule.ms ?? 0);
        return this.closed || res.destroyed;
      case 'headersNever':
        return true;
      case 'bodyStall':
      case 'resetMidBody':
      case 'truncated': {
        const p = await clean();
        const body = flat(p);
        const at = Math.min(rule.at ?? Math.floor(body.length / 2), body.length);
        const headers: Record<string, string> = { ...p.headers };
        if (rule.kind === 'truncated' && rule.chunked === true) headers['transfer-encoding'] = 'chunked';
        else headers['content-length'] = String(body.length);
        res.writeHead(p.status, headers);
        res.flushHeaders();
        const part = body.subarray(0, at);
        const after = (): void => {
          const sock = res.socket;
          if (sock === null) return;
          if (rule.kind === 'truncated') sock.end();
          else if (rule.kind === 'resetMidBody') {
            // Give the client a moment to read the partial body, then send a TCP RST.
            const t = setTimeout(() => {
              this.timers.delete(t);
              sock.resetAndDestroy();
            }, 25);
            this.timers.add(t);
          }
        };
        if (part.length > 0) res.write(part, after);
        else setImmediate(after);
        return true;
      }
      case 'nonJson':
        this.send(res, { status: 200, headers: { 'content-type': JSON_TYPE }, body: Buffer.from(rule.body ?? 'upstream request timeout; please retry') });
        return true;
      case 'html200':
        this.send(res, {
          status: 200,
          headers: { 'content-type': 'text/html; charset=utf-8' },
          body: Buffer.from(
            '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>The upstream server returned an invalid response. Please try again later.</p></body></html>\n',
          ),
        });
        return true;
      case 'oversized':
        await this.sendOversized(res, rule.size ?? 64 * 1024 * 1024);
        return true;
      case 'redirect': {
        const url = rule.url ?? 'http://127.0.0.1:9/trap';
        this.send(res, errorBody(302, 'moved', 'moved', { location: url }));
        return true;
      }
      case 'drip':
        await this.drip(res, await clean(), rule.ms ?? 5000);
        return true;
      default:
        return false;
    }
  }

  /** Sends `p` with its full `Content-Length`: headers and the first byte at once, then one byte every `ms` ms. */
  private async drip(res: ServerResponse, p: Prepared, ms: number): Promise<void> {
    const body = flat(p);
    res.writeHead(p.status, { ...p.headers, 'content-length': String(body.length) });
    if (body.length === 0) {
      res.end();
      return;
    }
    for (let i = 0; i < body.length; i++) {
      if (i > 0) await this.sleep(ms);
      if (this.closed || res.destroyed) return;
      res.write(body.subarray(i, i + 1));
    }
    res.end();
  }

  private async sendOversized(res: ServerResponse, size: number): Promise<void> {
    const sample =
      this.store.count > 0
        ? this.store.bytesAt(0)
        : Buffer.from('{"id":"00000000-0000-4000-8000-000000000000","publishedTime":"2026-01-05T08:00:00.000Z","eventType":"v1.patient.created","message":{}}');
    const prefix = Buffer.from('{"events":[');
    const suffix = Buffer.from(`],"pagination":{"nextPage":"${this.baseUrl}/rpi/events?cursor=oversized","hasNextPage":true}}`);
    const unit = Buffer.concat([COMMA, sample]);
    let remaining = size - prefix.length - suffix.length - sample.length;
    res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': String(size) });
    const write = async (b: Buffer): Promise<boolean> => {
      if (res.destroyed) return false;
      if (!res.write(b)) {
        const closed = once(res, 'close').then(() => false);
        const drained = once(res, 'drain').then(() => true);
        return Promise.race([closed, drained]);
      }
      return true;
    };
    if (remaining < 0) {
      // Too small for one event: an empty array padded with spaces.
      await write(Buffer.concat([prefix, Buffer.alloc(Math.max(0, size - prefix.length - suffix.length), ' '), suffix]));
      res.end();
      return;
    }
    if (!(await write(Buffer.concat([prefix, sample])))) return;
    const perChunk = Math.max(1, Math.floor((1024 * 1024) / unit.length));
    const chunk = Buffer.concat(Array.from({ length: perChunk }, () => unit));
    while (remaining >= unit.length) {
      const n = Math.min(perChunk, Math.floor(remaining / unit.length));
      if (!(await write(n === perChunk ? chunk : chunk.subarray(0, n * unit.length)))) return;
      remaining -= n * unit.length;
    }
    await write(Buffer.concat([Buffer.alloc(remaining, ' '), suffix]));
    res.end();
  }

  // ---- token endpoint (spec §2.1, §2.2, §4.1, §5) ------------------------------------

  private async readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of req) {
      const b = c as Buffer;
      n += b.length;
      if (n > max) return undefined;
      chunks.push(b);
    }
    return Buffer.concat(chunks);
  }

  private async handleToken(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await this.readBody(req, 64 * 1024);
    const clean = async (): Promise<Prepared> => this.tokenResponse(req, body);
    if (await this.transport('token', res, path, clean)) return;
    const parsed = this.parseTokenRequest(req, body);
    const rule =
      'fields' in parsed
        ? this.faults.take('token', 'content', path, (r) => (r.kind === 'badToken' ? parsed.refusal === undefined : true))
        : undefined;
    if (rule !== undefined && 'fields' in parsed) {
      if (rule.kind === 'echoSecret') return this.send(res, this.echoSecret(parsed.fields));
      if (rule.kind === 'badToken') return this.send(res, this.grant(badToken(rule.variant as BadTokenVariant)));
    }
    this.send(res, await clean());
  }

  /** Kind `echoSecret`: a 400 whose error text carries the posted secret. */
  private echoSecret(fields: Record<string, unknown>): Prepared {
    const text = (v: unknown): string => (typeof v === 'string' ? v : '');
    const id = text(fields['client_id']);
    const secret = text(fields['client_secret']);
    return errorBody(400, `invalid_client: ${secret}`, `client ${id} with secret ${secret} refused`);
  }

  private parseTokenRequest(req: IncomingMessage, body: Buffer | undefined): TokenRequest | Prepared {
    if (body === undefined) return errorBody(413, 'invalid_request', 'request body too large');
    let parsed: unknown;
    const ct = String(req.headers['content-type'] ?? '');
    try {
      parsed = ct.startsWith('application/x-www-form-urlencoded')
        ? Object.fromEntries(new URLSearchParams(body.toString('utf8')))
        : JSON.parse(body.toString('utf8'));
    } catch {
      return errorBody(400, 'invalid_request', 'body must be a JSON object');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return errorBody(400, 'invalid_request', 'body must be a JSON object');
    const o = parsed as Record<string, unknown>;
    const refuse = (refusal: Prepared): TokenRequest => ({ fields: o, refusal });
    for (const f of ['client_id', 'client_secret', 'audience', 'grant_type']) {
      const v = o[f];
      if (typeof v !== 'string' || v.length === 0) return refuse(errorBody(400, 'invalid_request', `missing or invalid field ${f}`));
    }
    if (o['grant_type'] !== 'client_credentials') return refuse(errorBody(400, 'invalid_request', 'grant_type must be client_credentials'));
    if (o['client_id'] !== this.settings.clientId || o['client_secret'] !== this.settings.clientSecret)
      return refuse(errorBody(401, 'access_denied', 'Unauthorized'));
    if (o['audience'] !== this.settings.audience) return refuse(errorBody(403, 'access_denied', 'Service not enabled within domain'));
    return { fields: o };
  }

  /** A 200 token response carrying `token` (spec §2.2). */
  private grant(token: string): Prepared {
    return jsonBody(200, { access_token: token, expires_in: this.settings.tokenLifetimeSeconds, token_type: 'Bearer' }, { 'cache-control': 'no-store', pragma: 'no-cache' });
  }

  private tokenResponse(req: IncomingMessage, body: Buffer | undefined): Prepared {
    const parsed = this.parseTokenRequest(req, body);
    if (!('fields' in parsed)) return parsed;
    if (parsed.refusal !== undefined) return parsed.refusal;
    const lifetime = this.settings.tokenLifetimeSeconds;
    const iat = Math.floor(this.now() / 1000);
    this.tokenSerial++;
    const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
    const head = b64({ alg: 'HS256', typ: 'JWT', kid: 'mock-api' });
    const payload = b64({
      iss: `${this.baseUrl}/`,
      sub: `${this.settings.clientId}@clients`,
      aud: this.settings.audience,
      iat,
      exp: iat + lifetime,
      gty: 'client-credentials',
      jti: `${this.tokenSerial.toString(36)}.${randomBytes(6).toString('hex')}`,
    });
    const sig = createHmac('sha256', this.signingKey).update(`${head}.${payload}`).digest('base64url');
    const token = `${head}.${payload}.${sig}`;
    this.tokens.set(token, this.now() + lifetime * 1000);
    this.stats.tokensIssued++;
    return this.grant(token);
  }

  // ---- site list (spec §4.2, §5.6) ---------------------------------------------------

  private async handleSites(req: IncomingMessage, res: ServerResponse, path: string, ms: string, trial: string): Promise<void> {
    const clean = async (): Promise<Prepared> => this.sitesResponse(req, ms, trial);
    if (await this.transport('sites', res, path, clean)) return;
    const found = this.sitesFound(req, ms, trial);
    if ('sites' in found) {
      const rule = this.faults.take('sites', 'content', path, () => found.sites.length > 0);
      if (rule?.kind === 'loneSurrogate') {
        // Well-formed JSON.stringify writes a lone surrogate as the escape text \ud800.
        return this.send(res, jsonBody(200, found.sites.map((s, i) => (i === 0 ? { ...s, displayName: LONE_SURROGATE } : s)), found.headers));
      }
    }
    this.send(res, await clean());
  }

  private sitesResponse(req: IncomingMessage, msRaw: string, trialRaw: string): Prepared {
    const found = this.sitesFound(req, msRaw, trialRaw);
    return 'sites' in found ? jsonBody(200, found.sites, found.headers) : found;
  }

  /** The site list a request may read, or the refusal. */
  private sitesFound(req: IncomingMessage, msRaw: string, trialRaw: string): { sites: SiteRecord[]; headers: Record<string, string> } | Prepared {
    if (req.headers.authorization !== undefined)
      return errorBody(400, 'invalid_request', 'the Authorization header must not be sent to the site list');
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || origin.length === 0) return errorBody(403, 'forbidden', 'an Origin header is required');
    if (!this.settings.allowedOrigins.includes(origin)) return errorBody(403, 'forbidden', 'origin not permitted for this study website');
    let ms: string;
    let trial: string;
    try {
      ms = decodeURIComponent(msRaw);
      trial = decodeURIComponent(trialRaw);
    } catch {
      return errorBody(404, 'not_found', 'unknown study website or trial');
    }
    const sites = this.sites[trial];
    if (ms !== this.settings.micrositeId || sites === undefined) return errorBody(404, 'not_found', 'unknown study website or trial');
    return { sites, headers: { 'access-control-allow-origin': origin, vary: 'Origin' } };
  }

  // ---- events (spec §4.3, §6, §9) ----------------------------------------------------

  private async handleEvents(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const clean = async (): Promise<Prepared> => this.eventsResponse(req, path, false);
    if (await this.transport('events', res, path, clean)) return;
    this.send(res, this.eventsResponse(req, path, true));
  }

  private authorized(req: IncomingMessage): boolean {
    const h = req.headers.authorization;
    if (typeof h !== 'string') return false;
    const m = /^Bearer +(\S+)\s*$/i.exec(h);
    if (!m) return false;
    const exp = this.tokens.get(m[1]!);
    if (exp === undefined) return false;
    if (this.now() >= exp) {
      this.tokens.delete(m[1]!);
      return false;
    }
    return true;
  }

  private unauthorized(description: string): Prepared {
    return errorBody(401, 'unauthorized', description, { 'www-authenticate': 'Bearer error="invalid_token"' });
  }

  private eventsResponse(req: IncomingMessage, path: string, withFaults: boolean): Prepared {
    if (!this.authorized(req)) return this.unauthorized('missing, unknown or expired bearer token');
    if (withFaults) {
      const rule = this.faults.take('events', 'auth', path);
      if (rule?.kind === 'revokeTokens') {
        this.revokeTokens();
        return this.unauthorized('token revoked');
      }
      if (rule?.kind === 'always401') return this.unauthorized('token rejected');
    }
    const url = new URL(req.url ?? '/', this.baseUrl);
    const special = this.specialPage(url);
    if (special !== undefined) return { status: 200, headers: { 'content-type': JSON_TYPE }, body: special };
    const parsed = this.parseQuery(url);
    if ('error' in parsed) return errorBody(400, 'invalid_request', parsed.error);
    const { filter, after, limit } = parsed;
    const visible = this.visible();
    const scan = this.store.scan(filter, after, limit, visible);
    const nextAfter = scan.nextAfter;
    const nextPage = this.cursorUrl(filter, nextAfter, limit);
    const filterKey = JSON.stringify([filter.eventTypes, filter.trialIds]);
    const page: PageModel = {
      filter,
      after,
      limit,
      indexes: scan.indexes,
      nextPage,
      hasNextPage: scan.hasNextPage,
      requestUrl: this.baseUrl + (req.url ?? ''),
      filterKey,
    };
    const rule = withFaults ? this.faults.take('events', 'content', path, (r) => this.canApply(r, page)) : undefined;
    const out = rule ? this.faultedPage(rule, page) : this.renderPage(page.indexes.map((i) => this.store.bytesAt(i)), { nextPage, hasNextPage: scan.hasNextPage });
    if (withFaults) {
      if (!rule) this.stats.eventsServed += scan.indexes.length;
      this.history.push({ url: page.requestUrl, filterKey });
      if (this.history.length > 64) this.history.shift();
    }
    return { status: 200, headers: { 'content-type': JSON_TYPE }, body: out };
  }

  /**
   * The pages of the fault URLs that outlive their rule: `?c=<n>` (`emptyPagesForever`)
   * and `?cursor=cycle.<id>.<step>.<length>` (`nextPage` `longCycle`); undefined for any
   * other URL. (`.` never occurs in a real cursor, which is base64url.)
   */
  private specialPage(url: URL): Buffer | undefined {
    const sp = url.searchParams;
    if (sp.has('c')) return this.emptyForeverPage();
    const m = /^cycle\.(\d{1,15})\.(\d{1,6})\.(\d{1,6})$/.exec(sp.get('cursor') ?? '');
    if (m === null) return undefined;
    const [id, step, length] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return this.renderPage([], { nextPage: this.cycleUrl(id, (step + 1) % Math.max(1, length), length), hasNextPage: true });
  }

  private emptyForeverPage(): Buffer {
    this.specialSerial++;
    return this.renderPage([], { nextPage: `${this.baseUrl}/rpi/events?c=${this.specialSerial}`, hasNextPage: true });
  }

  private cycleUrl(id: number, step: number, length: number): string {
    return `${this.baseUrl}/rpi/events?cursor=cycle.${id}.${step}.${length}`;
  }

  private cursorUrl(filter: StreamFilter, after: number, limit: number): string {
    const cursor = encodeCursor({ eventTypes: filter.eventTypes, trialIds: filter.trialIds, after, afterId: after > 0 ? this.store.idAt(after - 1) : null, limit });
    return `${this.baseUrl}/rpi/events?cursor=${cursor}`;
  }

  private parseQuery(url: URL): { filter: StreamFilter; after: number; limit: number } | { error: string } {
    const sp = url.searchParams;
    const visible = this.visible();
    let limit: number | undefined;
    const limitText = sp.get('limit');
    if (limitText !== null) {
      if (!/^\d{1,9}$/.test(limitText) || Number(limitText) < 1) return { error: 'limit must be a positive integer' };
      limit = Math.min(Number(limitText), this.settings.maxLimit);
    }
    const types = sp.getAll('eventTypes');
    const trials = sp.getAll('trialIds');
    const cursorText = sp.get('cursor');
    if (cursorText !== null) {
      const c = decodeCursor(cursorText);
      if (c === undefined) return { error: 'invalid cursor' };
      if (sp.has('startingAfter')) return { error: 'startingAfter cannot be combined with a cursor' };
      if ((types.length > 0 && JSON.stringify(types) !== JSON.stringify(c.eventTypes)) || (trials.length > 0 && JSON.stringify(trials) !== JSON.stringify(c.trialIds)))
        return { error: 'the cursor belongs to another filter' };
      let after = c.after;
      if (after > 0 && (after > this.store.count || this.store.idAt(after - 1) !== c.afterId)) {
        const idx = c.afterId === null ? undefined : eventIndexOfId(this.store.seed, c.afterId);
        if (idx === undefined) return { error: 'invalid cursor' };
        after = idx + 1;
      }
      if (after > visible) return { error: 'invalid cursor' };
      return { filter: this.store.compileFilter(c.eventTypes, c.trialIds), after, limit: limit ?? Math.min(c.limit, this.settings.maxLimit) };
    }
    if (types.length === 0 || types.some((t) => t.length === 0)) return { error: 'eventTypes is required (one query parameter per event type)' };
    if (trials.length === 0 || trials.some((t) => t.length === 0)) return { error: 'trialIds is required (one query parameter per trial id)' };
    let after = 0;
    const startingAfter = sp.get('startingAfter');
    if (startingAfter !== null) {
      const idx = eventIndexOfId(this.store.seed, startingAfter);
      if (idx === undefined || idx >= visible) return { error: 'startingAfter is not a known event id' };
      after = idx + 1;
    }
    return { filter: this.store.compileFilter(types, trials), after, limit: limit ?? this.settings.defaultLimit };
  }

  private renderPage(items: Buffer[], pagination: Pagination | undefined, shape: PageShape = {}): Buffer {
    const eventsKey = shape.escapedKeys === true ? '"\\u0065vents"' : '"events"';
    const paginationKey = shape.escapedKeys === true ? '"\\u0070agination"' : '"pagination"';
    const parts: Buffer[] = [Buffer.from(`{${eventsKey}:${shape.eventsNotArray === true ? '{"items":[' : '['}`)];
    items.forEach((b, i) => {
      if (i > 0) parts.push(COMMA);
      parts.push(b);
    });
    parts.push(Buffer.from(shape.eventsNotArray === true ? ']}' : ']'));
    if (shape.duplicateEventsKey === true) parts.push(Buffer.from(',"events":[]'));
    if (pagination !== undefined) parts.push(Buffer.from(`,${paginationKey}:${JSON.stringify(pagination)}`));
    parts.push(Buffer.from('}'));
    return Buffer.concat(parts);
  }

  /**
   * Kind `padEvents`: the page with a last member `"pad":"xx…"` in every event's message,
   * `bytes` bytes in all when the clean page is smaller. Returned as pieces whose pads are
   * slices of one shared buffer.
   */
  private paddedPage(page: PageModel, pagination: Pagination, bytes: number): Buffer[] {
    const splits = page.indexes.map((i) => splitAtMessageEnd(this.store.jsonAt(i), 'pad'));
    const heads = splits.map((s) => Buffer.from(`${s.head}${s.empty ? '' : ','}"pad":"`));
    const tails = splits.map((s) => Buffer.from(`"${s.tail}`));
    const prefix = Buffer.from('{"events":[');
    const suffix = Buffer.from(`],"pagination":${JSON.stringify(pagination)}}`);
    const n = splits.length;
    let unpadded = prefix.length + suffix.length + Math.max(0, n - 1);
    for (let i = 0; i < n; i++) unpadded += heads[i]!.length + tails[i]!.length;
    const extra = Math.max(0, bytes - unpadded);
    const each = Math.floor(extra / n);
    const rest = extra % n;
    const longest = each + (rest > 0 ? 1 : 0);
    if (this.padBytes.length < longest) this.padBytes = Buffer.alloc(longest, 'x');
    const out: Buffer[] = [prefix];
    for (let i = 0; i < n; i++) {
      if (i > 0) out.push(COMMA);
      out.push(heads[i]!, this.padBytes.subarray(0, each + (i < rest ? 1 : 0)), tails[i]!);
    }
    out.push(suffix);
    return out;
  }

  private canApply(rule: FaultRule, page: PageModel): boolean {
    switch (rule.kind) {
      case 'eventWithoutId':
      case 'duplicateIdWithinPage':
      case 'duplicateEventsKey':
      case 'escapedKeys':
      case 'padEvents':
        return page.indexes.length > 0;
      case 'loneSurrogate':
      case 'duplicateIdKey':
        return page.indexes.length >= (rule.event ?? 1);
      case 'duplicateIdAcrossPages':
      case 'reorderedRedelivery':
        return this.store.lastMatchBefore(page.filter, page.after) >= 0;
      case 'sameIdOtherPayload':
        return page.indexes.length > 0 || this.store.lastMatchBefore(page.filter, page.after) >= 0;
      default:
        return true;
    }
  }

  private changedPayload(index: number): Buffer {
    const env = JSON.parse(this.store.jsonAt(index)) as Record<string, unknown>;
    const msg = { ...((env['message'] ?? {}) as Record<string, unknown>) };
    if (typeof msg['patientStatus'] === 'string') msg['patientStatus'] = msg['patientStatus'] === 'archive' ? 'preScreening' : 'archive';
    if (Array.isArray(msg['contactAttemptOutcomes'])) msg['contactAttemptOutcomes'] = ['reached'];
    msg['revision'] = 2;
    env['message'] = msg;
    return Buffer.from(JSON.stringify(env));
  }

  private faultedPage(rule: FaultRule, page: PageModel): Buffer | Buffer[] {
    const items = page.indexes.map((i) => this.store.bytesAt(i));
    let pagination: Pagination = { nextPage: page.nextPage, hasNextPage: page.hasNextPage };
    switch (rule.kind) {
      case 'missingPagination':
        return this.renderPage(items, undefined);
      case 'eventsNotArray':
        return this.renderPage(items, pagination, { eventsNotArray: true });
      case 'loneSurrogate':
      case 'duplicateIdKey': {
        const k = (rule.event ?? 1) - 1;
        const json = this.store.jsonAt(page.indexes[k]!);
        items[k] = Buffer.from(rule.kind === 'loneSurrogate' ? withLoneSurrogateNote(json) : withDuplicateIdKey(json));
        return this.renderPage(items, pagination);
      }
      case 'duplicateEventsKey':
        return this.renderPage(items, pagination, { duplicateEventsKey: true });
      case 'escapedKeys':
        return this.renderPage(
          page.indexes.map((i) => Buffer.from(withEscapedKeys(this.store.jsonAt(i)))),
          pagination,
          { escapedKeys: true },
        );
      case 'reorderedRedelivery': {
        const prev = this.store.lastMatchBefore(page.filter, page.after);
        items.unshift(Buffer.from(reorderedJson(JSON.parse(this.store.jsonAt(prev)))));
        return this.renderPage(items, pagination);
      }
      case 'emptyPagesForever':
        return this.emptyForeverPage();
      case 'padEvents':
        return this.paddedPage(page, pagination, rule.bytes!);
      case 'eventWithoutId': {
        const k = Math.floor(items.length / 2);
        const env = JSON.parse(this.store.jsonAt(page.indexes[k]!)) as Record<string, unknown>;
        delete env['id'];
        items[k] = Buffer.from(JSON.stringify(env));
        return this.renderPage(items, pagination);
      }
      case 'duplicateIdWithinPage': {
        const k = Math.floor(items.length / 2);
        items.splice(k + 1, 0, items[k]!);
        return this.renderPage(items, pagination);
      }
      case 'duplicateIdAcrossPages': {
        const prev = this.store.lastMatchBefore(page.filter, page.after);
        items.unshift(this.store.bytesAt(prev));
        return this.renderPage(items, pagination);
      }
      case 'sameIdOtherPayload': {
        const prev = this.store.lastMatchBefore(page.filter, page.after);
        if (prev >= 0) items.unshift(this.changedPayload(prev));
        else items.push(this.changedPayload(page.indexes[0]!));
        return this.renderPage(items, pagination);
      }
      case 'nextPage': {
        const u = new URL(page.nextPage);
        switch (rule.variant) {
          case 'otherOrigin': {
            const target = new URL(rule.url ?? 'http://127.0.0.1:9');
            pagination = { ...pagination, nextPage: `${target.origin}${u.pathname}${u.search}` };
            break;
          }
          case 'otherScheme':
            pagination = { ...pagination, nextPage: `https://${u.host}${u.pathname}${u.search}` };
            break;
          case 'otherPort': {
            const port = rule.port ?? (Number(u.port) === 65535 ? 1024 : Number(u.port) + 1);
            pagination = { ...pagination, nextPage: `${u.protocol}//${u.hostname}:${port}${u.pathname}${u.search}` };
            break;
          }
          case 'userInfo':
            pagination = { ...pagination, nextPage: `${u.protocol}//user:pass@${u.host}${u.pathname}${u.search}` };
            break;
          case 'relative':
            pagination = { ...pagination, nextPage: `${u.pathname}${u.search}` };
            break;
          case 'unchanged':
            pagination = { nextPage: page.requestUrl, hasNextPage: true };
            break;
          case 'cycle': {
            let earlier: string | undefined;
            for (let i = this.history.length - 1; i >= 0; i--) {
              const h = this.history[i]!;
              if (h.filterKey === page.filterKey && h.url !== page.requestUrl) {
                earlier = h.url;
                break;
              }
            }
            pagination = { nextPage: earlier ?? this.cursorUrl(page.filter, 0, page.limit), hasNextPage: true };
            break;
          }
          case 'oversizedUrl':
            pagination = { ...pagination, nextPage: `${page.nextPage}&pad=${'x'.repeat(rule.size ?? 100_000)}` };
            break;
          case 'longCycle':
            this.specialSerial++;
            pagination = { nextPage: this.cycleUrl(this.specialSerial, 0, rule.length ?? 3), hasNextPage: true };
            break;
          default:
            break;
        }
        return this.renderPage(items, pagination);
      }
      default:
        return this.renderPage(items, pagination);
    }
  }
}
