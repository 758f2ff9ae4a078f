/**
 * Token requests against real OAuth 2.0 servers from npm (docs/upstream.md "Token requests";
 * issue 25 point 1): oidc-provider 9.13.3 (strict: form bodies only, Basic or body client
 * authentication as registered, RFC 8707 resource indicators, ES256 JWT access tokens) and
 * oauth2-mock-server 8.2.3 (lenient: JSON or form, no client check). The events come from the
 * simulator, which accepts the JWTs of the server under test through its JWKS (`trustedIssuer`).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_TYPES } from '../../../src/config/config.js';
import { ConfigError, startMockApi, type MockApi, type TruthEvent } from '../../../packages/mock-api/src/index.js';
import { runCli } from '../../helpers/cli.js';
import { envFor } from '../../helpers/sim.js';
import { closedPort, countStatus, expectExactly, expectedAll, expectPrefix, extractOnce, readDb } from '../../helpers/faults.js';
import { tempDir } from '../../helpers/tmp.js';
import { startOauth2MockServer, startOidcProvider, type TokenServer } from './tokenServers.js';

const AUDIENCE = 'https://reporting.example-recruit.test';
const BASIC = {
  clientId: 'etl-basic',
  clientSecret: 'b4sic s3cret: with+/%&=~* (RFC 6749 VSCHAR)',
  method: 'client_secret_basic',
} as const;
const POST = { clientId: 'etl-post', clientSecret: 'post-secret-0123456789', method: 'client_secret_post' } as const;
const EVENTS = '/rpi/events';
const PAGE = 10;

let tmp: ReturnType<typeof tempDir>;
let api: MockApi | undefined;
let auth: TokenServer | undefined;
let expected: TruthEvent[];
let n = 0;
const freshDb = (): string => join(tmp.dir, `t${++n}.duckdb`);

/** The simulator, accepting the tokens of `server` (its own token endpoint stays unused). */
async function simFor(server: TokenServer): Promise<MockApi> {
  api = await startMockApi({
    port: 0,
    seed: 7,
    patientsPerTrial: 10,
    audience: AUDIENCE,
    trustedIssuer: { issuer: server.issuer, jwksUri: server.jwksUri },
  });
  expected = expectedAll(api);
  return api;
}

/** The job's settings for `server` (the token endpoint is `{issuer}/oauth/token`). */
function job(
  server: TokenServer,
  client: { clientId: string; clientSecret: string },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    authUrl: server.issuer,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    audience: AUDIENCE,
    pageSize: PAGE,
    ...extra,
  };
}

beforeEach(() => {
  tmp = tempDir('recruit-etl-token-servers-');
});
afterEach(async () => {
  await api?.close();
  await auth?.close();
  api = undefined;
  auth = undefined;
  tmp.cleanup();
});

