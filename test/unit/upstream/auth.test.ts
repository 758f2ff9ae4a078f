import { describe, expect, it } from 'vitest';
import { AuthError, ConfigError, UpstreamContractError } from '../../../src/errors.js';
import {
  DEFAULT_TOKEN_LIFETIME_S,
  MAX_ERROR_DESCRIPTION_LENGTH,
  refreshMarginMs,
  tokenRequest,
  TokenProvider,
} from '../../../src/upstream/auth.js';
import type { HttpClient, HttpResponse } from '../../../src/upstream/http.js';

/** A fake HttpClient whose postText answers from a script; counts calls. */
function fakeHttp(answer: (n: number) => { status: number; body: unknown } | Promise<{ status: number; body: unknown }>) {
  const calls: Array<{ url: string; body: unknown; headers: Record<string, string> }> = [];
  const http = {
    async postText(url: string, text: string, headers: Record<string, string>): Promise<HttpResponse> {
      const body: unknown =
        headers['content-type'] === 'application/json' ? JSON.parse(text) : Object.fromEntries(new URLSearchParams(text));
      calls.push({ url, body, headers });
      const a = await answer(calls.length);
      const bodyText = typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
      return { status: a.status, headers: {}, bodyText, bytes: bodyText.length, url };
    },
  } as unknown as HttpClient;
  return { http, calls };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

const creds = { authUrl: 'https://auth.example/', clientId: 'id', clientSecret: 'CANARY-SECRET-x', audience: 'aud' };
const ok = (n: number, expiresIn = 3600) => ({
  status: 200,
  body: { access_token: `tok-${n}`, expires_in: expiresIn, token_type: 'bearer', extra: 1 },
});

describe('TokenProvider timing', () => {
  it('margin = min(60 s, lifetime / 10)', () => {
    expect(refreshMarginMs(3_600_000)).toBe(60_000);
    expect(refreshMarginMs(100_000)).toBe(10_000);
    expect(refreshMarginMs(600_000)).toBe(60_000);
  });

  it('3600 s token: reused until 60 s before expiry, refreshed from then on', async () => {
    let now = 1_000_000;
    const { http, calls } = fakeHttp((n) => ok(n));
    const tp = new TokenProvider({ credentials: creds, http, now: () => now });
    expect(await tp.getToken()).toBe('tok-1');
    expect(calls[0]!.url).toBe('https://auth.example/oauth/token');
    now += 3_540_000 - 1;
    expect(await tp.getToken()).toBe('tok-1');
    now += 1;
    expect(await tp.getToken()).toBe('tok-2');
    expect(tp.stats.requests).toBe(2);
  });

  it('100 s token: margin 10 s', async () => {
    let now = 0;
    const { http } = fakeHttp((n) => ok(n, 100));
    const tp = new TokenProvider({ credentials: creds, http, now: () => now });
    await tp.getToken();
    now = 89_999;
    expect(await tp.getToken()).toBe('tok-1');
    now = 90_000;
    expect(await tp.getToken()).toBe('tok-2');
  });

  it('many concurrent callers at expiry share ONE request', async () => {
    let now = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { http, calls } = fakeHttp(async (n) => {
      if (n === 2) await gate;
      return ok(n);
    });
    const tp = new TokenProvider({ credentials: creds, http, now: () => now });
    await tp.getToken();
    now = 3_600_000;
    const waiting = Array.from({ length: 50 }, () => tp.getToken());
    await new Promise((r) => setTimeout(r, 10));
    release();
    const tokens = await Promise.all(waiting);
    expect(new Set(tokens)).toEqual(new Set(['tok-2']));
    expect(calls).toHaveLength(2);
    expect(tp.stats.requests).toBe(2);
  });

  it('invalidate drops only the current token: many 401s on it cause one refresh', async () => {
    const { http, calls } = fakeHttp((n) => ok(n));
    const tp = new TokenProvider({ credentials: creds, http, now: () => 0 });
    const t1 = await tp.getToken();
    tp.invalidate(t1);
    const t2 = await tp.getToken();
    tp.invalidate(t1); // a late 401 on the old token
    expect(await tp.getToken()).toBe(t2);
    expect(calls).toHaveLength(2);
  });

  it('an aborted caller stops waiting; the shared request still serves the others', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { http, calls } = fakeHttp(async (n) => {
      await gate;
      return ok(n);
    });
    const tp = new TokenProvider({ credentials: creds, http });
    const ac = new AbortController();
    const a = tp.getToken(ac.signal);
    const b = tp.getToken();
    ac.abort(new Error('bye'));
    await expect(a).rejects.toThrow('bye');
    release();
    expect(await b).toBe('tok-1');
    expect(calls).toHaveLength(1);
  });
});

