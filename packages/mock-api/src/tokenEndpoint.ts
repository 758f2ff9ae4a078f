/**
 * The token endpoint `POST /oauth/token`: client-credentials
 * grants of JWT-shaped bearer tokens, the store of issued tokens the events endpoint
 * checks, and the token faults of the content phase (`echoSecret`, `badToken`).
 *
 * @module
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BadTokenVariant } from './faults.js';
import type { JwtVerifier } from './jwtIssuer.js';
import { errorBody, jsonBody, send, type EndpointContext, type Prepared } from './http.js';

/** A token request that parsed, before the grant. */
interface TokenRequest {
  /** The posted fields (form or JSON). */
  fields: Record<string, unknown>;
  /** The refusal, when the request would not be granted. */
  refusal?: Prepared;
}

/** Largest token request body, in bytes (413 beyond). */
const MAX_BODY = 64 * 1024;

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

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
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

/** Most tokens of a trusted issuer remembered as accepted, or as revoked. */
const MAX_FOREIGN_TOKENS = 1024;

/** The token endpoint and the tokens it issued. */
export class TokenEndpoint {
  /** Issued tokens → expiry, epoch ms. */
  private tokens = new Map<string, number>();
  private tokenSerial = 0;
  private readonly signingKey = randomBytes(32);
  /** Tokens of the trusted issuer accepted since the last revocation. */
  private readonly foreignAccepted = new Set<string>();
  /** Tokens of the trusted issuer revoked by `revokeTokens` (they stay refused). */
  private readonly foreignRevoked = new Set<string>();

  /**
   * @param verifier when given, a bearer token this endpoint did not issue is accepted if it
   *   verifies there (a JWT of the trusted issuer, see jwtIssuer.ts)
   */
  constructor(
    private readonly ctx: EndpointContext,
    private readonly verifier?: JwtVerifier,
  ) {}

  /** Answers one `POST /oauth/token`. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await readBody(req, MAX_BODY);
    const clean = async (): Promise<Prepared> => this.tokenResponse(req, body);
    if (await this.ctx.transport('token', res, path, clean)) return;
    const parsed = this.parseTokenRequest(req, body);
    const rule =
      'fields' in parsed
        ? this.ctx.faults.take('token', 'content', path, (r) => (r.kind === 'badToken' ? parsed.refusal === undefined : true))
        : undefined;
    if (rule !== undefined && 'fields' in parsed) {
      if (rule.kind === 'echoSecret') return send(res, echoSecret(parsed.fields));
      if (rule.kind === 'badToken') return send(res, this.grant(badToken(rule.variant as BadTokenVariant)));
    }
    send(res, await clean());
  }

  /** True when `req` carries `Authorization: Bearer <a token issued, not expired, not revoked>`. */
  async authorized(req: IncomingMessage): Promise<boolean> {
    const h = req.headers.authorization;
    if (typeof h !== 'string') return false;
    const m = /^Bearer +(\S+)\s*$/i.exec(h);
    if (!m) return false;
    const exp = this.tokens.get(m[1]!);
    if (exp === undefined) return this.foreignAuthorized(m[1]!);
    if (this.ctx.now() >= exp) {
      this.tokens.delete(m[1]!);
      return false;
    }
    return true;
  }

  /** Invalidates every token issued (or accepted from the trusted issuer) so far (later calls get 401). */
  revokeTokens(): void {
    this.tokens = new Map();
    for (const t of this.foreignAccepted) remember(this.foreignRevoked, t);
    this.foreignAccepted.clear();
  }

