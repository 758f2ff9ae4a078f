/**
 * Tokens (docs/contracts.md guarantee 5; docs/upstream.md "Tokens"; docs/security.md "Token responses").
 *
 * One token per lifetime, refreshed shortly before `expires_in` ends (margin = min(60 s,
 * lifetime / 10)); one refresh however many callers meet an expired token; one refresh and
 * one retry on a 401; no loop on a 401 after a refresh; refusals at the token endpoint are
 * exit 3, unavailability exit 4.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startMockApi, type MockApi, type MockApiOptions, type TruthEvent } from '../../packages/mock-api/src/index.js';
import { TokenProvider } from '../../src/upstream/auth.js';
import { tempDir } from '../helpers/tmp.js';
import { countStatus, expectExactly, expectPrefix, expectedAll, extractOnce, fastHttp, readDb, startTrap } from '../helpers/faults.js';

const SIM = { seed: 11, patientsPerTrial: 10 } as const;
const PAGE = 10;
const EVENTS = '/rpi/events';

let api: MockApi;
let tmp: ReturnType<typeof tempDir>;
let expected: TruthEvent[];
let n = 0;
const freshDb = (): string => join(tmp.dir, `t${++n}.duckdb`);

async function sim(extra: MockApiOptions = {}): Promise<void> {
  await api?.close();
  api = await startMockApi({ port: 0, ...SIM, ...extra });
  expected = expectedAll(api);
}

beforeEach(async () => {
  tmp = tempDir('recruit-etl-tokens-');
  await sim();
});
afterEach(async () => {
  await api.close();
  tmp.cleanup();
});

describe('token lifetime', () => {
  it('a run spanning several lifetimes: one token per lifetime, refreshed before expiry (never a 401)', async () => {
    const lifetimeMs = 1000;
    const marginMs = 100; // min(60 s, lifetime / 10)
    const latencyMs = 40; // < margin: a token sent just before the refresh point still arrives valid
    await sim({ tokenLifetimeSeconds: lifetimeMs / 1000 });
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: latencyMs, times: Infinity });
    const db = freshDb();
    // One event per page: enough latency-bound requests to span several lifetimes however fast the writer.
    const out = await extractOnce(api, db, { pageSize: 1 });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
    const fired = api.faults.fired();
    const spanMs = fired.at(-1)!.at - fired[0]!.at;
    expect(spanMs, 'the run spans at least three token lifetimes').toBeGreaterThanOrEqual(3 * lifetimeMs);
    // Proactive refresh: no request ever met an expired token.
    expect(countStatus(api, EVENTS, 401)).toBe(0);
    // At least one token per lifetime covered (each is valid 1 s at the server) ...
    expect(api.stats.tokenRequests).toBeGreaterThanOrEqual(Math.ceil(spanMs / lifetimeMs));
    // ... and at most one per (lifetime - margin) of the whole run, plus the first.
    expect(api.stats.tokenRequests).toBeLessThanOrEqual(Math.ceil(out.ms / (lifetimeMs - marginMs)) + 1);
    expect(api.stats.tokenRequests).toBe(api.stats.tokensIssued);
  });

  it('a long lifetime: exactly one token for the whole run', async () => {
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: 5 });
    expect(out.exitCode, out.message).toBe(0);
    expect(api.stats.tokenRequests).toBe(1);
  });

  it('many requests at the moment of expiry cause ONE refresh; many 401s on one token cause ONE refresh', async () => {
    let clock = 1_000_000;
    const http = fastHttp();
    // A slow token endpoint, so that every caller arrives while the refresh is in flight.
    api.faults.add({ endpoint: 'token', kind: 'latency', ms: 150, times: Infinity });
    const tokens = new TokenProvider({
      credentials: {
        authUrl: api.authUrl,
        clientId: api.options.clientId,
        clientSecret: api.options.clientSecret,
        audience: api.options.audience,
      },
      http,
      now: () => clock,
    });
    try {
      const first = await Promise.all(Array.from({ length: 20 }, () => tokens.getToken()));
      expect(new Set(first).size).toBe(1);
      expect(api.stats.tokenRequests).toBe(1);
      // Within lifetime - margin (3600 s - 60 s): cached.
      clock += 3_539_000;
      expect(await tokens.getToken()).toBe(first[0]);
      expect(api.stats.tokenRequests).toBe(1);
      // Past the refresh point: 25 concurrent callers, one request.
      clock += 2_000;
      const second = await Promise.all(Array.from({ length: 25 }, () => tokens.getToken()));
      expect(new Set(second).size).toBe(1);
      expect(second[0]).not.toBe(first[0]);
      expect(api.stats.tokenRequests).toBe(2);
      // 25 requests got a 401 with that token: each invalidates it and asks again; one refresh.
      const third = await Promise.all(
        Array.from({ length: 25 }, async () => {
          tokens.invalidate(second[0]!);
          return tokens.getToken();
        }),
      );
      expect(new Set(third).size).toBe(1);
      expect(third[0]).not.toBe(second[0]);
      expect(api.stats.tokenRequests).toBe(3);
      // A late 401 on the OLD token does not drop the new one.
      tokens.invalidate(second[0]!);
      expect(await tokens.getToken()).toBe(third[0]);
      expect(api.stats.tokenRequests).toBe(3);
      expect(tokens.stats.requests).toBe(3);
    } finally {
      await http.close();
    }
  });
});

describe('token request formats against the simulator', () => {
  it.each([
    ['form', 'basic'],
    ['json', 'basic'],
    ['form', 'body'],
  ])('--token-request-format %s --token-client-auth %s: one token, every event', async (format, clientAuth) => {
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE, tokenRequestFormat: format, tokenClientAuth: clientAuth });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
    expect(api.stats.tokensIssued).toBe(1);
  });
});

describe('401 on the events endpoint', () => {
  it('a token revoked mid-run: one refresh, one retry, the run succeeds exactly', async () => {
    api.faults.add({ endpoint: 'events', kind: 'revokeTokens', after: 3 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), expected, api.truth.events);
    expect(api.stats.tokenRequests).toBe(2);
    expect(countStatus(api, EVENTS, 401)).toBe(1);
    expect(api.stats.eventRequests).toBe(out.result!.extract!.pages + 1);
  });

  it('401 again after the refresh: exit 3, exactly two requests for that page (no loop), earlier pages kept', async () => {
    api.faults.add({ endpoint: 'events', kind: 'always401', after: 2 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(3);
    expect(out.message).toMatch(/401 again/);
    expect(out.message).toContain('page 3');
    expect(api.stats.eventRequests).toBe(2 + 2);
    expect(countStatus(api, EVENTS, 401)).toBe(2);
    expect(api.stats.tokenRequests).toBe(2);
    expectPrefix(await readDb(db), expected, 2 * PAGE, api.truth.events);
  });
});

describe('token endpoint failures', () => {
  it.each([
    [
      400,
      2,
      /token endpoint .* refused the token request as malformed \(HTTP 400 invalid_request: "simulated HTTP 400"\); check --token-request-format/,
    ],
    [401, 3, /token endpoint refused the client credentials \(HTTP 401 access_denied: "simulated HTTP 401"\)/],
    [403, 3, /token endpoint refused the client credentials \(HTTP 403 access_denied: "simulated HTTP 403"\)/],
  ])(
    'token endpoint answers %i: exit %i at once with its error and error_description, not retried, nothing sent to the events endpoint',
    async (code, exit, message) => {
      api.faults.add({ endpoint: 'token', kind: 'status', code, times: Infinity });
      const db = freshDb();
      const out = await extractOnce(api, db, { pageSize: PAGE });
      expect(out.exitCode, out.message).toBe(exit);
      expect(out.message).toMatch(message);
      expect(api.stats.tokenRequests).toBe(1);
      expect(api.stats.eventRequests).toBe(0);
      expectPrefix(await readDb(db), expected, 0, api.truth.events);
    },
  );

  it('a wrong client secret (a real refusal): exit 3', async () => {
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE, clientSecret: 'not-the-secret' });
    expect(out.exitCode, out.message).toBe(3);
    expect(api.stats.tokenRequests).toBe(1);
    expect(out.message).not.toContain('not-the-secret');
  });

  it('token endpoint 503 twice, then fine: retried, the run succeeds', async () => {
    api.faults.add({ endpoint: 'token', kind: 'status', code: 503, times: 2 });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expect(api.stats.tokenRequests).toBe(3);
    expectExactly(await readDb(db), expected, api.truth.events);
  });

  it('token endpoint 503 that persists: retried (maxPostAttempts = 3), then exit 4', async () => {
    api.faults.add({ endpoint: 'token', kind: 'status', code: 503, times: Infinity });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(4);
    expect(api.stats.tokenRequests).toBe(3);
    expect(api.stats.eventRequests).toBe(0);
  });

  it('the token endpoint fails at a refresh mid-run: exit 4, every page committed before stays', async () => {
    await sim({ tokenLifetimeSeconds: 1 });
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 40, times: Infinity });
    api.faults.add({ endpoint: 'token', kind: 'status', code: 503, after: 1, times: Infinity });
    const db = freshDb();
    const out = await extractOnce(api, db, { pageSize: 2 });
    expect(out.exitCode, out.message).toBe(4);
    const state = await readDb(db);
    expect(state.ids.length).toBeGreaterThan(0);
    expect(state.ids.length).toBeLessThan(expected.length);
    expectPrefix(state, expected, state.ids.length, api.truth.events);
    expect(api.stats.tokenRequests).toBe(1 + 3);
  });

  it('a token endpoint redirect is not followed: the client secret is never posted to another origin (exit 6)', async () => {
    const trap = await startTrap();
    try {
      api.faults.add({ endpoint: 'token', kind: 'redirect', url: `${trap.url}/oauth/token`, times: Infinity });
      const db = freshDb();
      const out = await extractOnce(api, db, { pageSize: PAGE });
      expect(out.exitCode, out.message).toBe(6);
      expect(trap.connections).toBe(0);
      expect(api.stats.tokenRequests).toBe(1);
    } finally {
      await trap.close();
    }
  });
});