describe('oidc-provider 9.13.3 (strict RFC 6749, resource indicators, JWT access tokens)', () => {
  it.each([
    ['form body, HTTP Basic', BASIC, 'basic'],
    ['form body, client credentials in the body', POST, 'body'],
  ])('%s, resource indicator: a full extract, one token, every event stored', async (_n, client, clientAuth) => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC, POST] });
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(
      sim,
      db,
      job(auth, client, { tokenRequestFormat: 'form', tokenClientAuth: clientAuth, tokenAudienceParameter: 'resource' }),
    );
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    expect(auth.requests()).toBe(1);
    expect(sim.stats.tokenRequests).toBe(0);
    expect(countStatus(sim, EVENTS, 401)).toBe(0);
  });

  it('the audience parameter with a server-side default resource: a full extract', async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC], defaultResource: true });
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, BASIC, { tokenRequestFormat: 'form', tokenClientAuth: 'basic' }));
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
  });

  it("the default JSON body is refused: exit 2 quoting the server's error_description, pointing at --token-request-format", async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [POST] });
    const sim = await simFor(auth);
    const out = await extractOnce(sim, freshDb(), job(auth, POST, { tokenAudienceParameter: 'resource' }));
    expect(out.exitCode, out.message).toBe(2);
    expect(out.message).toMatch(
      /refused the token request as malformed \(HTTP 400 invalid_request: "only application\/x-www-form-urlencoded content-type bodies are supported on POST \/oauth\/token"\); check --token-request-format/,
    );
    expect(out.message).not.toContain(POST.clientSecret);
    expect(auth.requests()).toBe(1);
    expect(sim.stats.eventRequests).toBe(0);
  });

  it('a wrong secret: exit 3, invalid_client with its description, pointing at the credentials, the secret nowhere', async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC] });
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(
      sim,
      db,
      job(
        auth,
        { clientId: BASIC.clientId, clientSecret: 'not-the-secret-4711' },
        { tokenRequestFormat: 'form', tokenClientAuth: 'basic', tokenAudienceParameter: 'resource' },
      ),
    );
    expect(out.exitCode, out.message).toBe(3);
    expect(out.message).toMatch(
      /refused the client credentials \(HTTP 401 invalid_client: "client authentication failed"\); check RECRUIT_ETL_CLIENT_ID \/ _SECRET/,
    );
    expect(out.message).not.toContain('not-the-secret-4711');
    expect(JSON.stringify((await readDb(db)).runs)).not.toContain('not-the-secret-4711');
    expect(sim.stats.eventRequests).toBe(0);
  });

  it('an audience the server does not know: exit 3, invalid_target, pointing at the audience', async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC] });
    const sim = await simFor(auth);
    const out = await extractOnce(
      sim,
      freshDb(),
      job(auth, BASIC, {
        tokenRequestFormat: 'form',
        tokenClientAuth: 'basic',
        tokenAudienceParameter: 'resource',
        audience: 'https://other.example',
      }),
    );
    expect(out.exitCode, out.message).toBe(3);
    expect(out.message).toMatch(/refused the audience \(HTTP 400 invalid_target/);
  });

  it('10 s tokens over a run of more than 10 s: refreshed before expiry (margin 1 s), never a 401', async () => {
    // oidc-provider's exp is whole seconds: a 10 s token lives 9 to 10 s, more than lifetime - margin.
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC], ttlSeconds: 10 });
    const sim = await simFor(auth);
    sim.faults.add({ endpoint: 'events', kind: 'latency', ms: Math.ceil(11_000 / expected.length), times: Infinity });
    const db = freshDb();
    const out = await extractOnce(
      sim,
      db,
      job(auth, BASIC, { tokenRequestFormat: 'form', tokenClientAuth: 'basic', tokenAudienceParameter: 'resource', pageSize: 1 }),
    );
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    expect(out.ms).toBeGreaterThan(10_000);
    expect(auth.requests()).toBeGreaterThanOrEqual(2);
    expect(auth.requests()).toBeLessThanOrEqual(Math.ceil(out.ms / 9000) + 1);
    expect(countStatus(sim, EVENTS, 401)).toBe(0);
  });

  it('a token revoked mid-run: one refresh, one retry, every event stored', async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [POST] });
    const sim = await simFor(auth);
    sim.faults.add({ endpoint: 'events', kind: 'revokeTokens', after: 3 });
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, POST, { tokenRequestFormat: 'form', tokenAudienceParameter: 'resource' }));
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    expect(auth.requests()).toBe(2);
    expect(countStatus(sim, EVENTS, 401)).toBe(1);
  });
});

describe('the CLI as a process against oidc-provider 9.13.3 (dist/cli.js; run `make build` first)', () => {
  it('RECRUIT_ETL_TOKEN_* variables: form + Basic + resource is exit 0; the default JSON body is exit 2 quoting the server, the secret in no output', async () => {
    auth = await startOidcProvider({ audience: AUDIENCE, clients: [BASIC] });
    const sim = await simFor(auth);
    const env = (db: string, extra: Record<string, string> = {}): Record<string, string> =>
      envFor(sim, db, {
        RECRUIT_ETL_AUTH_URL: auth!.issuer,
        RECRUIT_ETL_CLIENT_ID: BASIC.clientId,
        RECRUIT_ETL_CLIENT_SECRET: BASIC.clientSecret,
        RECRUIT_ETL_AUDIENCE: AUDIENCE,
        ...extra,
      });
    const strict = {
      RECRUIT_ETL_TOKEN_REQUEST_FORMAT: 'form',
      RECRUIT_ETL_TOKEN_CLIENT_AUTH: 'basic',
      RECRUIT_ETL_TOKEN_AUDIENCE_PARAMETER: 'resource',
    };
    const ok = await runCli(['extract'], env(freshDb(), strict), { timeoutMs: 30_000 });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('token issued');
    const refused = await runCli(['extract'], env(freshDb(), { RECRUIT_ETL_TOKEN_AUDIENCE_PARAMETER: 'resource' }), { timeoutMs: 30_000 });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(
      /^recruit-etl: error: .*HTTP 400 invalid_request: "only application\/x-www-form-urlencoded content-type bodies are supported on POST \/oauth\/token"\); check --token-request-format/,
    );
    for (const text of [ok.stdout, ok.stderr, refused.stdout, refused.stderr]) expect(text).not.toContain(BASIC.clientSecret);
  });
});

