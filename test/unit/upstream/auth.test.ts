import { describe, expect, it } from 'vitest';
import { AuthError, ConfigError, UpstreamContractError } from '../../../src/errors.js';
import { refreshMarginMs, TokenProvider } from '../../../src/upstream/auth.js';
import type { HttpClient, HttpResponse } from '../../../src/upstream/http.js';

/** A fake HttpClient whose postJson answers from a script; counts calls. */
function fakeHttp(answer: (n: number) => { status: number; body: unknown } | Promise<{ status: number; body: unknown }>) {
  const calls: Array<{ url: string; body: unknown }> = [];
  const http = {
    async postJson(url: string, body: unknown): Promise<HttpResponse> {
      calls.push({ url, body });
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
const ok = (n: number, expiresIn = 3600) => ({ status: 200, body: { access_token: `tok-${n}`, expires_in: expiresIn, token_type: 'bearer', extra: 1 } });

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
  it.each([400, 401, 403])('HTTP %i → AuthError (exit 3) naming the OAuth error code, never the secret', async (status) => {
    const { http } = fakeHttp(() => ({ status, body: { error: 'access_denied', error_description: 'bad CANARY-SECRET-x' } }));
    const err = (await rejection(new TokenProvider({ credentials: creds, http }).getToken())) as AuthError;
    expect(err).toBeInstanceOf(AuthError);
    expect(err.exitCode).toBe(3);
    expect(err.message).toBe(
      `the token endpoint refused the client credentials (HTTP ${status} access_denied); check RECRUIT_ETL_CLIENT_ID / _SECRET / _AUDIENCE for this environment`,
    );
  });

  it('404 → ConfigError (wrong auth URL)', async () => {
    const { http } = fakeHttp(() => ({ status: 404, body: 'nope' }));
    await expect(new TokenProvider({ credentials: creds, http }).getToken()).rejects.toBeInstanceOf(ConfigError);
  });

  it.each([
    ['missing access_token', { expires_in: 10, token_type: 'Bearer' }],
    ['empty access_token', { access_token: '', expires_in: 10, token_type: 'Bearer' }],
    ['expires_in zero', { access_token: 'CANARY-TOKEN-1', expires_in: 0, token_type: 'Bearer' }],
    ['expires_in string', { access_token: 'CANARY-TOKEN-1', expires_in: '10', token_type: 'Bearer' }],
    ['token_type mac', { access_token: 'CANARY-TOKEN-1', expires_in: 10, token_type: 'mac' }],
    ['not JSON', '<html>CANARY-TOKEN-1</html>'],
  ])('invalid token response (%s) → UpstreamContractError without the token', async (_n, body) => {
    const { http } = fakeHttp(() => ({ status: 200, body }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).not.toContain('CANARY');
  });

  it('token_type is case-insensitive and unknown keys are ignored', async () => {
    const { http } = fakeHttp(() => ({ status: 200, body: { access_token: 'a', expires_in: 5, token_type: 'BEARER', scope: 's', id_token: 'x' } }));
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
    ['missing', { access_token: 'tok', token_type: 'Bearer' }],
    ['negative', { access_token: 'tok', expires_in: -5, token_type: 'Bearer' }],
    ['null', { access_token: 'tok', expires_in: null, token_type: 'Bearer' }],
    ['infinite (1e400)', '{"access_token":"tok","expires_in":1e400,"token_type":"Bearer"}'],
  ])('expires_in %s → UpstreamContractError naming expires_in (no default lifetime is guessed)', async (_n, body) => {
    const { http } = fakeHttp(() => ({ status: 200, body }));
    const err = await rejection(new TokenProvider({ credentials: creds, http }).getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).toContain('expires_in');
    expect(err.message).toContain('https://auth.example/oauth/token');
  });
});
