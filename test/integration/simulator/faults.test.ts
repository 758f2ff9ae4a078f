import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_TYPES, expectedEvents, startMockApi, type MockApi } from '../../../src/simulator/index.js';
import { eventsUrl, getPage, getToken, type Page } from './helpers.js';

/** A raw GET that reports what actually happened on the wire. */
function rawGet(url: string, headers: Record<string, string>, timeoutMs = 3000): Promise<{ status?: number; headers?: Record<string, unknown>; bytes: number; body: string; outcome: 'end' | 'error' | 'aborted' | 'timeout'; error?: string }> {
  return new Promise((resolve) => {
    let bytes = 0;
    const chunks: Buffer[] = [];
    let status: number | undefined;
    let resHeaders: Record<string, unknown> | undefined;
    const done = (outcome: 'end' | 'error' | 'aborted' | 'timeout', error?: string) => {
      clearTimeout(timer);
      const out = { bytes, body: Buffer.concat(chunks).toString('utf8'), outcome, ...(status === undefined ? {} : { status }), ...(resHeaders ? { headers: resHeaders } : {}) };
      resolve(error === undefined ? out : { ...out, error });
    };
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      status = res.statusCode;
      resHeaders = res.headers;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        chunks.push(c);
      });
      res.on('end', () => done('end'));
      res.on('aborted', () => done('aborted'));
      res.on('error', (e) => done('error', e.message));
    });
    req.on('error', (e) => done('error', e.message));
    const timer = setTimeout(() => {
      req.destroy();
      done('timeout');
    }, timeoutMs);
    req.end();
  });
}