describe('oauth2-mock-server 8.2.3 (lenient)', () => {
  it.each([
    ['the default JSON body', {}],
    ['a form body with HTTP Basic', { tokenRequestFormat: 'form', tokenClientAuth: 'basic' }],
  ])('%s: a full extract, one token', async (_n, extra) => {
    auth = await startOauth2MockServer();
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, POST, extra));
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    expect(auth.requests()).toBe(1);
    expect(sim.stats.tokenRequests).toBe(0);
  });

  it('expires_in as the string "3600": accepted, one token for the run', async () => {
    auth = await startOauth2MockServer({ tweak: (body) => (body['expires_in'] = '3600') });
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, POST));
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    expect(auth.requests()).toBe(1);
  });

  it('expires_in absent and tokens that die after 1 s: the default lifetime, then a refresh on each 401; every event stored', async () => {
    const started = await startOauth2MockServer({ tweak: (body) => delete body['expires_in'] });
    auth = started;
    started.server.service.on('beforeTokenSigning', (token) => {
      token.payload['exp'] = Math.floor(Date.now() / 1000) + 1;
    });
    const sim = await simFor(auth);
    sim.faults.add({ endpoint: 'events', kind: 'latency', ms: 60, times: Infinity });
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, POST, { pageSize: 2 }));
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, sim.truth.events);
    const unauthorized = countStatus(sim, EVENTS, 401);
    expect(unauthorized).toBeGreaterThanOrEqual(1);
    expect(auth.requests()).toBe(1 + unauthorized);
  });

  it('expires_in "soon": exit 6 naming expires_in, nothing stored', async () => {
    auth = await startOauth2MockServer({ tweak: (body) => (body['expires_in'] = 'soon') });
    const sim = await simFor(auth);
    const db = freshDb();
    const out = await extractOnce(sim, db, job(auth, POST));
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toContain('expires_in');
    expectPrefix(await readDb(db), expected, 0, sim.truth.events);
  });
});

describe("the simulator's check of a trusted issuer's tokens (oauth2-mock-server 8.2.3 as the issuer)", () => {
  /** Status of one events request with `token`. */
  async function statusWith(sim: MockApi, token: string): Promise<number> {
    const q = new URLSearchParams({ trialIds: sim.truth.trialIds.join(','), eventTypes: DEFAULT_EVENT_TYPES.join(','), limit: '1' });
    const res = await fetch(`${sim.baseUrl}${EVENTS}?${q}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
    await res.body?.cancel();
    return res.status;
  }

  it('accepts its JWT for the audience; refuses another audience, an expired token, another key, alg none, a changed payload', async () => {
    const started = await startOauth2MockServer();
    auth = started;
    const sim = await simFor(auth);
    const issuer = started.server.issuer;
    const withAud = (aud: string) => (_h: unknown, payload: Record<string, unknown>) => void (payload['aud'] = aud);
    const good = await issuer.buildToken({ scopesOrTransform: withAud(AUDIENCE) });
    expect(await statusWith(sim, good)).toBe(200);
    expect(await statusWith(sim, await issuer.buildToken({ scopesOrTransform: withAud('https://other.example') }))).toBe(401);
    expect(await statusWith(sim, await issuer.buildToken({ scopesOrTransform: withAud(AUDIENCE), expiresIn: -10 }))).toBe(401);
    const [head, payload] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url');
    expect(await statusWith(sim, `${head}.${forged}.${good.split('.')[2]}`)).toBe(401);
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    expect(await statusWith(sim, `${none}.${payload}.`)).toBe(401);
    const other = await startOauth2MockServer();
    try {
      // Same claims, signed by another server's key: refused.
      const foreign = await other.server.issuer.buildToken({
        scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, iss: issuer.url }),
      });
      expect(await statusWith(sim, foreign)).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('a JWKS that cannot be read: the simulator does not start (ConfigError naming --trusted-jwks-uri)', async () => {
    const port = await closedPort();
    const start = startMockApi({
      port: 0,
      trustedIssuer: { issuer: `http://127.0.0.1:${port}`, jwksUri: `http://127.0.0.1:${port}/jwks` },
    });
    await expect(start).rejects.toBeInstanceOf(ConfigError);
    await expect(start).rejects.toThrow(/--trusted-jwks-uri: cannot read the JWKS/);
  });

  it('without trustedIssuer (the default) the same token is refused: only tokens of its own /oauth/token', async () => {
    const started = await startOauth2MockServer();
    auth = started;
    api = await startMockApi({ port: 0, seed: 7, patientsPerTrial: 10, audience: AUDIENCE });
    const token = await started.server.issuer.buildToken({ scopesOrTransform: (_h, p) => void (p['aud'] = AUDIENCE) });
    expect(await statusWith(api, token)).toBe(401);
  });
});
