import { request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { reorderedJson } from '../../../packages/mock-api/src/hostileJson.js';
import {
  badToken,
  DEFAULT_EVENT_TYPES,
  expectedEvents,
  parseFaultSpec,
  startMockApi,
  validateFaultRule,
  type FaultRule,
  type MockApi,
} from '../../../packages/mock-api/src/index.js';
import { eventsUrl, getPage, getToken, type Page } from './helpers.js';

/** A raw GET that reports what actually happened on the wire. */
function rawGet(
  url: string,
  headers: Record<string, string>,
  timeoutMs = 3000,
): Promise<{
  status?: number;
  headers?: Record<string, unknown>;
  bytes: number;
  body: string;
  outcome: 'end' | 'error' | 'aborted' | 'timeout';
  error?: string;
}> {
  return new Promise((resolve) => {
    let bytes = 0;
    const chunks: Buffer[] = [];
    let status: number | undefined;
    let resHeaders: Record<string, unknown> | undefined;
    const done = (outcome: 'end' | 'error' | 'aborted' | 'timeout', error?: string) => {
      clearTimeout(timer);
      const out = {
        bytes,
        body: Buffer.concat(chunks).toString('utf8'),
        outcome,
        ...(status === undefined ? {} : { status }),
        ...(resHeaders ? { headers: resHeaders } : {}),
      };
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

describe('mock API faults (the fault tests of docs/contracts.md)', () => {
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
    expect(page.events.map((e) => e['id'])).toEqual(
      expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES })
        .slice(0, 5)
        .map((e) => e.id),
    );
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
    expect(
      (await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherOrigin', url: 'http://127.0.0.1:9' })).pagination.nextPage,
    ).toBe(`http://127.0.0.1:9${proper.pathname}${proper.search}`);
    expect(
      (await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherScheme' })).pagination.nextPage.startsWith('https://'),
    ).toBe(true);
    expect(new URL((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'otherPort' })).pagination.nextPage).port).toBe(
      String(Number(proper.port) + 1),
    );
    expect(new URL((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'userInfo' })).pagination.nextPage).username).toBe(
      'user',
    );
    expect(
      (await variant({ endpoint: 'events', kind: 'nextPage', variant: 'relative' })).pagination.nextPage.startsWith('/rpi/events?'),
    ).toBe(true);
    const unchanged = await variant({ endpoint: 'events', kind: 'nextPage', variant: 'unchanged' });
    expect(unchanged.pagination).toEqual({ nextPage: first, hasNextPage: true });
    expect((await variant({ endpoint: 'events', kind: 'nextPage', variant: 'oversizedUrl' })).pagination.nextPage.length).toBeGreaterThan(
      100_000,
    );
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
      body: JSON.stringify({
        client_id: api.options.clientId,
        client_secret: api.options.clientSecret,
        audience: api.options.audience,
        grant_type: 'client_credentials',
      }),
    });
    expect(((await res.json()) as Record<string, unknown>)['expires_in']).toBe(2);
  });

  it('sites faults apply to the site list', async () => {
    api.faults.add({ endpoint: 'sites', kind: 'status', code: 502 });
    const r = await fetch(`${api.baseUrl}/microsites-api/v1/${api.options.micrositeId}/sites/TRIAL-001`, {
      headers: { origin: 'https://study.example.org' },
    });
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

/** A raw GET that keeps every chunk with its arrival time (ms since the request). */
function timedGet(
  url: string,
  headers: Record<string, string>,
  stopAfterMs: number,
): Promise<{ status?: number; headers?: Record<string, unknown>; chunks: Array<{ at: number; bytes: Buffer }>; ended: boolean }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const chunks: Array<{ at: number; bytes: Buffer }> = [];
    let status: number | undefined;
    let resHeaders: Record<string, unknown> | undefined;
    let finished = false;
    const finish = (ended: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ chunks, ended, ...(status === undefined ? {} : { status }), ...(resHeaders ? { headers: resHeaders } : {}) });
    };
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      status = res.statusCode;
      resHeaders = res.headers;
      res.on('data', (c: Buffer) => chunks.push({ at: Date.now() - t0, bytes: c }));
      res.on('end', () => finish(true));
      res.on('error', () => finish(false));
    });
    req.on('error', () => finish(false));
    const timer = setTimeout(() => finish(false), stopAfterMs);
    req.end();
  });
}

