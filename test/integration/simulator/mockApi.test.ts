import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_EVENT_TYPES,
  expectedEvents,
  PATIENT_CREATED,
  PATIENT_CREATED_V2,
  startMockApi,
  type MockApi,
} from '../../../packages/mock-api/src/index.js';
import { eventsUrl, getPage, getToken, readAll } from './helpers.js';

const ORIGIN = 'https://study.example.org';

describe('mock API: token endpoint (docs/upstream.md "Tokens")', () => {
  let api: MockApi;
  beforeAll(async () => {
    api = await startMockApi({ patientsPerTrial: 20 });
  });
  afterAll(async () => api.close());

  const post = (body: unknown, raw?: string) =>
    fetch(`${api.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw ?? JSON.stringify(body),
    });
  const good = () => ({
    client_id: api.options.clientId,
    client_secret: api.options.clientSecret,
    audience: api.options.audience,
    grant_type: 'client_credentials',
  });

  it('grants a JWT-shaped bearer token, unique per issue', async () => {
    const a = await post(good());
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await a.json()) as Record<string, unknown>;
    expect(body['token_type']).toBe('Bearer');
    expect(body['expires_in']).toBe(3600);
    expect(body['access_token']).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const b = (await (await post(good())).json()) as Record<string, unknown>;
    expect(b['access_token']).not.toBe(body['access_token']);
    expect(api.stats.tokensIssued).toBeGreaterThanOrEqual(2);
  });

  it('400 on missing fields, bad grant type or non-JSON', async () => {
    const { client_secret: _omit, ...missing } = good();
    for (const res of [
      await post(missing),
      await post({ ...good(), grant_type: 'password' }),
      await post(undefined, 'client_id=x'),
      await post([1]),
    ]) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as Record<string, unknown>)['error']).toBe('invalid_request');
    }
  });

  it('401 on wrong id or secret, 403 on wrong audience', async () => {
    const r1 = await post({ ...good(), client_secret: 'nope' });
    expect(r1.status).toBe(401);
    expect(((await r1.json()) as Record<string, unknown>)['error']).toBe('access_denied');
    const r2 = await post({ ...good(), client_id: 'nope' });
    expect(r2.status).toBe(401);
    await r2.body?.cancel();
    const r3 = await post({ ...good(), audience: 'https://other' });
    expect(r3.status).toBe(403);
    expect(((await r3.json()) as Record<string, unknown>)['error']).toBe('access_denied');
  });
});

describe('mock API: events (docs/upstream.md "Reading the stream", "Event types and messages", "Versioning and open sets")', () => {
  let api: MockApi;
  let token: string;
  beforeAll(async () => {
    api = await startMockApi({ releaseFraction: 0.6 });
    token = await getToken(api);
  });
  afterAll(async () => api.close());

  const filter = () => ({ trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES });

  it('401 without, with an unknown, or with a malformed token', async () => {
    const url = eventsUrl(api, filter());
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: token }] as Array<Record<string, string>>) {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(401);
      await res.body?.cancel();
    }
  });

  it('400 when eventTypes or trialIds is missing, or startingAfter is unknown, or limit is bad', async () => {
    const bad = [
      `${api.baseUrl}/rpi/events?trialIds=TRIAL-001`,
      `${api.baseUrl}/rpi/events?eventTypes=${PATIENT_CREATED}`,
      eventsUrl(api, { ...filter(), startingAfter: 'no-such-id' }),
      eventsUrl(api, { ...filter(), startingAfter: api.truth.events[api.truth.events.length - 1]!.id }), // not visible yet
      `${eventsUrl(api, filter())}&limit=0`,
      `${api.baseUrl}/rpi/events?cursor=garbage!`,
    ];
    for (const url of bad) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, url).toBe(400);
      expect(((await res.json()) as Record<string, unknown>)['error']).toBe('invalid_request');
    }
  });

  it('paging with limit 7 returns exactly the expected events, in order, once', async () => {
    const expected = expectedEvents(api.truth, filter());
    expect(expected.length).toBeGreaterThan(500);
    const { events, pages } = await readAll(eventsUrl(api, { ...filter(), limit: 7 }), token);
    expect(events.map((e) => e['id'])).toEqual(expected.map((e) => e.id));
    expect(events).toEqual(expected.map((e) => e.envelope));
    expect(pages.slice(0, -1).every((p) => p.events.length === 7 && p.pagination.hasNextPage)).toBe(true);
    const last = pages[pages.length - 1]!;
    expect(last.pagination.hasNextPage).toBe(false);
    expect(last.pagination.nextPage.startsWith(`${api.baseUrl}/rpi/events?`)).toBe(true);
  });

  it('default page size 100, clamps a huge limit to 1000', async () => {
    const p = await getPage(eventsUrl(api, filter()), token);
    expect(p.events.length).toBe(100);
    const big = await getPage(eventsUrl(api, { ...filter(), limit: 5000 }), token);
    expect(big.events.length).toBe(Math.min(1000, expectedEvents(api.truth, filter()).length));
  });

  it('startingAfter starts after that event', async () => {
    const expected = expectedEvents(api.truth, filter());
    const p = await getPage(eventsUrl(api, { ...filter(), limit: 3, startingAfter: expected[10]!.id }), token);
    expect(p.events.map((e) => e['id'])).toEqual(expected.slice(11, 14).map((e) => e.id));
  });

  it('nextPage on an empty poll; after grow() the stored nextPage returns only the new events', async () => {
    const f = filter();
    const { last } = await readAll(eventsUrl(api, { ...f, limit: 50 }), token);
    const before = expectedEvents(api.truth, f).length;
    const empty = await getPage(last, token);
    expect(empty.events).toEqual([]);
    expect(empty.pagination.hasNextPage).toBe(false);
    expect(empty.pagination.nextPage).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rpi\/events\?/);
    const released = api.grow(120);
    expect(released).toBe(120);
    const after = expectedEvents(api.truth, f);
    const fresh = await readAll(empty.pagination.nextPage, token);
    expect(fresh.events.map((e) => e['id'])).toEqual(after.slice(before).map((e) => e.id));
    // An older cursor (the first stored one) still works after growth too.
    const again = await readAll(last, token);
    expect(again.events.map((e) => e['id'])).toEqual(after.slice(before).map((e) => e.id));
  });

  it('v2.patient.created only when requested; name-keyed envelopes are served and matched', async () => {
    api.grow();
    const f = filter();
    const { events } = await readAll(eventsUrl(api, { ...f, limit: 1000 }), token);
    expect(events.some((e) => e['eventType'] === PATIENT_CREATED_V2 || e['name'] === PATIENT_CREATED_V2)).toBe(false);
    const named = events.filter((e) => 'name' in e && !('eventType' in e));
    expect(named.length).toBeGreaterThan(5);
    const v2 = await readAll(eventsUrl(api, { eventTypes: [PATIENT_CREATED_V2], trialIds: f.trialIds, limit: 1000 }), token);
    expect(v2.events.length).toBe(expectedEvents(api.truth, { eventTypes: [PATIENT_CREATED_V2], trialIds: f.trialIds }).length);
    expect(v2.events.length).toBeGreaterThan(100);
    expect(v2.events.every((e) => (e['eventType'] ?? e['name']) === PATIENT_CREATED_V2)).toBe(true);
  });

  it('a cursor is bound to its filter and one trial filters correctly', async () => {
    const one = { trialIds: ['TRIAL-002'], eventTypes: [PATIENT_CREATED] };
    const { events } = await readAll(eventsUrl(api, { ...one, limit: 25 }), token);
    expect(events.map((e) => e['id'])).toEqual(expectedEvents(api.truth, one).map((e) => e.id));
    const p = await getPage(eventsUrl(api, { ...one, limit: 1 }), token);
    const res = await fetch(`${p.pagination.nextPage}&trialIds=TRIAL-001`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(400);
    await res.body?.cancel();
  });

  it('unknown paths are 404 JSON', async () => {
    const res = await fetch(`${api.baseUrl}/rpi/nothing`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as Record<string, unknown>)['error']).toBe('not_found');
  });
});

describe('mock API: token expiry (docs/upstream.md "Tokens")', () => {
  it('a token stops working after its lifetime', async () => {
    let now = 1_000_000;
    const api = await startMockApi({ patientsPerTrial: 10, tokenLifetimeSeconds: 1, now: () => now });
    try {
      const token = await getToken(api);
      const url = eventsUrl(api, { trialIds: api.truth.trialIds, eventTypes: [PATIENT_CREATED] });
      const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      await ok.body?.cancel();
      now += 1000;
      const expired = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(expired.status).toBe(401);
      expect(expired.headers.get('www-authenticate')).toContain('Bearer');
      await expired.body?.cancel();
    } finally {
      await api.close();
    }
  });

  it('expires in real time too (1 s lifetime)', async () => {
    const api = await startMockApi({ patientsPerTrial: 10, tokenLifetimeSeconds: 1 });
    try {
      const token = await getToken(api);
      const url = eventsUrl(api, { trialIds: api.truth.trialIds, eventTypes: [PATIENT_CREATED] });
      await new Promise((r) => setTimeout(r, 1100));
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      await res.body?.cancel();
    } finally {
      await api.close();
    }
  });
});

describe('mock API: site list (docs/upstream.md "Site list")', () => {
  let api: MockApi;
  beforeAll(async () => {
    api = await startMockApi({ patientsPerTrial: 20 });
  });
  afterAll(async () => api.close());
  const url = (ms = api.options.micrositeId, trial = 'TRIAL-001') => `${api.baseUrl}/microsites-api/v1/${ms}/sites/${trial}`;

  it('serves the records with an allowed Origin', async () => {
    const res = await fetch(url(), { headers: { origin: ORIGIN } });
    expect(res.status).toBe(200);
    const sites = (await res.json()) as Array<Record<string, unknown>>;
    expect(sites).toEqual(api.truth.sites['TRIAL-001']);
    expect(sites.length).toBe(4);
    expect(sites.some((s) => s['address2'] === null)).toBe(true);
    for (const s of sites) {
      expect(typeof s['latitude']).toBe('number');
      expect(String(s['siteId'])).not.toMatch(/^site-/);
    }
  });

  it('requires an allowed Origin (403)', async () => {
    for (const headers of [{}, { origin: 'https://evil.example' }] as Array<Record<string, string>>) {
      const res = await fetch(url(), { headers });
      expect(res.status).toBe(403);
      await res.body?.cancel();
    }
  });

  it('fails when Authorization is sent', async () => {
    const res = await fetch(url(), { headers: { origin: ORIGIN, authorization: 'Bearer x' } });
    expect(res.status).toBe(400);
    await res.body?.cancel();
    expect(api.stats.requestLog.some((e) => e.path.startsWith('/microsites-api/') && e.hasAuthorization && e.status === 400)).toBe(true);
  });

  it('404 for an unknown microsite or trial', async () => {
    for (const u of [url('ms-other'), url(undefined, 'TRIAL-999')]) {
      const res = await fetch(u, { headers: { origin: ORIGIN } });
      expect(res.status).toBe(404);
      await res.body?.cancel();
    }
  });
});
