import { afterEach, describe, expect, it } from 'vitest';
import { AuthError, UpstreamContractError, UpstreamUnavailableError } from '../../../src/errors.js';
import { TokenProvider } from '../../../src/upstream/auth.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { fakeSleep, sendJson, startStub, rejection, type Stub, type StubHandler } from './stub.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(handler: StubHandler): Promise<{ auth: Stub; tokens: TokenProvider }> {
  const auth = await startStub(handler);
  const http = new HttpClient({ policy: { maxPostAttempts: 3 }, sleep: fakeSleep().sleep });
  cleanups.push(
    () => auth.close(),
    () => http.close(),
  );
  const tokens = new TokenProvider({
    credentials: { authUrl: `${auth.origin}/tenant`, clientId: 'c', clientSecret: 'CANARY-SECRET-1', audience: 'a' },
    http,
  });
  return { auth, tokens };
}

describe('token endpoint over HTTP', () => {
  it('401 → AuthError (exit 3), not retried', async () => {
    const { auth, tokens } = await setup((_req, res) => sendJson(res, 401, { error: 'access_denied' }));
    const err = (await rejection(tokens.getToken())) as AuthError;
    expect(err).toBeInstanceOf(AuthError);
    expect(err.exitCode).toBe(3);
    expect(auth.requests).toHaveLength(1);
    expect(auth.requests[0]!.url).toBe('/tenant/oauth/token');
  });

  it('503 → retried (maxPostAttempts) then UpstreamUnavailableError (exit 4)', async () => {
    const { auth, tokens } = await setup((_req, res) => sendJson(res, 503, {}));
    const err = (await rejection(tokens.getToken())) as UpstreamUnavailableError;
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.exitCode).toBe(4);
    expect(err.message).toContain('POST');
    expect(err.message).toContain('3 attempts');
    expect(auth.requests).toHaveLength(3);
  });

  it('503 then 200 → token', async () => {
    const { auth, tokens } = await setup((_req, res, _b, n) =>
      n === 1 ? sendJson(res, 503, {}) : sendJson(res, 200, { access_token: 'T', expires_in: 60, token_type: 'Bearer' }),
    );
    expect(await tokens.getToken()).toBe('T');
    expect(auth.requests).toHaveLength(2);
  });
});

describe('token endpoint sending a malformed access_token', () => {
  it('a token with CR/LF never reaches a request header: UpstreamContractError (exit 6), not exit 1 or 7', async () => {
    const { auth, tokens } = await setup((_req, res) =>
      sendJson(res, 200, { access_token: 'CANARY-TOKEN-1\r\nX-Injected: yes', expires_in: 60, token_type: 'Bearer' }),
    );
    const err = await rejection(tokens.getToken());
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as UpstreamContractError).exitCode).toBe(6);
    expect(err.message).toContain(`the token endpoint ${auth.origin}/tenant/oauth/token`);
    expect(err.message).toContain('line break');
    expect(err.message).not.toContain('CANARY');
    expect(auth.requests).toHaveLength(1);
  });
});