describe('mock API hostile inputs (fault kinds the ingest must survive)', () => {
  let api: MockApi;
  let token: string;
  let first: string;
  let clean: string;
  const auth = () => ({ authorization: `Bearer ${token}` });
  const faulted = async (rule: FaultRule, url = first): Promise<Awaited<ReturnType<typeof rawGet>>> => {
    api.faults.add(rule);
    const r = await rawGet(url, auth());
    expect(r.status).toBe(200);
    expect(r.outcome).toBe('end');
    expect(Number(r.headers?.['content-length'])).toBe(r.bytes);
    expect(api.faults.pending()).toEqual([]);
    return r;
  };
  const tokenPost = (body: Record<string, string>) =>
    fetch(`${api.authUrl}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const goodGrant = () => ({
    client_id: api.options.clientId,
    client_secret: api.options.clientSecret,
    audience: api.options.audience,
    grant_type: 'client_credentials',
  });

  beforeAll(async () => {
    api = await startMockApi({ patientsPerTrial: 60 });
    token = await getToken(api);
    first = eventsUrl(api, { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES, limit: 5 });
    clean = (await rawGet(first, auth())).body;
  });
  afterAll(async () => api.close());
  afterEach(() => api.faults.clear());

  it('loneSurrogate: the event-th event gets "note":"x\\ud800y" (6 ASCII escape characters) as its message\'s last member', async () => {
    const r = await faulted({ endpoint: 'events', kind: 'loneSurrogate', event: 2 });
    const member = ',"note":"x\\ud800y"';
    expect(member.length).toBe(18);
    expect(r.body.split(member).length).toBe(2);
    expect(r.body.replace(member, '')).toBe(clean);
    const page = JSON.parse(r.body) as Page;
    const msg = page.events[1]!['message'] as Record<string, unknown>;
    expect(Object.keys(msg).at(-1)).toBe('note');
    expect(msg['note']).toBe('x\ud800y');
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(msg['note'] as string)).toBe(true);
    // Default: the first event.
    const d = await faulted({ endpoint: 'events', kind: 'loneSurrogate' });
    expect(((JSON.parse(d.body) as Page).events[0]!['message'] as Record<string, unknown>)['note']).toBe('x\ud800y');
  });

  it('duplicateEventsKey: "events" twice, the real array first, then []', async () => {
    const r = await faulted({ endpoint: 'events', kind: 'duplicateEventsKey' });
    expect(r.body).toBe(clean.replace('],"pagination":', '],"events":[],"pagination":'));
    expect((JSON.parse(r.body) as Page).events).toEqual([]);
  });

  it('escapedKeys: \\u-escaped events, pagination, id and eventType keys, same value', async () => {
    const r = await faulted({ endpoint: 'events', kind: 'escapedKeys' });
    const expected = clean
      .replace('{"events":[', '{"\\u0065vents":[')
      .replace(',"pagination":{', ',"\\u0070agination":{')
      .replaceAll('{"id":"', '{"\\u0069d":"')
      .replaceAll('"eventType":"', '"\\u0065ventType":"');
    expect(expected).not.toBe(clean);
    expect(r.body).toBe(expected);
    expect(r.body).not.toContain('"events"');
    expect(r.body).not.toContain('"id"');
    expect(JSON.parse(r.body)).toEqual(JSON.parse(clean));
  });

  it('duplicateIdKey: the event carries "id" twice, the second "<id>-dup"', async () => {
    const events = (JSON.parse(clean) as Page).events;
    for (const event of [1, 3]) {
      const text = JSON.stringify(events[event - 1]);
      expect(clean).toContain(text);
      const r = await faulted(
        event === 1 ? { endpoint: 'events', kind: 'duplicateIdKey' } : { endpoint: 'events', kind: 'duplicateIdKey', event },
      );
      const id = String(events[event - 1]!['id']);
      expect(r.body).toBe(clean.replace(text, `${text.slice(0, -1)},"id":"${id}-dup"}`));
      expect((JSON.parse(r.body) as Page).events[event - 1]!['id']).toBe(`${id}-dup`);
    }
  });

  it("reorderedRedelivery: the previous page's last event again, keys reversed at every level, extra whitespace", async () => {
    const p1 = JSON.parse(clean) as Page;
    const second = p1.pagination.nextPage;
    const clean2 = (await rawGet(second, auth())).body;
    const r = await faulted({ endpoint: 'events', kind: 'reorderedRedelivery' }, second);
    const prev = p1.events[4]!;
    const redelivered = reorderedJson(prev);
    expect(r.body).toBe(`{"events":[${redelivered},${clean2.slice('{"events":['.length)}`);
    expect(redelivered).not.toBe(JSON.stringify(prev));
    expect(redelivered).toContain(' : ');
    const again = JSON.parse(redelivered) as Record<string, unknown>;
    expect(again).toEqual(prev);
    expect(Object.keys(again)).toEqual(Object.keys(prev).reverse());
    expect(Object.keys(again['message'] as object)).toEqual(Object.keys(prev['message'] as object).reverse());
    // Not on a first page: nothing was delivered before it.
    api.faults.add({ endpoint: 'events', kind: 'reorderedRedelivery' });
    expect((await rawGet(first, auth())).body).toBe(clean);
    expect(api.faults.pending()[0]!.seen).toBe(0);
    api.faults.clear();
  });

  it('emptyPagesForever: every request an empty page with a new ?c= nextPage, hasNextPage true, forever', async () => {
    api.faults.add({ endpoint: 'events', kind: 'emptyPagesForever' });
    expect(api.faults.pending()[0]!.remaining).toBe(Infinity);
    const shape = new RegExp(
      `^\\{"events":\\[\\],"pagination":\\{"nextPage":"${api.baseUrl.replace(/\./g, '\\.')}/rpi/events\\?c=(\\d+)","hasNextPage":true\\}\\}$`,
    );
    const seen = new Set<string>();
    let url = first;
    for (let i = 0; i < 5; i++) {
      const r = await rawGet(url, auth());
      expect(r.status).toBe(200);
      const m = shape.exec(r.body);
      expect(m, r.body).not.toBeNull();
      seen.add(m![1]!);
      url = (JSON.parse(r.body) as Page).pagination.nextPage;
    }
    expect(seen.size).toBe(5);
    expect(shape.test((await rawGet(first, auth())).body)).toBe(true);
    api.faults.clear();
    expect((await rawGet(first, auth())).body).toBe(clean);
    // Its URLs stay empty pages after the rule is gone.
    expect(shape.test((await rawGet(url, auth())).body)).toBe(true);
    expect((await rawGet(url, {})).status).toBe(401);
  });

  it('nextPage longCycle: the page points to A, and A → B → C → A all empty with hasNextPage true', async () => {
    const p1 = JSON.parse(clean) as Page;
    const r = await faulted({ endpoint: 'events', kind: 'nextPage', variant: 'longCycle' });
    const a = (JSON.parse(r.body) as Page).pagination.nextPage;
    expect(r.body).toBe(
      clean.replace(
        `"nextPage":"${p1.pagination.nextPage}","hasNextPage":${String(p1.pagination.hasNextPage)}`,
        `"nextPage":"${a}","hasNextPage":true`,
      ),
    );
    expect(a.startsWith(`${api.baseUrl}/rpi/events?cursor=`)).toBe(true);
    const urls = [a];
    for (let i = 0; i < 3; i++) {
      const page = await rawGet(urls[i]!, auth());
      const next = (JSON.parse(page.body) as Page).pagination.nextPage;
      expect(page.body).toBe(`{"events":[],"pagination":{"nextPage":"${next}","hasNextPage":true}}`);
      urls.push(next);
    }
    expect(new Set(urls.slice(0, 3)).size).toBe(3);
    expect(urls[3]).toBe(a);
    // length=5 through the flag syntax.
    api.faults.add(parseFaultSpec('events:nextPage=longCycle:length=5'));
    let url = (JSON.parse((await rawGet(first, auth())).body) as Page).pagination.nextPage;
    const cycle: string[] = [];
    while (!cycle.includes(url) && cycle.length < 10) {
      cycle.push(url);
      url = (JSON.parse((await rawGet(url, auth())).body) as Page).pagination.nextPage;
    }
    expect(cycle.length).toBe(5);
    expect(url).toBe(cycle[0]);
  });

  it('padEvents: a "pad" member in every message makes the page exactly `bytes` bytes', async () => {
    const r = await faulted({ endpoint: 'events', kind: 'padEvents', bytes: 200_000 });
    expect(r.bytes).toBe(200_000);
    expect(Buffer.byteLength(r.body)).toBe(200_000);
    expect(r.body.replace(/,"pad":"x*"/g, '')).toBe(clean);
    const page = JSON.parse(r.body) as Page;
    expect(page.events.map((e) => e['id'])).toEqual((JSON.parse(clean) as Page).events.map((e) => e['id']));
    for (const e of page.events) {
      const msg = e['message'] as Record<string, unknown>;
      expect(Object.keys(msg).at(-1)).toBe('pad');
      expect(msg['pad']).toMatch(/^x{39000,}$/);
    }
  });

  it('padEvents serves 30 pages of 20 MB quickly', async () => {
    api.faults.add(parseFaultSpec('events:padEvents=20000000:times=30'));
    const t0 = Date.now();
    const filter = { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES };
    expect(expectedEvents(api.truth, filter).length).toBeGreaterThan(30 * 20);
    let url = eventsUrl(api, { ...filter, limit: 20 });
    for (let i = 0; i < 30; i++) {
      const res = await fetch(url, { headers: auth() });
      expect(res.headers.get('content-length')).toBe('20000000');
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.length).toBe(20_000_000);
      expect(body.subarray(0, 11).toString()).toBe('{"events":[');
      const tail = body.subarray(body.length - 4000).toString();
      url = /"nextPage":"([^"]+)"/.exec(tail)![1]!;
    }
    expect(api.faults.pending()).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(20_000);
  }, 60_000);

  it('drip: the clean body with its full Content-Length, one byte every `ms` ms', async () => {
    const cleanRefusal = await rawGet(first, {});
    expect(cleanRefusal.status).toBe(401);
    api.faults.add(parseFaultSpec('events:drip=15'));
    const r = await timedGet(first, {}, 10_000);
    expect(r.ended).toBe(true);
    expect(r.status).toBe(401);
    expect(Number(r.headers?.['content-length'])).toBe(cleanRefusal.bytes);
    expect(Buffer.concat(r.chunks.map((c) => c.bytes)).toString()).toBe(cleanRefusal.body);
    // One byte per write; a loaded client may read two writes at once now and then.
    expect(r.chunks.length).toBeGreaterThanOrEqual(Math.floor(cleanRefusal.bytes * 0.8));
    const gaps = r.chunks
      .slice(1)
      .map((c, i) => c.at - r.chunks[i]!.at)
      .sort((x, y) => x - y);
    expect(gaps[Math.floor(gaps.length / 2)]).toBeGreaterThanOrEqual(10);
    expect(r.chunks.at(-1)!.at).toBeGreaterThanOrEqual((cleanRefusal.bytes - 1) * 15 - 50);
    // A page: the bytes received so far are the clean page's first bytes.
    api.faults.add({ endpoint: 'events', kind: 'drip', ms: 10 });
    const p = await timedGet(first, auth(), 300);
    expect(p.ended).toBe(false);
    expect(p.status).toBe(200);
    expect(Number(p.headers?.['content-length'])).toBe(Buffer.byteLength(clean));
    const got = Buffer.concat(p.chunks.map((c) => c.bytes)).toString();
    expect(got.length).toBeGreaterThan(5);
    expect(got.length).toBeLessThan(40);
    expect(clean.startsWith(got)).toBe(true);
    expect(api.faults.pending()).toEqual([]);
    expect(api.faults.fired().at(-1)).toMatchObject({ endpoint: 'events', kind: 'drip' });
    expect(validateFaultRule({ endpoint: 'events', kind: 'drip' }).ms).toBe(5000);
  });

  it('token echoSecret: 400 whose error text carries the posted secret', async () => {
    api.faults.add(parseFaultSpec('token:echoSecret'));
    const res = await tokenPost({ ...goodGrant(), client_id: 'the-client', client_secret: 'S3cr3t "quoted"' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe(
      '{"error":"invalid_client: S3cr3t \\"quoted\\"","error_description":"client the-client with secret S3cr3t \\"quoted\\" refused"}',
    );
    expect(api.faults.pending()).toEqual([]);
  });

  it('token badToken: crlf, nonAscii, tooLong access tokens in a 200 grant', async () => {
    const grant = async (variant: string): Promise<{ text: string; bytes: Buffer; token: string }> => {
      api.faults.add(parseFaultSpec(`token:badToken=${variant}`));
      const res = await tokenPost(goodGrant());
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const bytes = Buffer.from(await res.arrayBuffer());
      const text = bytes.toString('utf8');
      const body = JSON.parse(text) as Record<string, unknown>;
      expect(body['token_type']).toBe('Bearer');
      expect(body['expires_in']).toBe(api.options.tokenLifetimeSeconds);
      return { text, bytes, token: body['access_token'] as string };
    };
    const crlf = await grant('crlf');
    expect(crlf.token).toContain('\r\n');
    expect(crlf.text).toBe(`{"access_token":${JSON.stringify(badToken('crlf'))},"expires_in":3600,"token_type":"Bearer"}`);
    expect(crlf.text).toContain('\\r\\n');
    const nonAscii = await grant('nonAscii');
    expect(nonAscii.token).toContain('é');
    expect(nonAscii.bytes.includes(Buffer.from([0xc3, 0xa9]))).toBe(true);
    const tooLong = await grant('tooLong');
    expect(tooLong.token.length).toBe(102_400);
    expect(tooLong.token).toMatch(/^[\w.-]+$/);
    // Not a grant when the credentials are wrong: the rule waits for a good request.
    api.faults.add({ endpoint: 'token', kind: 'badToken', variant: 'crlf' });
    const refused = await tokenPost({ ...goodGrant(), client_secret: 'wrong' });
    expect(refused.status).toBe(401);
    await refused.body?.cancel();
    expect((await grant('crlf')).token).toContain('\r\n');
    api.faults.clear();
  });

  it('sites loneSurrogate: the first record\'s displayName is "x\\ud800y" escape text', async () => {
    const url = `${api.baseUrl}/microsites-api/v1/${api.options.micrositeId}/sites/TRIAL-001`;
    const headers = { origin: 'https://study.example.org' };
    const cleanSites = await rawGet(url, headers);
    const records = JSON.parse(cleanSites.body) as Array<Record<string, unknown>>;
    api.faults.add(parseFaultSpec('sites:loneSurrogate'));
    const r = await rawGet(url, headers);
    expect(r.status).toBe(200);
    expect(r.headers?.['access-control-allow-origin']).toBe('https://study.example.org');
    expect(r.body).toBe(
      cleanSites.body.replace(`"displayName":${JSON.stringify(records[0]!['displayName'])}`, '"displayName":"x\\ud800y"'),
    );
    expect(r.body).not.toBe(cleanSites.body);
    expect((JSON.parse(r.body) as Array<Record<string, unknown>>)[1]).toEqual(records[1]);
    expect((await rawGet(url, headers)).body).toBe(cleanSites.body);
  });
});