describe('TokenProvider errors', () => {
  it.each([400, 401, 403])('HTTP %i → AuthError (exit 3) naming the OAuth error code and description, never the secret', async (status) => {
    const { http } = fakeHttp(() => ({ status, body: { error: 'access_denied', error_description: 'bad CANARY-SECRET-x' } }));
    const err = (await rejection(new TokenProvider({ credentials: creds, http }).getToken())) as AuthError;
    expect(err).toBeInstanceOf(AuthError);
    expect(err.exitCode).toBe(3);
    expect(err.message).toBe(
      `the token endpoint refused the client credentials (HTTP ${status} access_denied: "bad [redacted]"); check RECRUIT_ETL_CLIENT_ID / _SECRET / _AUDIENCE for this environment`,
    );
  });

  it.each([
    [
      'invalid_request',
      2,
      /refused the token request as malformed \(HTTP 400 invalid_request: "only json"\); check --token-request-format/,
    ],
    ['unsupported_grant_type', 2, /malformed \(HTTP 400 unsupported_grant_type: "only json"\); check --token-request-format/],
    [
      'invalid_client',
      3,
      /refused the client credentials \(HTTP 400 invalid_client: "only json"\); check RECRUIT_ETL_CLIENT_ID \/ _SECRET .*--token-client-auth/,
    ],
    ['invalid_target', 3, /refused the audience \(HTTP 400 invalid_target: "only json"\); check RECRUIT_ETL_AUDIENCE/],
    [
      'invalid_grant',
      3,
      /refused the client credentials \(HTTP 400 invalid_grant: "only json"\); check RECRUIT_ETL_CLIENT_ID \/ _SECRET \/ _AUDIENCE/,
    ],
  ])('error %s → exit %i with the hint that matches it', async (code, exit, message) => {
    const { http } = fakeHttp(() => ({ status: 400, body: { error: code, error_description: 'only json' } }));
    const err = (await rejection(new TokenProvider({ credentials: creds, http }).getToken())) as AuthError;
    expect(err.exitCode).toBe(exit);
    expect(err.message).toMatch(message);
  });

  it('error_description is cleaned: secrets, control and bidi characters, lone surrogates, quotes, length', async () => {
    const nasty = `a\r\nX-Evil: 1\u0000\u202e"q"\\ \ud800 CANARY-SECRET-x ${'y'.repeat(500)}`;
    const { http } = fakeHttp(() => ({ status: 401, body: { error: 'invalid_client', error_description: nasty } }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    const quoted = /invalid_client: "([^"]*)"/.exec(err.message)![1]!;
    expect(quoted.startsWith("a X-Evil: 1 'q'/ [redacted] yyy")).toBe(true);
    expect([...quoted]).toHaveLength(MAX_ERROR_DESCRIPTION_LENGTH + 1);
    expect(quoted.endsWith('…')).toBe(true);
    expect(err.message).not.toMatch(/[\u0000-\u001f\u202e\ud800]/);
  });

  it('a description that is not a string, or an error code that is not token-shaped, is left out', async () => {
    const { http } = fakeHttp(() => ({ status: 401, body: { error: 'invalid_client', error_description: { a: 1 } } }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err.message).toContain('(HTTP 401 invalid_client); check');
    const { http: http2 } = fakeHttp(() => ({ status: 401, body: { error: 'a b\nc', error_description: 'x' } }));
    const err2 = await rejection(new TokenProvider({ credentials: creds, http: http2 }).getToken());
    expect(err2.message).toContain('(HTTP 401); check');
  });

  it('404 → ConfigError (wrong auth URL)', async () => {
    const { http } = fakeHttp(() => ({ status: 404, body: 'nope' }));
    await expect(new TokenProvider({ credentials: creds, http }).getToken()).rejects.toBeInstanceOf(ConfigError);
  });

  it.each([
    ['missing access_token', { expires_in: 10, token_type: 'Bearer' }],
    ['empty access_token', { access_token: '', expires_in: 10, token_type: 'Bearer' }],
    ['expires_in zero', { access_token: 'CANARY-TOKEN-1', expires_in: 0, token_type: 'Bearer' }],
    ['expires_in text', { access_token: 'CANARY-TOKEN-1', expires_in: '10s', token_type: 'Bearer' }],
    ['token_type mac', { access_token: 'CANARY-TOKEN-1', expires_in: 10, token_type: 'mac' }],
    ['not JSON', '<html>CANARY-TOKEN-1</html>'],
  ])('invalid token response (%s) → UpstreamContractError without the token', async (_n, body) => {
    const { http } = fakeHttp(() => ({ status: 200, body }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).not.toContain('CANARY');
  });

  it('token_type is case-insensitive and unknown keys are ignored', async () => {
    const { http } = fakeHttp(() => ({
      status: 200,
      body: { access_token: 'a', expires_in: 5, token_type: 'BEARER', scope: 's', id_token: 'x' },
    }));
    expect(await new TokenProvider({ credentials: creds, http }).getToken()).toBe('a');
  });
});

describe('access_token syntax (RFC 6750 b64token)', () => {
  it.each([
    ['CR/LF (header injection)', 'CANARY-TOKEN-1\r\nX-Evil: 1', 'line break'],
    ['LF only', 'CANARY-TOKEN-1\n', 'line break'],
    ['non-ASCII', 'CANARY-TOKEN-é', 'non-ASCII'],
    ['a space', 'CANARY TOKEN', 'spaces'],
    ['a control character', 'CANARY-TOKEN-\u0000', 'control'],
    ['a quote', 'CANARY-TOKEN-"x"', 'b64token'],
    ['= inside', 'CANARY=TOKEN', 'b64token'],
    ['over 16 KiB', `CANARY-${'a'.repeat(16 * 1024)}`, 'more than 16384'],
  ])('an access_token with %s is a contract break (exit 6) naming the endpoint, never the value', async (_n, token, what) => {
    const { http } = fakeHttp(() => ({ status: 200, body: { access_token: token, expires_in: 60, token_type: 'Bearer' } }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as UpstreamContractError).exitCode).toBe(6);
    expect(err.message).toContain('the token endpoint https://auth.example/oauth/token answered HTTP 200 with an access_token that');
    expect(err.message).toContain(what);
    expect(err.message).not.toContain('CANARY');
  });

  it('valid b64tokens are accepted: JWTs, padding, the full alphabet, exactly 16 KiB', async () => {
    for (const token of ['eyJ.eyJ.sig-_', 'abc+/==', 'A-._~+/9', 'a'.repeat(16 * 1024)]) {
      const { http } = fakeHttp(() => ({ status: 200, body: { access_token: token, expires_in: 60, token_type: 'Bearer' } }));
      expect(await new TokenProvider({ credentials: creds, http }).getToken()).toBe(token);
    }
  });

  it.each([
    ['the string "3600"', { access_token: 'tok', expires_in: '3600', token_type: 'Bearer' }, 3600],
    ['absent', { access_token: 'tok', token_type: 'Bearer' }, DEFAULT_TOKEN_LIFETIME_S],
  ])('expires_in %s → that lifetime (refreshed at lifetime - margin)', async (_n, body, lifetimeS) => {
    let now = 0;
    const { http, calls } = fakeHttp(() => ({ status: 200, body }));
    const tp = new TokenProvider({ credentials: creds, http, now: () => now });
    await tp.getToken();
    const refreshAt = lifetimeS * 1000 - refreshMarginMs(lifetimeS * 1000);
    now = refreshAt - 1;
    await tp.getToken();
    expect(calls).toHaveLength(1);
    now = refreshAt;
    await tp.getToken();
    expect(calls).toHaveLength(2);
  });

  it.each([
    ['"0"', { access_token: 'tok', expires_in: '0', token_type: 'Bearer' }],
    ['"-5"', { access_token: 'tok', expires_in: '-5', token_type: 'Bearer' }],
    ['"1e3"', { access_token: 'tok', expires_in: '1e3', token_type: 'Bearer' }],
    ['" 60"', { access_token: 'tok', expires_in: ' 60', token_type: 'Bearer' }],
    ['"3600.5"', { access_token: 'tok', expires_in: '3600.5', token_type: 'Bearer' }],
    ['negative', { access_token: 'tok', expires_in: -5, token_type: 'Bearer' }],
    ['null', { access_token: 'tok', expires_in: null, token_type: 'Bearer' }],
    ['infinite (1e400)', '{"access_token":"tok","expires_in":1e400,"token_type":"Bearer"}'],
  ])('expires_in %s → UpstreamContractError naming expires_in', async (_n, body) => {
    const { http } = fakeHttp(() => ({ status: 200, body }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).toContain('expires_in');
    expect(err.message).toContain('https://auth.example/oauth/token');
  });
});

describe('token requests (RFC 6749 §4.4, §2.3.1)', () => {
  it('default: a JSON body with client_id, client_secret, audience and grant_type, no Authorization header', async () => {
    const { http, calls } = fakeHttp((n) => ok(n));
    await new TokenProvider({ credentials: creds, http }).getToken();
    expect(calls[0]!.headers['content-type']).toBe('application/json');
    expect(calls[0]!.headers['authorization']).toBeUndefined();
    expect(calls[0]!.body).toEqual({
      grant_type: 'client_credentials',
      audience: 'aud',
      client_id: 'id',
      client_secret: 'CANARY-SECRET-x',
    });
  });

  it('form + basic + resource: a form body without the secret, Basic of the form-urlencoded id and secret', () => {
    const req = tokenRequest({
      ...creds,
      clientId: 'a b:c',
      clientSecret: 'p%s+w/d:é ~*',
      requestFormat: 'form',
      clientAuth: 'basic',
      audienceParameter: 'resource',
    });
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req.body).toBe('grant_type=client_credentials&resource=aud');
    const basic = Buffer.from(req.headers['authorization']!.replace(/^Basic /, ''), 'base64').toString('utf8');
    expect(basic).toBe('a+b%3Ac:p%25s%2Bw%2Fd%3A%C3%A9+%7E*');
  });

  it('an endpoint echoing the Basic credentials or the form-encoded secret: both are redacted', async () => {
    const secret = 'CANARY SECRET+/x';
    const basic = tokenRequest({ ...creds, clientSecret: secret, clientAuth: 'basic' }).headers['authorization']!.replace('Basic ', '');
    const { http } = fakeHttp(() => ({
      status: 401,
      body: { error: 'invalid_client', error_description: `got ${basic} and CANARY+SECRET%2B%2Fx` },
    }));
    const err = await rejection(
      new TokenProvider({ credentials: { ...creds, clientSecret: secret, clientAuth: 'basic' }, http }).getToken(),
    );
    expect(err.message).toContain('"got [redacted] and [redacted]"');
  });

  it('json + basic: the JSON body carries no client credentials', () => {
    const req = tokenRequest({ ...creds, clientAuth: 'basic' });
    expect(JSON.parse(req.body)).toEqual({ grant_type: 'client_credentials', audience: 'aud' });
    expect(req.headers['authorization']).toMatch(/^Basic [A-Za-z0-9+/]+=*$/);
  });
});
