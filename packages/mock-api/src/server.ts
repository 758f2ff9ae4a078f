/**
 * The simulator's HTTP server (`node:http`): routing, the request log and counters,
 * socket and timer bookkeeping, and the transport phase of faults.ts. The endpoints live
 * in tokenEndpoint.ts, sitesEndpoint.ts and eventsEndpoint.ts.
 *
 * @module
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { EventStore } from './eventStore.js';
import { EventsEndpoint } from './eventsEndpoint.js';
import type { FaultEndpoint, FaultRegistry } from './faults.js';
import {
  errorBody,
  methodNotAllowed,
  send,
  type EndpointContext,
  type MockApiStats,
  type Prepared,
  type RequestLogEntry,
  type ServerSettings,
} from './http.js';
import { SITES_PATH, SitesEndpoint } from './sitesEndpoint.js';
import type { JwtVerifier } from './jwtIssuer.js';
import { TokenEndpoint } from './tokenEndpoint.js';
import { applyTransportFault, type TransportIo } from './transport.js';
import type { SiteRecord } from './types.js';

export type { MockApiStats, RequestLogEntry, ServerSettings } from './http.js';
export { badToken } from './tokenEndpoint.js';

/** Requests kept in {@link MockApiStats.requestLog}. */
const LOG_MAX = 1000;

/** The server and its mutable state. */
export class MockServer implements EndpointContext {
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
  private closed = false;
  private readonly token: TokenEndpoint;
  private readonly sites: SitesEndpoint;
  private readonly events: EventsEndpoint;
  private readonly io: TransportIo;

  /**
   * @param sites site-list records per trial id
   * @param visible how many events (a prefix of `store`) are served now
   * @param now clock in epoch ms (token expiry, log durations)
   * @param verifier accepts the JWTs of a trusted issuer too (`trustedIssuer`)
   */
  constructor(
    readonly settings: ServerSettings,
    store: EventStore,
    sites: Record<string, SiteRecord[]>,
    visible: () => number,
    readonly faults: FaultRegistry,
    private readonly logger: Logger,
    readonly now: () => number,
    verifier?: JwtVerifier,
  ) {
    this.token = new TokenEndpoint(this, verifier);
    this.sites = new SitesEndpoint(this, sites);
    this.events = new EventsEndpoint(this, store, visible, this.token);
    this.io = {
      sleep: (ms) => this.sleep(ms),
      later: (ms, fn) => void this.sleep(ms).then(fn),
      closed: () => this.closed,
      baseUrl: () => this.baseUrl,
      sampleEvent: () => (store.count > 0 ? store.bytesAt(0) : undefined),
    };
    this.server = createServer({ keepAlive: true }, (req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        this.logger.error({ err, path: (req.url ?? '').split('?')[0] }, 'mock-api handler failed');
        if (!res.headersSent) send(res, errorBody(500, 'server_error', 'internal simulator error'));
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

  /** Invalidates every token issued so far (later calls get 401). */
  revokeTokens(): void {
    this.token.revokeTokens();
  }

  /** See {@link EndpointContext.transport}. */
  async transport(endpoint: FaultEndpoint, res: ServerResponse, path: string, clean: () => Promise<Prepared>): Promise<boolean> {
    const rule = this.faults.take(endpoint, 'transport', path);
    if (rule === undefined) return false;
    return applyTransportFault(rule, endpoint, res, clean, this.io);
  }

  /** Waits `ms` ms; the timer is cleared (and the promise left pending) by `close()`. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
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
      if (method !== 'POST') return methodNotAllowed(req, res, 'POST');
      return this.token.handle(req, res, path);
    }
    if (path === '/rpi/events') {
      this.stats.eventRequests++;
      if (method !== 'GET') return methodNotAllowed(req, res, 'GET');
      req.resume();
      return this.events.handle(req, res, path);
    }
    const m = SITES_PATH.exec(path);
    if (m) {
      this.stats.siteRequests++;
      if (method !== 'GET') return methodNotAllowed(req, res, 'GET');
      req.resume();
      return this.sites.handle(req, res, path, m[1]!, m[2]!);
    }
    this.stats.otherRequests++;
    req.resume();
    send(res, errorBody(404, 'not_found', 'no such endpoint'));
  }
}