describe('mock API faults (RELIABILITY.md)', () => {
  let api: MockApi;
  let token: string;
  let first: string;
  const auth = () => ({ authorization: `Bearer ${token}` });
  beforeAll(async () => {
    api = await startMockApi({ patientsPerTrial: 60 });
    token = await getToken(api);
    first = eventsUrl(api, { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES, limit: 5 });
  });
  afterAll(async () => api.close());

  it('503 burst with Retry-After, then the clean page', async () => {
    api.faults.add({ endpoint: 'events', kind: 'status', code: 503, times: 2, retryAfter: 3 });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(first, { headers: auth() });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('3');
      await res.body?.cancel();
    }
    const page = await getPage(first, token);
    expect(page.events.map((e) => e['id'])).toEqual(expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES }).slice(0, 5).map((e) => e.id));
    expect(api.faults.pending()).toEqual([]);
  });

  it('429 with an HTTP-date Retry-After', async () => {
    const date = 'Wed, 21 Oct 2026 07:28:00 GMT';
    api.faults.add({ endpoint: 'events', kind: 'status', code: 429, retryAfter: date });
    const res = await fetch(first, { headers: auth() });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe(date);
    await res.body?.cancel();
  });

  it('truncated body: Content-Length promises more than is sent, then the connection ends', async () => {
    const clean = await rawGet(first, auth());
    expect(clean.outcome).toBe('end');
    api.faults.add({ endpoint: 'events', kind: 'truncated', at: 40 });
    const r = await rawGet(first, auth());
    expect(r.status).toBe(200);
    expect(Number(r.headers?.['content-length'])).toBe(clean.bytes);
    expect(r.bytes).toBe(40);
    expect(r.outcome).not.toBe('timeout');
    expect(() => JSON.parse(r.body)).toThrow();
    const again = await rawGet(first, auth());
    expect(again.body).toBe(clean.body);
  });

  it('truncated chunked body ends without the final chunk', async () => {
    api.faults.add({ endpoint: 'events', kind: 'truncated', at: 30, chunked: true });
    const r = await rawGet(first, auth());
    expect(r.headers?.['transfer-encoding']).toBe('chunked');
    expect(r.bytes).toBe(30);
    expect(r.outcome === 'aborted' || r.outcome === 'error').toBe(true);
  });

  it('reset mid body: part of the body, then the socket is destroyed', async () => {
    api.faults.add({ endpoint: 'events', kind: 'resetMidBody', at: 25 });
    const r = await rawGet(first, auth());
    expect(r.status).toBe(200);
    expect(r.bytes).toBe(25);
    expect(r.outcome === 'aborted' || r.outcome === 'error').toBe(true);
    if (r.outcome === 'error') expect(r.error).toMatch(/ECONNRESET|aborted/);
    await expect(fetch(first, { headers: auth() }).then((x) => x.json())).resolves.toHaveProperty('events');
  });

  it('headers never come and a stalled body never ends (until the client gives up)', async () => {
    api.faults.add({ endpoint: 'events', kind: 'headersNever' });
    const h = await rawGet(first, auth(), 300);
    expect(h.outcome).toBe('timeout');
    expect(h.status).toBeUndefined();
    api.faults.add({ endpoint: 'events', kind: 'bodyStall', at: 10 });
    const b = await rawGet(first, auth(), 300);
    expect(b.outcome).toBe('timeout');
    expect(b.status).toBe(200);
    expect(b.bytes).toBe(10);
  });

  it('latency delays the answer', async () => {
    api.faults.add({ endpoint: 'events', kind: 'latency', ms: 250 });
    const t0 = Date.now();
    const page = await getPage(first, token);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
    expect(page.events.length).toBe(5);
  });

  it('non-JSON and HTML bodies with status 200', async () => {
    api.faults.add({ endpoint: 'events', kind: 'nonJson' });
    const a = await fetch(first, { headers: auth() });
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toContain('application/json');
    await expect(a.json()).rejects.toThrow();
    api.faults.add({ endpoint: 'events', kind: 'html200' });
    const b = await fetch(first, { headers: auth() });
    expect(b.headers.get('content-type')).toContain('text/html');
    expect(await b.text()).toContain('<html>');
  });

  it('oversized body has the announced size', async () => {
    api.faults.add({ endpoint: 'events', kind: 'oversized', size: 3_000_000 });
    const r = await rawGet(first, auth(), 10_000);
    expect(r.outcome).toBe('end');
    expect(r.bytes).toBe(3_000_000);
    expect(Number(r.headers?.['content-length'])).toBe(3_000_000);
    expect((JSON.parse(r.body) as Page).events.length).toBeGreaterThan(1000);
  });

  it('redirect to another origin', async () => {
    api.faults.add({ endpoint: 'events', kind: 'redirect', url: 'http://127.0.0.1:9/trap' });
    const res = await fetch(first, { headers: auth(), redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://127.0.0.1:9/trap');
  });

  it('contract breaks: no pagination, events not an array, event without id', async () => {
    api.faults.add({ endpoint: 'events', kind: 'missingPagination' });
    expect(await (await fetch(first, { headers: auth() })).json()).not.toHaveProperty('pagination');
    api.faults.add({ endpoint: 'events', kind: 'eventsNotArray' });
    const b = (await (await fetch(first, { headers: auth() })).json()) as Record<string, unknown>;
    expect(Array.isArray(b['events'])).toBe(false);
    api.faults.add({ endpoint: 'events', kind: 'eventWithoutId' });
    const c = (await (await fetch(first, { headers: auth() })).json()) as Page;
    expect(c.events.filter((e) => !('id' in e)).length).toBe(1);
    expect(c.events.length).toBe(5);
  });

  it('duplicates within and across pages, and the same id with another payload', async () => {
    const p1 = await getPage(first, token);
    api.faults.add({ endpoint: 'events', kind: 'duplicateIdWithinPage' });
    const a = await getPage(first, token);
    expect(a.events.length).toBe(6);
    expect(new Set(a.events.map((e) => e['id'])).size).toBe(5);
    api.faults.add({ endpoint: 'events', kind: 'duplicateIdAcrossPages' });
    const b = await getPage(p1.pagination.nextPage, token);
    expect(b.events[0]).toEqual(p1.events[4]);
    api.faults.add({ endpoint: 'events', kind: 'sameIdOtherPayload' });
    const c = await getPage(p1.pagination.nextPage, token);
    expect(c.events[0]!['id']).toBe(p1.events[4]!['id']);
    expect(c.events[0]!['message']).not.toEqual(p1.events[4]!['message']);
    const clean = await getPage(p1.pagination.nextPage, token);
    expect(clean.events.map((e) => e['id'])).not.toContain(p1.events[4]!['id']);
  });

  it('nextPage corruptions', async () => {
    const clean = await getPage(first, token);
    const proper = new URL(clean.pagination.nextPage);
    const variant = async (rule: Parameters<MockApi['faults']['add']>[0]): Promise<Page> => {
      api.faults.add(rule);
      return getPage(first, token);
    };
    expect((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherOrigin', url: 'http://127.0.0.1:9' })).pagination.nextPage).toBe(
      `http://127.0.0.1:9${proper.pathname}${proper.search}`,
    );
    expect((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherScheme' })).pagination.nextPage.startsWith('https://')).toBe(true);
    expect(new URL((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherPort' })).pagination.nextPage).port).toBe(String(Number(proper.port) + 1));
    expect(new URL((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'userInfo' })).pagination.nextPage).username).toBe('user');
    expect((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'relative' })).pagination.nextPage.startsWith('/rpi/events?')).toBe(true);
    const unchanged = await variant({ endpoint: 'events', kind: 'nextPage', variant: 'unchanged' });
    expect(unchanged.pagination).toEqual({ nextPage: first, hasNextPage: true });
    expect((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'oversizedUrl' })).pagination.nextPage.length).toBeGreaterThan(100_000);
    // cycle: page 2 points back to the page-1 URL.
    await getPage(first, token);
    api.faults.add({ endpoint: 'events', kind: 'nextPage', variant: 'cycle' });
    const p2 = await getPage(clean.pagination.nextPage, token);
    expect(p2.pagination.nextPage).toBe(first);
  });

  it('revokeTokens: the next events request is 401, a fresh token works', async () => {
    api.faults.add({ endpoint: 'events', kind: 'revokeTokens' });
    const r = await fetch(first, { headers: auth() });
    expect(r.status).toBe(401);
    await r.body?.cancel();
    const r2 = await fetch(first, { headers: auth() });
    expect(r2.status).toBe(401);
    await r2.body?.cancel();
    token = await getToken(api);
    expect((await getPage(first, token)).events.length).toBe(5);
  });

  it('always401 rejects even fresh tokens until cleared', async () => {
    api.faults.add({ endpoint: 'events', kind: 'always401' });
    for (let i = 0; i < 2; i++) {
      token = await getToken(api);
      const r = await fetch(first, { headers: auth() });
      expect(r.status).toBe(401);
      await r.body?.cancel();
    }
    api.faults.clear();
    expect((await getPage(first, token)).events.length).toBe(5);
  });

  it('token endpoint failures and runtime token lifetime', async () => {
    api.faults.add({ endpoint: 'token', kind: 'status', code: 503, times: 2 });
    await expect(getToken(api)).rejects.toThrow('503');
    await expect(getToken(api)).rejects.toThrow('503');
    api.faults.add({ endpoint: 'token', kind: 'status', code: 400 });
    await expect(getToken(api)).rejects.toThrow('400');
    api.faults.add({ endpoint: 'token', kind: 'tokenLifetime', seconds: 2 });
    const res = await fetch(`${api.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: api.options.clientId, client_secret: api.options.clientSecret, audience: api.options.audience, grant_type: 'client_credentials' }),
    });
    expect(((await res.json()) as Record<string, unknown>)['expires_in']).toBe(2);
  });

  it('sites faults apply to the site list', async () => {
    api.faults.add({ endpoint: 'sites', kind: 'status', code: 502 });
    const r = await fetch(`${api.baseUrl}/microsites-api/v1/${api.options.micrositeId}/sites/TRIAL-001`, { headers: { origin: 'https://study.example.org' } });
    expect(r.status).toBe(502);
    await r.body?.cancel();
  });

  it('close() ends hanging requests promptly', async () => {
    const other = await startMockApi({ patientsPerTrial: 5 });
    const t = await getToken(other);
    other.faults.add({ endpoint: 'events', kind: 'headersNever', times: 3 });
    const url = eventsUrl(other, { trialIds: other.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES });
    const pending = [rawGet(url, { authorization: `Bearer ${t}` }, 5000), rawGet(url, { authorization: `Bearer ${t}` }, 5000)];
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await other.close();
    const results = await Promise.all(pending);
    expect(Date.now() - t0).toBeLessThan(2000);
    for (const r of results) expect(r.outcome).toBe('error');
  });
});