  /** A token of the trusted issuer: valid there, and not revoked here. */
  private async foreignAuthorized(token: string): Promise<boolean> {
    if (this.verifier === undefined || this.foreignRevoked.has(token) || !(await this.verifier.verify(token))) return false;
    remember(this.foreignAccepted, token);
    return true;
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
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return errorBody(400, 'invalid_request', 'body must be a JSON object');
    const o = { ...basicCredentials(req), ...(parsed as Record<string, unknown>) };
    const refuse = (refusal: Prepared): TokenRequest => ({ fields: o, refusal });
    for (const f of ['client_id', 'client_secret', 'audience', 'grant_type']) {
      const v = o[f];
      if (typeof v !== 'string' || v.length === 0) return refuse(errorBody(400, 'invalid_request', `missing or invalid field ${f}`));
    }
    const settings = this.ctx.settings;
    if (o['grant_type'] !== 'client_credentials') return refuse(errorBody(400, 'invalid_request', 'grant_type must be client_credentials'));
    if (o['client_id'] !== settings.clientId || o['client_secret'] !== settings.clientSecret)
      return refuse(errorBody(401, 'access_denied', 'Unauthorized'));
    if (o['audience'] !== settings.audience) return refuse(errorBody(403, 'access_denied', 'Service not enabled within domain'));
    return { fields: o };
  }

  /** A 200 token response carrying `token`. */
  private grant(token: string): Prepared {
    return jsonBody(
      200,
      { access_token: token, expires_in: this.ctx.settings.tokenLifetimeSeconds, token_type: 'Bearer' },
      { 'cache-control': 'no-store', pragma: 'no-cache' },
    );
  }

  private tokenResponse(req: IncomingMessage, body: Buffer | undefined): Prepared {
    const parsed = this.parseTokenRequest(req, body);
    if (!('fields' in parsed)) return parsed;
    if (parsed.refusal !== undefined) return parsed.refusal;
    const { settings, stats } = this.ctx;
    const lifetime = settings.tokenLifetimeSeconds;
    const iat = Math.floor(this.ctx.now() / 1000);
    this.tokenSerial++;
    const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
    const head = b64({ alg: 'HS256', typ: 'JWT', kid: 'mock-api' });
    const payload = b64({
      iss: `${this.ctx.baseUrl}/`,
      sub: `${settings.clientId}@clients`,
      aud: settings.audience,
      iat,
      exp: iat + lifetime,
      gty: 'client-credentials',
      jti: `${this.tokenSerial.toString(36)}.${randomBytes(6).toString('hex')}`,
    });
    const sig = createHmac('sha256', this.signingKey).update(`${head}.${payload}`).digest('base64url');
    const token = `${head}.${payload}.${sig}`;
    this.tokens.set(token, this.ctx.now() + lifetime * 1000);
    stats.tokensIssued++;
    return this.grant(token);
  }
}

/** Kind `echoSecret`: a 400 whose error text carries the posted client id and secret. */
function echoSecret(fields: Record<string, unknown>): Prepared {
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  const id = text(fields['client_id']);
  const secret = text(fields['client_secret']);
  return errorBody(400, `invalid_client: ${secret}`, `client ${id} with secret ${secret} refused`);
}

/** Adds `token` to `set`, dropping the oldest entry beyond {@link MAX_FOREIGN_TOKENS}. */
function remember(set: Set<string>, token: string): void {
  set.delete(token);
  set.add(token);
  if (set.size > MAX_FOREIGN_TOKENS) set.delete(set.values().next().value!);
}

/**
 * `client_id` and `client_secret` of an `Authorization: Basic` header (RFC 6749 §2.3.1: both
 * form-urlencoded before base64), or nothing. Fields in the body win over the header.
 */
function basicCredentials(req: IncomingMessage): Record<string, string> {
  const m = /^Basic +([A-Za-z0-9+/]+=*)\s*$/i.exec(String(req.headers.authorization ?? ''));
  if (!m) return {};
  const pair = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = pair.indexOf(':');
  if (colon < 0) return {};
  const decode = (v: string): string => new URLSearchParams(`v=${v}`).get('v') ?? '';
  return { client_id: decode(pair.slice(0, colon)), client_secret: decode(pair.slice(colon + 1)) };
}
