/**
 * HTTP plumbing shared by the simulator's endpoints: prepared responses, JSON and error
 * bodies, sending, and the context an endpoint gets from the server.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultEndpoint, FaultRegistry } from './faults.js';
import type { ResolvedMockApiOptions } from './options.js';

/** A response computed before anything is sent (so a transport fault can still break it). */
export interface Prepared {
  status: number;
  headers: Record<string, string>;
  /** One buffer, or pieces sent one after the other (large padded pages). */
  body: Buffer | Buffer[];
}

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

/** Settings the server reads (`tokenLifetimeSeconds` changes at run time). */
export type ServerSettings = Pick<
  ResolvedMockApiOptions,
  | 'host'
  | 'port'
  | 'clientId'
  | 'clientSecret'
  | 'audience'
  | 'tokenLifetimeSeconds'
  | 'defaultLimit'
  | 'maxLimit'
  | 'micrositeId'
  | 'allowedOrigins'
>;

/** What an endpoint handler gets from the server. */
export interface EndpointContext {
  readonly settings: ServerSettings;
  readonly faults: FaultRegistry;
  readonly stats: MockApiStats;
  /** `http://host:port`, set once listening. */
  readonly baseUrl: string;
  /** Clock in epoch ms. */
  now(): number;
  /**
   * Applies a transport-phase fault of `endpoint` when one fires (`clean` computes the
   * proper answer for faults that send part of it).
   *
   * @returns true when the response is taken care of (sent, broken or hanging)
   */
  transport(endpoint: FaultEndpoint, res: ServerResponse, path: string, clean: () => Promise<Prepared>): Promise<boolean>;
}

/** One endpoint: answers a request whose path matched (method checked, counters counted). */
export type Handler = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

export const JSON_TYPE = 'application/json; charset=utf-8';

/** A JSON response of `value`. */
export const jsonBody = (status: number, value: unknown, headers: Record<string, string> = {}): Prepared => ({
  status,
  headers: { 'content-type': JSON_TYPE, ...headers },
  body: Buffer.from(JSON.stringify(value)),
});

/** An OAuth-style error response `{"error":…,"error_description":…}`. */
export const errorBody = (status: number, error: string, description: string, headers: Record<string, string> = {}): Prepared =>
  jsonBody(status, { error, error_description: description }, headers);

/** The `error` of a simulated HTTP status (kind `status` without `body`). */
export const DEFAULT_ERROR: Readonly<Record<number, string>> = {
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

/** The body as one buffer. */
export const flat = (p: Prepared): Buffer => (Array.isArray(p.body) ? Buffer.concat(p.body) : p.body);

/** Body length in bytes. */
export const bodyLength = (p: Prepared): number => (Array.isArray(p.body) ? p.body.reduce((n, b) => n + b.length, 0) : p.body.length);

/** Sends `p` whole, with its `Content-Length`. */
export function send(res: ServerResponse, p: Prepared): void {
  res.writeHead(p.status, { ...p.headers, 'content-length': String(bodyLength(p)) });
  if (Array.isArray(p.body)) {
    for (const b of p.body) res.write(b);
    res.end();
  } else res.end(p.body);
}

/** 405 with `Allow`, after draining the request body. */
export function methodNotAllowed(req: IncomingMessage, res: ServerResponse, allow: string): void {
  req.resume();
  send(res, errorBody(405, 'method_not_allowed', `use ${allow}`, { allow }));
}
