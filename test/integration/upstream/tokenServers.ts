/**
 * Real OAuth 2.0 token servers from npm, started on loopback for the tests of
 * tokenServers.test.ts: `oidc-provider` (RFC 6749-strict, client credentials with RFC 8707
 * resource indicators, JWT access tokens) and `oauth2-mock-server` (lenient).
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { errors } from 'oidc-provider';
import { OAuth2Server } from 'oauth2-mock-server';

/** A running token server. */
export interface TokenServer {
  /** `iss` of its tokens; also the job's `--auth-url` (its token endpoint is `{issuer}/oauth/token`). */
  issuer: string;
  jwksUri: string;
  /** Token requests received (every answer, refusals included). */
  requests: () => number;
  close: () => Promise<void>;
}

/** One client registered at oidc-provider. */
export interface OidcClient {
  clientId: string;
  clientSecret: string;
  /** RFC 7591 `token_endpoint_auth_method`: Basic (`client_secret_basic`) or body (`client_secret_post`). */
  method: 'client_secret_basic' | 'client_secret_post';
}

/**
 * Starts oidc-provider on 127.0.0.1 with the token endpoint at `/oauth/token`, the given
 * clients (client credentials only) and one resource server, `audience`, whose access tokens
 * are ES256 JWTs living `ttlSeconds`.
 *
 * @param opts.defaultResource also issue the resource's JWT when the request names no resource
 *   (RFC 8707 `defaultResource`), as a server configured for one API does
 */
export async function startOidcProvider(opts: {
  audience: string;
  clients: OidcClient[];
  ttlSeconds?: number;
  defaultResource?: boolean;
}): Promise<TokenServer> {
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const http = createServer();
  http.listen(0, '127.0.0.1');
  await new Promise((resolve) => http.once('listening', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: opts.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      token_endpoint_auth_method: c.method,
      id_token_signed_response_alg: 'ES256',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    })),
    jwks: { keys: [{ ...key, kid: 'test-es256', alg: 'ES256', use: 'sig' }] },
    routes: { token: '/oauth/token' },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => (opts.defaultResource ? opts.audience : undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== opts.audience) throw new errors.InvalidTarget();
          return {
            scope: 'events:read',
            audience: resource,
            accessTokenTTL: opts.ttlSeconds ?? 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  });
  let requests = 0;
  const callback = provider.callback();
  http.on('request', (req: IncomingMessage, res) => {
    if ((req.url ?? '').startsWith('/oauth/token')) requests++;
    void callback(req, res);
  });
  return { issuer, jwksUri: `${issuer}/jwks`, requests: () => requests, close: () => closeServer(http) };
}

/**
 * Starts oauth2-mock-server on 127.0.0.1 with the token endpoint at `/oauth/token` and one
 * RS256 key. It checks no client credentials and reads `aud`, not `audience`: a
 * `beforeTokenSigning` hook (its documented customisation) copies the posted `audience` into
 * the token's `aud`, and `tweak` may change the next responses (e.g. drop `expires_in`).
 */
export async function startOauth2MockServer(
  opts: { tweak?: (body: Record<string, unknown>) => void } = {},
): Promise<TokenServer & { server: OAuth2Server }> {
  const server = new OAuth2Server(undefined, undefined, { endpoints: { token: '/oauth/token' } });
  await server.issuer.keys.generate('RS256');
  let requests = 0;
  server.service.on('beforeTokenSigning', (token, req) => {
    const audience = (req.body as Record<string, unknown>)['audience'];
    if (typeof audience === 'string') token.payload['aud'] = audience;
  });
  server.service.on('beforeResponse', (response) => {
    requests++;
    if (opts.tweak) opts.tweak(response.body as Record<string, unknown>);
  });
  await server.start(0, '127.0.0.1');
  const issuer = server.issuer.url!;
  return { server, issuer, jwksUri: `${issuer}/jwks`, requests: () => requests, close: () => server.stop() };
}

function closeServer(http: Server): Promise<void> {
  return new Promise((resolve) => {
    http.close(() => resolve());
    http.closeAllConnections();
  });
}
